"""The highlight kind's results page: per-text majority labels and Fleiss κ over the labels, CAM and SAM,
counted answers to non-gold items only, tables downloadable through the common results route."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from annotate.handout.assignment import next_assignment
from annotate.handout.submission import submit
from annotate.kinds.highlight.results import TEXT_COLUMNS, highlight_results
from annotate.models import Item, QualityPolicy, Response
from annotate.quality.grading import refresh_trust
from tests.annotate.conftest import make_dataset, make_study, make_worker

pytestmark = pytest.mark.django_db

TIMINGS = {"read_ms": 1000, "answer_ms": 500, "label_at_ms": 1000, "first_highlight_at_ms": 1100}
#: Each worker's label on the two non-gold texts, in item order: agreement on the first, a tie on the second.
PLAN = {"ann-1": ("positive", "positive"), "ann-2": ("positive", "negative")}


@pytest.fixture
def answered(researcher):
    """Three texts, the first a gold item; two annotators answer all three, passing the gold. The first
    annotator marks words 0 and 1 of every text, the second word 1."""
    dataset = make_dataset(researcher, n=3, name="hl", gold_every=3)
    study = make_study(researcher, dataset, annotators_per_item=2, name="hl results")
    QualityPolicy.objects.update_or_create(study=study, defaults={"min_golds": 1})  # one gold qualifies
    texts = list(study.items.filter(is_gold=False).order_by("position", "id").values_list("id", flat=True))
    for name, labels in PLAN.items():
        worker = make_worker(name)
        while (a := next_assignment(study, worker)) is not None:
            item = Item.objects.get(pk=a.item_id)
            if item.is_gold:
                answer = {"label": item.secret["gold"]["label"], "map": item.secret["gold"]["map"]}
            else:
                word_map = [0] * len(item.payload["words"])
                word_map[1] = 1
                if name == "ann-1":
                    word_map[0] = 1
                answer = {"label": labels[texts.index(item.pk)], "map": word_map}
            submit(a.uid, {worker.pk}, uuid.uuid4(), answer, TIMINGS)
    assert Response.objects.filter(study=study, item__is_gold=True).count() == 2
    refresh_trust(study)  # both passed their gold: trusted
    return study


def test_majority_labels_kappa_and_maps_leave_the_gold_item_out(answered):
    results = highlight_results(answered, n_boot=0)
    assert (results["items"], results["answered"], results["answers"]) == (2, 2, 4)
    first, second = results["texts"]
    assert first["labels"] == ["positive", "positive"] and first["majority"] == "positive"
    assert first["majority_share"] == 1.0
    assert second["majority"] is None and second["majority_share"] == 0.5 and results["ties"] == 1
    # Fleiss κ of [pos, pos] and [pos, neg]: P̄ = 1/2, P_e = (3/4)² + (1/4)² = 5/8, κ = (1/2 - 5/8) / (3/8)
    assert results["label_kappa"]["value"] == pytest.approx(-1 / 3)
    assert results["label_kappa"]["n"] == 2
    words = first["cam_words"]
    assert first["cam"][:2] == [0, 1] and first["sam"][:2] == [1, 1] and len(words) == 1
    assert {m["label"]: m["texts"] for m in results["majorities"]}["positive"] == 1


def test_results_page_and_tables(answered, researcher, other_researcher):
    client = Client()
    client.force_login(researcher)
    url = reverse("study-results", args=[answered.uid])
    html = client.get(url).content.decode()
    assert "Label agreement" in html and "-0.333" in html and "tie" in html
    assert reverse("study-dashboard", args=[answered.uid]) in html
    assert reverse("study-results-table", args=[answered.uid, "texts", "jsonl"]) in html
    assert url in client.get(reverse("study-detail", args=[answered.uid])).content.decode()
    texts = client.get(reverse("study-results-table", args=[answered.uid, "texts", "csv"]))
    assert texts.status_code == 200 and texts["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(texts.content.decode())))
    assert tuple(rows[0]) == TEXT_COLUMNS and len(rows) == 2
    assert json.loads(rows[0]["labels"]) == ["positive", "positive"] and rows[1]["majority"] == ""
    assert rows[0]["cam"].startswith("0 1 ") and rows[0]["sam"].startswith("1 1 ")
    lines = client.get(reverse("study-results-table", args=[answered.uid, "texts", "jsonl"])).content.decode()
    assert [json.loads(line)["majority"] for line in lines.splitlines()] == ["positive", None]
    labels = client.get(reverse("study-results-table", args=[answered.uid, "labels", "csv"])).content.decode()
    assert [r["responses"] for r in csv.DictReader(io.StringIO(labels))] == ["2", "2"]  # no gold item
    assert client.get(reverse("study-results-table", args=[answered.uid, "items", "csv"])).status_code == 404
    other = Client()
    other.force_login(other_researcher)
    assert other.get(url).status_code == 404


def test_a_study_without_answers_has_an_empty_page(researcher):
    study = make_study(researcher, make_dataset(researcher, n=2, name="empty"), name="empty")
    results = highlight_results(study, n_boot=0)
    assert results["label_kappa"] is None and results["answers"] == 0
    client = Client()
    client.force_login(researcher)
    assert (
        "no text has two counted labels yet"
        in client.get(reverse("study-results", args=[study.uid])).content.decode()
    )
