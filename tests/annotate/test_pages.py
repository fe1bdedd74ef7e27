"""Pages: sign-in, datasets, study form and progress, the annotator entry and done pages, the demo."""

from __future__ import annotations

import io
import re

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client, RequestFactory
from django.urls import reverse

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.handout.workers import WORKERS_COOKIE, session_workers
from annotate.models import Dataset, Item, Study, Worker
from annotate.tasks import TASK_KINDS
from tests.annotate.conftest import PASSWORD, make_dataset, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def test_sign_in_and_out(researcher):
    client = Client()
    assert client.get(reverse("login")).status_code == 200
    response = client.post(reverse("login"), {"username": researcher.username, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    home = client.get(reverse("home")).content.decode()
    assert "Sign out" in home and reverse("study-list") in home
    assert client.post(reverse("logout")).status_code == 302
    assert "Sign in" in client.get(reverse("home")).content.decode()


def test_dataset_import_page(browser, researcher):
    assert browser.get(reverse("dataset-list")).status_code == 200
    upload = SimpleUploadedFile("t.csv", b"id,text,label\na,<script>alert(1)</script> nice,pos\nb,meh,neg\n")
    response = browser.post(reverse("dataset-list"), {"name": "web", "file": upload})
    dataset = Dataset.objects.get(name="web", owner=researcher)
    assert response.status_code == 302 and response["Location"] == reverse(
        "dataset-detail", args=[dataset.pk]
    )
    page = browser.get(response["Location"]).content.decode()
    assert "Imported 2 documents" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page


def test_dataset_import_page_reports_the_line(browser):
    upload = SimpleUploadedFile(
        "t.jsonl", b'{"id": "a", "text": "ok", "label": "p"}\n{"id": "b", "label": "p"}\n'
    )
    page = browser.post(reverse("dataset-list"), {"name": "broken", "file": upload})
    assert page.status_code == 400  # the form again, with what was wrong
    assert "line 2, field &#x27;text&#x27;: missing" in page.content.decode()
    assert not Dataset.objects.filter(name="broken").exists()


def test_study_form_creates_a_draft(browser, dataset):
    form = browser.get(reverse("study-create") + f"?dataset={dataset.pk}")
    assert form.status_code == 200 and "read_first" in form.content.decode()
    data = {
        "name": "web study",
        "dataset": dataset.pk,
        "mode": "free",
        "labels": "good, bad",
        "annotators_per_item": 2,
        "instructions": "Look <b>closely</b>",
        "time_limit_min": 10,
        "provider": "local",
        "max_items_per_worker": "",
    }
    response = browser.post(reverse("study-create"), data)
    study = Study.objects.get(name="web study")
    assert response.status_code == 302 and response["Location"] == reverse("study-detail", args=[study.uid])
    assert study.config["mode"] == "free" and study.config["labels"] == ["good", "bad"]
    assert study.config["undecided_label"] is None
    assert (study.annotators_per_item, study.time_limit_s, study.status) == (2, 600, "draft")


def test_study_form_shows_schema_errors(browser, dataset):
    data = {
        "name": "bad",
        "dataset": dataset.pk,
        "mode": "read_first",
        "labels": "only",
        "annotators_per_item": 3,
        "time_limit_min": 30,
        "provider": "local",
    }
    page = browser.post(reverse("study-create"), data)
    assert page.status_code == 200 and "errorlist" in page.content.decode()
    assert not Study.objects.filter(name="bad").exists()


def test_study_page_progress_actions_and_invites(browser, researcher, dataset):
    study = make_study(researcher, dataset, start=False, name="page study")
    page = browser.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert "Start" in page and "0 of 0 items done" in " ".join(re.sub(r"<[^>]+>", "", page).split())
    started = browser.post(reverse("study-action", args=[study.uid, "start"]), follow=True)
    assert "6 items created" in started.content.decode()
    assert Item.objects.filter(study=study).count() == 6
    page = browser.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert '<progress class="bar" max="6" value="0"' in page
    assert "Pause" in page and reverse("study-export", args=[study.uid, "items", "csv"]) in page
    links = browser.post(
        reverse("study-invites", args=[study.uid]), {"count": 2}, follow=True
    ).content.decode()
    found = re.findall(r"http://testserver/w/[^<\s]+\?invite=[^<\s]+", links)
    assert len(found) == 2
    assert Client().get(found[0].replace("&amp;", "&")).status_code == 200
    unconfirmed = browser.post(reverse("study-action", args=[study.uid, "finish"]))
    assert unconfirmed["Location"] == reverse("study-finish", args=[study.uid])  # it asks first
    finished = browser.post(
        reverse("study-action", args=[study.uid, "finish"]), {"confirmed": "1"}, follow=True
    )
    assert "Study finished" in finished.content.decode()
    again = browser.post(reverse("study-action", args=[study.uid, "start"]), follow=True)
    assert "cannot start a finished study" in again.content.decode()


def test_entry_page_serves_the_task_and_remembers_the_worker(study):
    client = Client()
    page = client.post(invite_path(study, make_invite(study, "alice")), follow=True)
    assert page.status_code == 200
    assert [t.name for t in page.templates][0] == "annotate/work/_task_base.html"
    assert "hatlab/kinds/highlight.js" in page.content.decode()
    assert page.context["task_json"]["study"] == str(study.uid)
    worker = Worker.objects.get(provider="local", external_id="invite:alice")
    cookie = client.cookies[WORKERS_COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == settings.SESSION_COOKIE_SAMESITE
    assert session_workers(RequestFactory().get("/", HTTP_COOKIE=f"{WORKERS_COOKIE}={cookie.value}")) == {
        str(study.uid): worker.pk
    }
    # the signed cookie alone is enough afterwards; an edited one names nobody
    assert client.get(reverse("work-entry", args=[study.uid])).context["task_json"]["kind"] == "highlight"
    client.cookies[WORKERS_COOKIE] = cookie.value.replace(":", "x:", 1)
    assert "hatlab-task" not in client.get(reverse("work-entry", args=[study.uid])).content.decode()


def test_entry_page_without_identity_shows_instructions_only(study):
    Study.objects.filter(pk=study.pk).update(instructions="Read <b>carefully</b>.")
    page = Client().get(reverse("work-entry", args=[study.uid]))
    html = page.content.decode()
    assert page.status_code == 200 and "hatlab-task" not in html
    assert "Read &lt;b&gt;carefully&lt;/b&gt;." in html
    forged = Client().get(reverse("work-entry", args=[study.uid]) + "?invite=forged:token")
    assert "not valid for this study" in forged.content.decode()
    other = make_study(study.owner, study.dataset, name="other")
    foreign = Client().get(reverse("work-entry", args=[study.uid]) + "?invite=" + make_invite(other))
    assert foreign.status_code == 200 and "hatlab-task" not in foreign.content.decode()
    assert not Worker.objects.exists()


def test_expired_invites_are_refused(study):
    Study.objects.filter(pk=study.pk).update(provider_config={"invite_max_age_s": 0})
    study.refresh_from_db()
    page = Client().post(invite_path(study, make_invite(study)), follow=True)
    assert "hatlab-task" not in page.content.decode()


def test_accounts_and_open_enrollment(study, annotator_user):
    client = Client()
    client.force_login(annotator_user)
    # An invite-only study: a signed-in account needs an invite too; its plain link shows the preview.
    plain = client.get(reverse("work-entry", args=[study.uid]))
    assert plain.status_code == 200 and not Worker.objects.filter(user=annotator_user).exists()
    assert WORKERS_COOKIE not in plain.cookies
    Study.objects.filter(pk=study.pk).update(provider_config={"open_enrollment": True})
    assert client.get(reverse("work-entry", args=[study.uid])).status_code == 200
    assert Worker.objects.get(user=annotator_user).external_id == f"user:{annotator_user.pk}"
    visitor = Client()
    visitor.get(reverse("work-entry", args=[study.uid]))
    visitor.get(reverse("work-entry", args=[study.uid]))
    anonymous = Worker.objects.filter(external_id__startswith="anon:")
    assert anonymous.count() == 1  # the same visitor keeps one identity


def test_blocked_paused_and_finished(study):
    client = Client()
    client.post(invite_path(study, make_invite(study, "bob")), follow=True)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.PAUSED)
    paused = client.get(reverse("work-entry", args=[study.uid]))
    assert "paused" in paused.content.decode()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
    finished = client.get(reverse("work-entry", args=[study.uid]))
    assert finished.status_code == 302 and finished["Location"] == reverse("work-done", args=[study.uid])
    done = client.get(finished["Location"]).content.decode()
    # bob answered nothing: the finished study gives him no completion, and says so
    assert "This study is closed." in done and 'data-end="closed"' in done
    assert (
        "You have answered 0 of " in done and "This study has ended, so there is no completion code." in done
    )
    assert "Thank you! You have finished" not in done
    Worker.objects.filter(external_id="invite:bob").update(status=Worker.Status.BLOCKED)
    assert client.get(reverse("work-entry", args=[study.uid])).status_code == 403
    assert "no work in this study" in Client().get(reverse("work-done", args=[study.uid])).content.decode()


def test_seed_demo(monkeypatch):
    monkeypatch.setenv("HATLAB_DEMO_PASSWORD", "another-demo-password")
    out = io.StringIO()
    call_command("seed_demo", "--reviews", "12", stdout=out)
    text = out.getvalue()
    researcher = User.objects.get(username="researcher")
    assert researcher.check_password("another-demo-password")
    assert researcher.groups.filter(name="researcher").exists()
    assert User.objects.get(username="admin").is_superuser
    # every registered kind has exactly one running demo study
    assert sorted(Study.objects.values_list("kind", flat=True)) == sorted(TASK_KINDS)
    assert not Study.objects.exclude(status=Study.Status.RUNNING).exists()
    study = Study.objects.get(owner=researcher, kind="highlight")
    assert study.status == Study.Status.RUNNING and study.items.count() == 12
    assert study.items.filter(is_gold=True).count() == 2
    assert f"/w/{study.uid}/" in text and text.count("?invite=") == 3 and "another-demo-password" not in text
    datasets = Dataset.objects.count()
    call_command("seed_demo", "--reviews", "12", stdout=io.StringIO())
    assert Study.objects.count() == len(TASK_KINDS) and Dataset.objects.count() == datasets
    # the demo study is open to anyone with the link
    assert "hatlab-task" in Client().get(f"/w/{study.uid}/").content.decode()


def test_api_docs_and_schema_are_for_researchers(researcher, annotator_user):
    anonymous = Client()
    assert anonymous.get(reverse("api-docs"))["Location"].startswith(reverse("login"))
    assert anonymous.get(reverse("api-schema")).status_code in (401, 403)
    annotator = Client()
    annotator.force_login(annotator_user)
    assert annotator.get(reverse("api-docs")).status_code == 403
    assert annotator.get(reverse("api-schema")).status_code == 403
    owner = Client()
    owner.force_login(researcher)
    assert owner.get(reverse("api-docs")).status_code == 200
    assert "/api/work/{study_uid}/next/" in owner.get(reverse("api-schema")).content.decode()


def test_dataset_page_pagination(browser, researcher):
    dataset = make_dataset(researcher, n=60, name="big")
    page = browser.get(reverse("dataset-detail", args=[dataset.pk]) + "?page=2").content.decode()
    assert "Page 2 of 2" in page and "demo-0060" in page


def test_an_invite_belongs_to_the_first_browser_or_account(study, annotator_user):
    link = invite_path(study, make_invite(study, "carol"))
    first = Client()
    assert first.post(link, follow=True).status_code == 200  # started
    assert first.get(link).status_code == 200  # the same browser again
    stranger = Client()
    refused = stranger.post(link)
    assert refused.status_code == 403 and "already used by someone else" in refused.content.decode()
    assert stranger.get(link).status_code == 403
    assert WORKERS_COOKIE not in refused.cookies
    # Signed in, an invite binds to the account, so the same account on another device may use it.
    link = invite_path(study, make_invite(study, "dave"))
    laptop, phone = Client(), Client()
    for device in (laptop, phone):
        device.force_login(annotator_user)
        assert device.post(link, follow=True).status_code == 200
    assert stranger.get(link).status_code == 403
    assert Worker.objects.filter(external_id__in=["invite:carol", "invite:dave"]).count() == 2
