"""The researcher's preview of a study's task, opened from the study page: every kind's task page with a
sample item, marked as a preview with the way back, recording nothing and showing no gold answer; another
researcher's study is not theirs to preview."""

from __future__ import annotations

import importlib
import json
import re

import pytest
from django.test import Client

from annotate.models import Assignment, EntryBinding, Response, Study, Worker
from annotate.tasks import TASK_KINDS, get_kind
from tests.annotate.kinds.forced_choice.test_work import SECRET_KEYS, running_study

pytestmark = pytest.mark.django_db

BANNER = "Preview — answers are not stored."


def study_of(kind_name: str, owner) -> Study:
    """A running study of ``kind_name``: a forced-choice kind over two small model runs, any other kind
    its folder's demo study (whose texts include gold items)."""
    if get_kind(kind_name).family:
        return running_study(owner, kind_name, n_texts=2)
    return importlib.import_module(f"annotate.kinds.{kind_name}.demo").seed_demo(owner, 6)[0]


def embedded_task(html: str) -> dict:
    return json.loads(
        re.search(r'<script id="hatlab-task" type="application/json">(.*?)</script>', html, re.S)[1]
    )


def counts() -> tuple[int, int, int, int]:
    return (
        Worker.objects.count(),
        Assignment.objects.count(),
        Response.objects.count(),
        EntryBinding.objects.count(),
    )


@pytest.mark.parametrize("kind_name", list(TASK_KINDS))
def test_the_study_page_opens_a_preview_that_stores_nothing_and_leads_back(kind_name, researcher):
    study = study_of(kind_name, researcher)
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    detail = client.get(f"/studies/{study.uid}/").content.decode()
    link = re.search(r'<a class="button" href="([^"]+)" id="study-preview-link"', detail)
    assert link is not None, "the study page has no preview link"
    before = counts()
    page = client.get(link[1])
    assert page.status_code == 200
    html = page.content.decode()
    assert BANNER in html
    assert re.search(rf'href="/studies/{study.uid}/" id="preview-back"', html)
    task = embedded_task(html)
    assert task["sample"]["item"]["kind"] == kind_name and task["sample"]["item"]["payload"]
    shown = json.dumps(task)
    assert "gold" not in shown.lower() and "page_token" not in shown
    assert not any(f'"{key}"' in shown for key in SECRET_KEYS if key != "answer")
    assert counts() == before, "the preview recorded a worker, assignment, response or seat"


def test_the_preview_from_the_crowd_page_leads_back_there_and_nowhere_else(study, researcher):
    client = Client()
    client.force_login(researcher)
    base = f"/studies/{study.uid}/crowd/preview/"
    crowd = client.get(f"/studies/{study.uid}/crowd/").content.decode()
    assert f'href="{base}?from=crowd"' in crowd
    assert (
        f'href="/studies/{study.uid}/crowd/" id="preview-back"'
        in client.get(f"{base}?from=crowd").content.decode()
    )
    forged = client.get(f"{base}?from=https://evil.example/").content.decode()
    assert "evil.example" not in forged.split('id="hatlab-task"')[0]
    assert f'href="/studies/{study.uid}/" id="preview-back"' in forged


def test_another_researcher_cannot_preview_a_study_and_a_worker_gets_no_banner(
    study, researcher, other_researcher, annotator_user
):
    stranger = Client()
    stranger.force_login(other_researcher)
    assert stranger.get(f"/studies/{study.uid}/crowd/preview/").status_code == 404
    assert f"/studies/{study.uid}/crowd/preview/" not in stranger.get("/studies/").content.decode()
    annotator = Client()
    annotator.force_login(annotator_user)
    assert annotator.get(f"/studies/{study.uid}/crowd/preview/").status_code == 403
    assert BANNER not in Client().get(f"/w/{study.uid}/").content.decode()
