"""A study's ``config["gold_rate"]``: golds mixed into each worker's queue at that rate through the
annotator API, invisible in what the browser receives; without it, items come in queue order."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Assignment, Item, Study
from annotate.quality.gold_mixing import GOLD_CAPACITY, validate_gold_rate, worker_phase
from annotate.studies.lifecycle import start_study
from tests.annotate.crowd_helpers import answer_of, crowd_study
from tests.annotate.test_api import Annotator

pytestmark = pytest.mark.django_db

TIMINGS = {"read_ms": 900, "answer_ms": 400, "label_at_ms": 900, "first_highlight_at_ms": 1000}


def keys_and_values(data: Any) -> tuple[set[str], list[Any]]:
    """Every key and every value anywhere in a parsed JSON document."""
    keys: set[str] = set()
    values: list[Any] = []
    stack = [data]
    while stack:
        node = stack.pop()
        values.append(node)
        if isinstance(node, dict):
            keys.update(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return keys, values


def work_through(study: Study, count: int) -> tuple[list[Item], list[dict], list[str]]:
    """One annotator's first ``count`` hand-outs through the API, each answered: the items, the parsed
    ``next`` answers and their raw text."""
    annotator = Annotator(study)
    items, answers, texts = [], [], []
    for _ in range(count):
        response = annotator.next()
        assert response.status_code == 200
        data = response.json()
        assert "assignment" in data, data
        item = Item.objects.select_related("study").get(assignments__uid=data["assignment"])
        items.append(item)
        answers.append(data)
        texts.append(response.content.decode())
        body = {"submission_key": str(uuid.uuid4()), "answer": answer_of(item), "timings": TIMINGS}
        assert annotator.submit(data["assignment"], body).status_code == 201
    return items, answers, texts


def test_gold_rate_mixes_golds_in_at_the_rate(researcher):
    study = crowd_study(researcher, n=24, gold_every=3, annotators_per_item=1)  # 8 golds, 16 ordinary
    study.config["gold_rate"] = 0.25
    study.save(update_fields=["config"])

    items, answers, texts = work_through(study, 12)

    worker_id = Assignment.objects.filter(study=study).values_list("worker_id", flat=True).first()
    phase = worker_phase(study, worker_id)
    golds_so_far = 0
    for k, item in enumerate(items, start=1):
        golds_so_far += item.is_gold
        assert golds_so_far == math.floor(k * 0.25 + phase), f"after {k} hand-outs"
    assert sum(item.is_gold for item in items) == 3  # a quarter of the first 12, whatever the phase

    # Nothing in the API answers tells a gold apart, nor carries its answer.
    shapes = {(frozenset(a), frozenset(a["item"]), frozenset(a["item"]["payload"])) for a in answers}
    assert shapes == {
        (
            frozenset({"assignment", "expires_at", "page_token", "item", "progress", "config"}),
            frozenset({"kind", "payload"}),
            frozenset({"words", "breaks"}),
        )
    }
    for item, data, text in zip(items, answers, texts, strict=True):
        keys, values = keys_and_values(data)
        assert not keys & {"gold", "secret", "is_gold", "gold_rate", "gold_overlap", "overlap_measure"}
        assert "gold" not in text.lower()
        if item.is_gold:
            assert item.secret["gold"]["map"] not in values
    assert "gold" not in json.dumps(Annotator(study).task).lower()  # the page's own configuration


def test_without_a_gold_rate_items_come_in_queue_order(researcher):
    study = crowd_study(researcher, n=9, gold_every=3, annotators_per_item=1)
    assert "gold_rate" not in study.config
    items, _, _ = work_through(study, 9)
    queue = list(Item.objects.filter(study=study).order_by("position", "id"))
    assert [i.pk for i in items] == [i.pk for i in queue]
    assert [i.is_gold for i in items] == [True, False, False] * 3  # golds at their queue positions


def test_a_gold_rate_of_zero_hands_out_no_gold_first(researcher):
    study = crowd_study(researcher, n=6, gold_every=2, annotators_per_item=1)
    study.config["gold_rate"] = 0.0
    study.save(update_fields=["config"])
    items, _, _ = work_through(study, 3)
    assert [i.is_gold for i in items] == [True, False, True]  # rate 0 mixes nothing: queue order


@pytest.mark.parametrize(("value", "expected"), [(None, None), (0, 0.0), (0.2, 0.2), (1, 1.0)])
def test_validate_gold_rate_accepts_shares(value, expected):
    assert validate_gold_rate(value) == expected


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), "0.2", True, [0.2]])
def test_validate_gold_rate_refuses_anything_else(value):
    with pytest.raises(ValueError, match="from 0 to 1"):
        validate_gold_rate(value)


@pytest.fixture
def api(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def test_study_api_validates_and_keeps_the_gold_rate(api, dataset):
    def create(config: dict):
        body = {"name": f"s{len(config)}", "dataset": dataset.pk, "config": config}
        return api.post("/api/studies/", body, content_type="application/json")

    for bad in (1.5, -1, "often"):
        response = create({"gold_rate": bad})
        assert response.status_code == 400, response.content
        assert "from 0 to 1" in response.json()["config"]["gold_rate"][0]
    created = create({"mode": "free", "gold_rate": 0.2})
    assert created.status_code == 201, created.content
    assert created.json()["config"]["gold_rate"] == 0.2 and created.json()["config"]["mode"] == "free"
    assert Study.objects.get(uid=created.json()["uid"]).config["gold_rate"] == 0.2
    plain = api.post(
        "/api/studies/", {"name": "plain", "dataset": dataset.pk}, content_type="application/json"
    )
    assert plain.status_code == 201 and "gold_rate" not in plain.json()["config"]
    unset = create({"gold_rate": None})
    assert unset.status_code == 201 and "gold_rate" not in unset.json()["config"]


def test_study_form_validates_the_gold_rate(api, dataset):
    data = {
        "name": "form study",
        "dataset": dataset.pk,
        "mode": "read_first",
        "labels": "good, bad",
        "annotators_per_item": 2,
        "time_limit_min": 10,
        "provider": "local",
        "gold_rate": "1.5",
    }
    page = api.post(reverse("study-create"), data)
    assert page.status_code == 200 and "errorlist" in page.content.decode()
    assert not Study.objects.filter(name="form study").exists()
    assert api.post(reverse("study-create"), {**data, "gold_rate": "0.25"}).status_code == 302
    assert Study.objects.get(name="form study").config["gold_rate"] == 0.25
    assert api.post(reverse("study-create"), {**data, "name": "no golds", "gold_rate": ""}).status_code == 302
    assert "gold_rate" not in Study.objects.get(name="no golds").config


def test_starting_a_study_with_a_gold_rate_opens_its_golds_to_every_worker(researcher):
    study = crowd_study(researcher, n=6, gold_every=3, annotators_per_item=1, start=False)
    study.config["gold_rate"] = 1.0
    study.save(update_fields=["config"])
    start_study(study)
    assert {i.responses_needed for i in study.items.filter(is_gold=True)} == {GOLD_CAPACITY}
    assert {i.responses_needed for i in study.items.filter(is_gold=False)} == {1}
    first, second = work_through(study, 2)[0], work_through(study, 2)[0]
    assert all(i.is_gold for i in first + second) and {i.pk for i in first} == {i.pk for i in second}
