"""Words (issue 27, point 11): the copy says what is so. The NLI question, JSON errors, plurals on every
page, a job's state in its message, the study's time limit in the form's unit, a setting's range, one
name for the trained attention map, no label figures on the token-marking dashboard, a favicon, and
re-running the demo keeps everyone signed in."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.management import call_command
from django.test import Client, RequestFactory
from django.urls import reverse

from annotate.corpus.imports import CorpusImportError, read_json
from annotate.crowd.providers import PROVIDERS
from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.crowd.providers.local.settings import LocalSettings
from annotate.crowd.settings_form import declared
from annotate.dashboards.study import study_dashboard
from annotate.models import Job
from annotate.views.machine import _job_message
from explain_engine import api as engine
from tests.annotate.conftest import PASSWORD, make_worker
from tests.annotate.kinds.token_marking.test_kind import give, make_marking_study

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = [
    *ROOT.glob("annotate/templates/**/*.html"),
    *ROOT.glob("annotate/kinds/*/templates/**/*.html"),
]
#: A count followed by a plural noun with no ``pluralize``: "1 answers".
BARE_PLURAL = re.compile(
    r"\{\{ [a-z_][a-z_.0-9]* \}\} (answers|workers|documents|texts|pairs|questions|sentences|markings|"
    r"judgments|inputs|words|items|annotators|methods|golds|labels|responses|categories)\b(?!\s*=)"
)


def test_the_nli_question_offers_neither_not_either():
    source = (ROOT / "frontend/src/kinds/nli_pair.ts").read_text()
    assert "either (neutral)" not in source.replace("neither (neutral)", "")
    assert "or neither (neutral)?" in source


def test_a_json_error_says_at_column_once():
    with pytest.raises(CorpusImportError) as caught:
        read_json(3, '{"a": "never closed')
    said = str(caught.value)
    assert "at at" not in said
    assert said == "line 3: the line is not valid JSON (Unterminated string starting at column 7)"


def test_no_template_puts_a_count_before_a_bare_plural():
    slips = [
        f"{path.relative_to(ROOT)}: {m.group(0)}"
        for path in TEMPLATES
        for m in BARE_PLURAL.finditer(path.read_text())
    ]
    assert slips == []


@pytest.mark.django_db
def test_a_results_page_with_one_answer_says_one(researcher):
    study = make_marking_study(researcher, judges=1)
    item = study.items.filter(is_gold=False).order_by("position").first()
    give(item, make_worker("solo"), [1] + [0] * (len(item.payload["words"]) - 1))
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("study-results", args=[study.uid])).content.decode()
    assert "1 marking of 1 of 3 inputs by 1 worker" in page


def _request(user) -> object:
    request = RequestFactory().post("/")
    SessionMiddleware(lambda r: None).process_request(request)
    request.user = user
    request._messages = FallbackStorage(request)
    return request


@pytest.mark.django_db
@pytest.mark.parametrize(
    "status, level, said",
    [
        (Job.Status.DONE, "success", "Training of bilstm is done."),
        (Job.Status.RUNNING, "success", "Training of bilstm is running."),
        (Job.Status.QUEUED, "success", "Training of bilstm is queued."),
        (Job.Status.FAILED, "error", "Training of bilstm failed: out of memory."),
    ],
)
def test_a_jobs_message_says_where_it_stands(researcher, status, level, said):
    job = Job.objects.create(kind="train", key=f"k-{status}", status=status, message="out of memory")
    request = _request(researcher)
    _job_message(request, job, "Training of bilstm")
    shown = [(m.level_tag, m.message) for m in get_messages(request)]
    assert shown == [(level, said)]


@pytest.mark.django_db
def test_the_time_limit_is_shown_in_the_forms_minutes(researcher, study):
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert f"{study.time_limit_s // 60} min per item" in page and " s per item" not in page


def test_no_setting_offers_a_negative_range():
    negative = [
        f"{name}.{s.name}" for name in PROVIDERS for s in declared(name) if s.low is not None and s.low < 0
    ]
    assert negative == [] and declared("local")
    with pytest.raises(ProviderConfigError, match="between 0 and"):
        LocalSettings.from_dict({"invite_max_age_s": -1})


def test_the_trained_attention_map_has_one_name():
    stored = engine.describe_method(engine.TRAINING_ATTENTION)
    assert stored.title == engine.describe_method("attention").title == "Attention weights"


@pytest.mark.django_db
def test_the_token_marking_dashboard_shows_no_phantom_labels(researcher):
    study = make_marking_study(researcher, judges=2)
    workers = [make_worker("m1"), make_worker("m2")]
    for item in study.items.filter(is_gold=False):
        n = len(item.payload["words"])
        for k, worker in enumerate(workers):
            give(item, worker, [1 if i == k else 0 for i in range(n)])
    result = study_dashboard(study, n_boot=20)
    assert "labels" not in {c["id"] for c in result["charts"]}
    assert {t["id"] for t in result["tables"]}.isdisjoint({"labels-table"})
    omitted = {o["id"]: o["why"] for o in result["omitted_figures"]}
    assert omitted["labels"] == "The answers of this kind mark words; they give no label."
    agreement = next(t for t in result["tables"] if t["id"] == "agreement-table")
    assert all("labels" not in str(row[0]) for row in agreement["rows"])


@pytest.mark.django_db
def test_every_page_has_a_favicon_that_is_served(researcher):
    icon = Client().get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml"
    assert icon.content.startswith(b"<svg")
    page = Client().get(reverse("login")).content.decode()
    assert f'<link rel="icon" href="{reverse("favicon")}"' in page


@pytest.mark.django_db
def test_running_the_demo_again_keeps_everyone_signed_in(monkeypatch):
    monkeypatch.setenv("HATLAB_DEMO_PASSWORD", PASSWORD)
    call_command("seed_demo", "--reviews", "12", stdout=io.StringIO())
    client = Client()
    assert client.login(username="researcher", password=PASSWORD)
    assert client.get(reverse("study-list")).status_code == 200
    stored = User.objects.get(username="researcher").password
    call_command("seed_demo", "--reviews", "12", stdout=io.StringIO())
    assert User.objects.get(username="researcher").password == stored
    assert client.get(reverse("study-list")).status_code == 200
