"""Exports: one row per response (anonymised), one row per item with CAM (AND) and SAM (OR)."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.exports import tables as exports
from annotate.exports.tables import UnknownExport, item_rows, response_rows, stream
from annotate.handout.assignment import next_assignment
from annotate.handout.submission import submit
from annotate.models import Document, WorkerTrust
from tests.annotate.conftest import make_dataset, make_study, make_worker

pytestmark = pytest.mark.django_db

TIMINGS = {"read_ms": 1000, "answer_ms": 500, "label_at_ms": 1000, "first_highlight_at_ms": 1100}


@pytest.fixture
def answered(researcher):
    """Two items, two annotators each; the maps are chosen so CAM and SAM are known."""
    dataset = make_dataset(researcher, n=3, name="export")
    study = make_study(researcher, dataset, name="export", annotators_per_item=2)
    workers = [make_worker("ext-1"), make_worker("ext-2")]
    maps = {}
    for _ in range(2):
        for w_index, worker in enumerate(workers):
            a = next_assignment(study, worker)
            n = len(a.item.payload["words"])
            word_map = [0] * n
            word_map[0] = 1
            word_map[1 + w_index] = 1
            submit(
                a.uid,
                {worker.pk},
                uuid.uuid4(),
                {"label": ["positive", "negative"][w_index], "map": word_map},
                TIMINGS,
            )
            maps.setdefault(a.item_id, []).append(word_map)
    return study, workers, maps


def answered_once(researcher, n: int):
    """A study over ``n`` documents whose every item one worker answered, marking a different word each."""
    study = make_study(researcher, make_dataset(researcher, n=n, name=f"docs-{n}"), name=f"docs-{n}")
    worker = make_worker(f"reader-{n}")
    for k in range(n):
        a = next_assignment(study, worker)
        word_map = [0] * len(a.item.payload["words"])
        word_map[k % len(word_map)] = 1
        submit(a.uid, {worker.pk}, uuid.uuid4(), {"label": "positive", "map": word_map}, TIMINGS)
    return study


def test_response_export_queries_do_not_grow_with_the_documents(researcher):
    """The items and documents of a chunk of responses come in one query each: 3 and 30 documents cost the
    same number of queries, and every row still has its own document's words and text."""
    queries = {}
    for n in (3, 30):
        study = answered_once(researcher, n)
        with CaptureQueriesContext(connection) as captured:
            rows = list(response_rows(study, text=True))
        queries[n] = len(captured)
        texts = dict(Document.objects.filter(dataset=study.dataset).values_list("external_id", "text"))
        assert len(rows) == n and {row["document"] for row in rows} == set(texts)
        for row in rows:
            assert row["text"] == texts[row["document"]]
            assert row["words"] and all(word in row["text"] for word in row["words"])
            assert row["highlighted"] == [w for w, on in zip(row["words"], row["map"], strict=True) if on]
    assert queries[3] == queries[30]


def test_response_export_reads_chunk_by_chunk_the_same_rows(researcher, monkeypatch):
    """With chunks smaller than the export, every chunk reads its own items and documents (the same
    document recurs in later chunks) and the rows are those of one chunk."""
    study = answered_once(researcher, 7)
    whole = list(response_rows(study, text=True))
    monkeypatch.setattr(exports, "CHUNK", 3)
    with CaptureQueriesContext(connection) as captured:
        chunked = list(response_rows(study, text=True))
    assert chunked == whole
    documents = [q["sql"] for q in captured if 'FROM "annotate_document"' in q["sql"]]
    assert len(documents) == 3  # chunks of 3, 3 and 1 responses


def test_response_rows_are_anonymised(answered):
    study, workers, _ = answered
    rows = list(response_rows(study))
    assert len(rows) == 4
    assert {r["worker"] for r in rows} == {w.pseudonym_for(study.owner_id) for w in workers}
    assert not {w.external_id for w in workers} & {r["worker"] for r in rows}
    first = rows[0]
    assert first["label"] == "positive" and first["map"][:3] == [1, 1, 0]
    assert (first["read_ms"], first["answer_ms"], first["gold_passed"]) == (1000, 500, None)
    assert first["document"].startswith("demo-")


