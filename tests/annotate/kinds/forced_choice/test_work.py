"""The annotator side of the three forced-choice kinds: what a worker's browser receives (never a
method name, a correct answer or another secret), answering and storing, and the rule that a worker
never sees one text under two methods."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.test import Client

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.handout.assignment import next_assignment
from annotate.models import Item, Response, Study, Worker
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.annotate.conftest import make_user
from tests.annotate.kinds.forced_choice.test_generation import (
    make_run,
    make_study,
    make_texts,
    other,
    predict,
)

pytestmark = pytest.mark.django_db

SECRET_KEYS = ("method", "method_label", "ngram_sizes", "sides", "better_run", "worse_run", "true_label",
               "answer", "split", "external_id", "model_run")  # fmt: skip


def running_study(owner, kind: str, n_texts: int = 2, annotators: int = 1, **config) -> Study:
    """A running study of ``kind`` over ``n_texts`` texts (half misclassified) explained by two methods."""
    dataset, docs = make_texts(owner, max(4, n_texts), name=f"{kind}-{uuid.uuid4().hex[:6]}")
    good, poor = make_run(owner, dataset, "good"), make_run(owner, dataset, "poor")
    p = 0.6 if kind == "investigate" else 0.95
    for i, doc in enumerate(docs):
        right = i % 2 == 0
        predict(good, doc, doc.label if right else other(doc.label), p)
        predict(poor, doc, doc.label if i == 0 else other(doc.label), p)
    runs = {"better_run": good.pk, "worse_run": poor.pk} if kind == "reveal_model" else {"model_run": good.pk}
    study = make_study(owner, dataset, kind, {**runs, "n_texts": n_texts, **config}, annotators=annotators)
    start_study(study)
    study.refresh_from_db()
    return study


class Annotator:
    """A browser session that opened an invite link (CSRF enforced, as in a browser)."""

    def __init__(self, study: Study, invitee: str | None = None):
        self.client = Client(enforce_csrf_checks=True)
        page = self.client.post(invite_path(study, make_invite(study, invitee)), follow=True)
        assert page.status_code == 200
        self.html = page.content.decode()
        match = re.search(r'<script id="hatlab-task" type="application/json">(.*?)</script>', self.html, re.S)
        self.task = json.loads(match.group(1))
        self.received: list[str] = [self.html]

    def post(self, url: str, body: dict | None = None):
        response = self.client.post(
            url,
            json.dumps(body or {}),
            content_type="application/json",
            HTTP_X_CSRFTOKEN=self.task["csrf_token"],
        )
        self.received.append(response.content.decode())
        return response

    def next(self) -> dict:
        return self.post(self.task["next_url"]).json()

    def submit(self, assignment: str, answer: dict, key: str | None = None):
        body = {"submission_key": key or str(uuid.uuid4()), "answer": answer,
                "timings": {"read_ms": 900, "answer_ms": 1500}, "signals": {"choice_changes": 1}}  # fmt: skip
        return self.post(self.task["submit_url_template"].replace("ASSIGNMENT", assignment), body)


@pytest.fixture
def owner(db):
    return make_user("rhea", "researcher")


@pytest.mark.parametrize("kind", ["reveal_model", "justify", "investigate"])
def test_nothing_secret_reaches_the_annotator(owner, kind):
    study = running_study(owner, kind, n_texts=2, one_method_per_text_per_worker=False)
    items = {i.pk: i for i in Item.objects.filter(study=study)}
    assert len(items) == 4
    annotator = Annotator(study)
    assert annotator.task["kind"] == kind
    assert f'data-kind="{kind}"' in annotator.html and "hatlab/kinds/forced_choice.js" in annotator.html
    seen_payloads = []
    while True:
        data = annotator.next()
        if data.get("done"):
            break
        payload = data["item"]["payload"]
        seen_payloads.append(payload)
        assert set(payload) <= set(get_kind(kind).payload_keys)
        choice = data["config"]["choices"][0]
        assert annotator.submit(data["assignment"], choice).status_code == 201
    assert len(seen_payloads) == 4
    # Every payload is exactly one item's public payload, and nothing else came along.
    assert sorted(json.dumps(p, sort_keys=True) for p in seen_payloads) == sorted(
        json.dumps(i.payload, sort_keys=True) for i in items.values()
    )
    everything = "\n".join(annotator.received)
    for item in items.values():
        for name in (item.secret["method"], item.secret["method_label"]):
            assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", everything), name
    for key in SECRET_KEYS:
        assert f'"{key}"' not in everything, key
    config = annotator.task["config"]
    assert set(config) == {"instructions", "time_limit_s", "max_items_per_worker", "labels", "options",
                           "choices", "no_preference"}  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "answer"),
    [
        ("reveal_model", {"choice": "B", "confident": False}),
        ("justify", {"choice": "no preference", "confident": None}),
        ("investigate", {"choice": "negative", "confident": True}),
    ],
)
def test_answer_is_stored_once_and_bad_answers_name_the_field(owner, kind, answer):
    study = running_study(owner, kind)
    annotator = Annotator(study)
    data = annotator.next()
    bad = annotator.submit(data["assignment"], {"choice": "maybe", "confident": True})
    assert bad.status_code == 400 and "answer.choice" in bad.json()["errors"]
    key = str(uuid.uuid4())
    assert annotator.submit(data["assignment"], answer, key).status_code == 201
    assert annotator.submit(data["assignment"], answer, key).status_code == 200
    stored = Response.objects.get(study=study)
    assert stored.answer == answer
    assert stored.read_ms == 900 and stored.answer_ms == 1500
    assert stored.gold_passed is None


def test_investigate_has_no_no_preference(owner):
    study = running_study(owner, "investigate")
    annotator = Annotator(study)
    data = annotator.next()
    assert all(c["choice"] != "no preference" for c in data["config"]["choices"])
    response = annotator.submit(data["assignment"], {"choice": "no preference", "confident": None})
    assert response.status_code == 400 and "answer.choice" in response.json()["errors"]


def test_one_method_per_text_per_worker(owner):
    study = running_study(owner, "justify", n_texts=2, annotators=2)
    assert study.config["one_method_per_text_per_worker"] is True
    worker, second = Worker.objects.create(external_id="w1"), Worker.objects.create(external_id="w2")
    texts = []
    for _ in range(3):
        assignment = next_assignment(study, worker)
        if assignment is None:
            break
        texts.append(Item.objects.get(pk=assignment.item_id).document_id)
        assignment.status = "submitted"
        assignment.save(update_fields=["status"])
    assert len(texts) == 2 and len(set(texts)) == 2  # two texts, one method each, then nothing
    # A released (expired) assignment still counts as seen.
    held = next_assignment(study, second)
    held.status = "released"
    held.save(update_fields=["status"])
    following = next_assignment(study, second)
    assert Item.objects.get(pk=following.item_id).document_id != Item.objects.get(pk=held.item_id).document_id


def test_without_the_rule_a_worker_gets_every_question(owner):
    study = running_study(owner, "justify", n_texts=2, one_method_per_text_per_worker=False)
    worker = Worker.objects.create(external_id="w1")
    count = 0
    while (assignment := next_assignment(study, worker)) is not None:
        assignment.status = "submitted"
        assignment.save(update_fields=["status"])
        count += 1
    assert count == 4