def test_response_rows_carry_each_workers_trust_to_four_places(answered):
    """A worker's trust goes with each of their answers, rounded to four decimal places, with its status;
    a worker with no trust row has none."""
    study, workers, _ = answered
    WorkerTrust.objects.create(study=study, worker=workers[0], trust=2 / 3, status="trusted")
    rows = list(response_rows(study))
    first = [r for r in rows if r["worker"] == workers[0].pseudonym_for(study.owner_id)]
    second = [r for r in rows if r["worker"] == workers[1].pseudonym_for(study.owner_id)]
    assert [(r["trust"], r["trust_status"]) for r in first] == [(0.6667, "trusted")] * 2
    assert [(r["trust"], r["trust_status"]) for r in second] == [(None, "")] * 2


def test_item_rows_have_cam_and_sam(answered):
    study, _, maps = answered
    rows = list(item_rows(study))
    assert len(rows) == 3  # the third item has no responses
    by_item = {r["item"]: r for r in rows}
    for item_id, item_maps in maps.items():
        row = by_item[item_id]
        n = len(item_maps[0])
        assert row["responses"] == 2 and row["labels"] == ["positive", "negative"]
        assert row["cam"] == [1] + [0] * (n - 1)
        assert row["sam"] == [1, 1, 1] + [0] * (n - 3)
    empty = next(r for r in rows if r["item"] not in maps)
    assert (empty["responses"], empty["cam"], empty["sam"]) == (0, [], [])


def test_csv_and_jsonl_streams(answered):
    study, _, _ = answered
    text = "".join(stream(study, "responses", "csv"))
    table = list(csv.DictReader(io.StringIO(text)))
    assert len(table) == 4 and table[0]["map"].startswith("1 1 0")
    assert table[0]["gold_passed"] == "" and table[0]["read_ms"] == "1000"
    lines = "".join(stream(study, "items", "jsonl")).splitlines()
    assert len(lines) == 3 and isinstance(json.loads(lines[0])["cam"], list)
    items_csv = list(csv.DictReader(io.StringIO("".join(stream(study, "items", "csv")))))
    assert items_csv[0]["labels"] == '["positive", "negative"]'
    with pytest.raises(UnknownExport, match="no 'workers' export; it offers responses, items, labels"):
        stream(study, "workers", "csv")
    with pytest.raises(ValueError):
        stream(study, "items", "xlsx")


def test_exports_are_streamed_over_http(answered, researcher):
    study, _, _ = answered
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("study-export", args=[study.uid, "responses", "csv"]))
    assert page.status_code == 200 and page.streaming
    assert page["Content-Type"].startswith("text/csv")
    assert "attachment" in page["Content-Disposition"]
    assert b"".join(page.streaming_content).count(b"\n") == 5
    api = client.get(f"/api/studies/{study.uid}/export/items.jsonl/")
    assert api.status_code == 200 and api.streaming
    assert len(b"".join(api.streaming_content).splitlines()) == 3


def test_exports_need_the_owner(answered, other_researcher):
    study, _, _ = answered
    client = Client()
    client.force_login(other_researcher)
    assert client.get(reverse("study-export", args=[study.uid, "responses", "csv"])).status_code == 404
    assert client.get(f"/api/studies/{study.uid}/export/items.jsonl/").status_code == 404


def test_pseudonyms_are_per_researcher(researcher, other_researcher):
    """One platform id in two researchers' studies: each researcher's export names it differently, so a
    researcher who knows the id (their own worker, seen under it) cannot find it in another's export; within
    one researcher's studies the name stays the same, so their exports join."""
    from tests.annotate.crowd_helpers import answer

    worker = make_worker("A1SHARED", provider="mturk")
    studies = [
        make_study(owner, make_dataset(owner, n=2, name=f"d{i}"), name=f"s{i}")
        for i, owner in enumerate((researcher, researcher, other_researcher))
    ]
    for study in studies:
        answer(study, worker, study.items.first(), provider_assignment_id="ASSIGN1")
    rows = [next(iter(response_rows(study))) for study in studies]
    mine, mine_again, theirs = (r["worker"] for r in rows)
    assert mine == mine_again and mine != theirs
    assert rows[0]["platform_assignment"] == rows[1]["platform_assignment"] != rows[2]["platform_assignment"]
    assert worker.external_id not in {mine, theirs}
    # the pages show the same names as the exports
    assert worker.pseudonym_for(researcher.pk) == mine and worker.pseudonym_for(other_researcher.pk) == theirs
    # and the site-wide name, which admins see, is neither
    assert worker.anonymous_id not in {mine, theirs}
