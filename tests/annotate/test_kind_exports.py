"""Exports that hold every answer: per kind, the per-response export fills the kind's answer columns, the
aggregated exports are the kind's own, the datasheet names every column and the zip holds every file."""

from __future__ import annotations

import csv
import io
import json
import uuid
import zipfile

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.exports.tables import offered, stream
from annotate.models import Assignment, Item, Response, Worker, WorkerTrust
from tests.annotate.conftest import make_dataset, make_study, make_worker
from tests.annotate.kinds.forced_choice.test_scoring import HAND, study_with_items
from tests.annotate.kinds.forced_choice.test_scoring import answer as fc_answer
from tests.annotate.kinds.sentence_rating.test_kind import give as give_rating
from tests.annotate.kinds.sentence_rating.test_kind import make_rating_study
from tests.annotate.kinds.token_marking.test_kind import give as give_marks
from tests.annotate.kinds.token_marking.test_kind import make_marking_study

pytestmark = pytest.mark.django_db


def csv_rows(study, what: str = "responses", unverified: bool = False) -> list[dict]:
    return list(csv.DictReader(io.StringIO("".join(stream(study, what, "csv", unverified)))))


def jsonl_rows(study, what: str = "responses", unverified: bool = False) -> list[dict]:
    return [json.loads(line) for line in "".join(stream(study, what, "jsonl", unverified)).splitlines()]


def store(item: Item, worker: Worker, answer: dict, **fields) -> Response:
    """``worker``'s answer to ``item`` as the submission path stores it, with the platform's assignment id."""
    assignment = Assignment.objects.create(
        study=item.study, item=item, worker=worker, slot=item.assignments.count(),
        status=Assignment.Status.SUBMITTED, expires_at=timezone.now(), submitted_at=timezone.now(),
        provider_assignment_id=fields.pop("unit", ""),
    )  # fmt: skip
    return Response.objects.create(
        assignment=assignment, study=item.study, item=item, worker=worker,
        submission_key=uuid.uuid4(), answer=answer, **fields,
    )  # fmt: skip


@pytest.fixture
def highlighted(researcher):
    """A highlight study with a gold item: an MTurk worker (trusted) answers two items, one of them
    gold; a local worker answers one, still provisional."""
    dataset = make_dataset(researcher, n=3, name="hl", gold_every=3)
    study = make_study(researcher, dataset, name="hl", annotators_per_item=2)
    gold, plain = study.items.order_by("position")[:2]
    assert gold.is_gold and not plain.is_gold
    turk, local = make_worker("A1TURKER", provider="mturk"), make_worker("anna")
    WorkerTrust.objects.create(
        study=study, worker=turk, golds_seen=1, golds_passed=1, trust=0.8125, status="trusted"
    )
    n = len(plain.payload["words"])
    store(
        plain,
        turk,
        {"label": "negative", "map": [0, 1, 1] + [0] * (n - 3)},
        unit="3ASSIGNMENTXYZ",
        read_ms=700,
    )
    g = len(gold.payload["words"])
    store(
        gold, turk, {"label": "positive", "map": [1] + [0] * (g - 1)}, unit="3ASSIGNMENTABC", gold_passed=True
    )
    store(plain, local, {"label": "positive", "map": [1] + [0] * (n - 1)}, verification="provisional")
    return study, plain, gold


def test_highlight_responses_hold_words_highlighted_words_hashed_ids_gold_and_trust(highlighted):
    study, plain, gold = highlighted
    rows = csv_rows(study)
    assert [r["item"] for r in rows] == [str(plain.pk), str(gold.pk)]  # the provisional answer waits
    first, second = rows
    words = plain.payload["words"]
    assert json.loads(first["words"]) == words
    assert first["map"].startswith("0 1 1 0") and json.loads(first["highlighted"]) == words[1:3]
    assert (first["label"], first["read_ms"], first["study"]) == ("negative", "700", str(study.uid))
    assert (first["gold"], first["gold_passed"]) == ("False", "")
    assert (second["gold"], second["gold_passed"]) == ("True", "True")
    assert (first["trust"], first["trust_status"]) == ("0.8125", "trusted")
    # pseudonyms, never the platform's ids; one worker, two different assignments
    assert (
        first["worker"]
        == second["worker"]
        == Worker.objects.get(external_id="A1TURKER").pseudonym_for(study.owner_id)
    )
    assert (
        first["platform_assignment"].startswith("a")
        and first["platform_assignment"] != second["platform_assignment"]
    )
    raw = "".join(stream(study, "responses", "csv", True)) + "".join(
        stream(study, "responses", "jsonl", True)
    )
    assert "A1TURKER" not in raw and "ASSIGNMENT" not in raw and "anna" not in raw
    assert "text" not in first
    every = jsonl_rows(study, unverified=True)
    assert [r["verification"] for r in every] == ["verified", "verified", "provisional"]
    assert every[2]["platform_assignment"] == "" and every[2]["trust"] is None
    assert every[0]["text"].split()[1:3] == words[1:3] and every[0]["highlighted"] == words[1:3]


def test_highlight_offers_items_with_cam_and_sam_and_labels(highlighted, researcher):
    study, plain, _ = highlighted
    assert [e["name"] for e in offered(study)] == ["responses", "items", "labels"]
    labels = {r["item"]: r for r in jsonl_rows(study, "labels")}
    assert labels[plain.pk]["majority"] == "negative" and labels[plain.pk]["responses"] == 1
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert (
        "Items with CAM and SAM" in page
        and reverse("study-export", args=[study.uid, "labels", "csv"]) in page
    )
    refused = client.get(reverse("study-export", args=[study.uid, "labels", "csv"]) + "?include_unverified=1")
    assert refused.status_code == 400 and b"verified answers only" in refused.content


def test_sentence_rating_responses_hold_the_rating_per_aspect(researcher):
    study = make_rating_study(researcher)
    items = list(study.items.order_by("position"))
    worker = Worker.objects.create(external_id="rater")
    by_aspect = {}
    for item, level in zip(items, (5, 1, 3, 4, 2, 2, 1, 5, 4, 3), strict=False):
        give_rating(item, worker, level)
        by_aspect[(item.payload["aspect"], item.payload["sentence_index"] + 1, item.document.external_id)] = (
            level
        )
    rows = csv_rows(study)
    assert len(rows) == len(by_aspect) and {r["aspect"] for r in rows} == {"overall", "performance"}
    for row in rows:
        assert int(row["rating"]) == by_aspect[(row["aspect"], int(row["sentence"]), row["document"])]
    first = rows[0]
    assert (first["aspect"], first["sentence"], first["star_rating"], first["rating"]) == (
        "overall",
        "1",
        "4",
        "5",
    )
    assert (first["sentence_text"], first["rating_text"]) == ("The narrator was superb.", "very well")
    performance = next(r for r in rows if r["aspect"] == "performance" and r["document"] == "a")
    assert performance["star_rating"] == "5"
    assert [e["name"] for e in offered(study)] == ["responses", "ratings"]
    ratings = jsonl_rows(study, "ratings")
    assert ratings[0]["majority"] == 5 and ratings[0]["aspect"] == "overall" and ratings[0]["sentence"] == 0
    client = Client()
    client.force_login(researcher)
    assert client.get(reverse("study-export", args=[study.uid, "items", "csv"])).status_code == 404
    page = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert "CAM" not in page and "Ratings per sentence" in page
    assert "1 not at all, 2 a little" in page and "{&#x27;" not in page and "{'" not in page


def test_token_marking_responses_hold_the_marked_words_and_cells_are_formula_safe(researcher):
    study = make_marking_study(researcher)
    item = study.items.order_by("position").first()
    item.payload["explanation"] = '=HYPERLINK("http://x")'
    item.save(update_fields=["payload"])
    give_marks(item, Worker.objects.create(external_id="m1"), [0, 1, 0, 1, 0, 0, 0, 0])
    (row,) = csv_rows(study)
    assert json.loads(row["marked"]) == ["man", "a"] and row["map"] == "0 1 0 1 0 0 0 0"
    assert row["explanation"] == '\'=HYPERLINK("http://x")'
    assert jsonl_rows(study)[0]["explanation"] == '=HYPERLINK("http://x")'
    oracle = [r for r in jsonl_rows(study, "oracle") if r["item"] == item.pk]
    assert [r["share"] for r in oracle] == [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert [e["name"] for e in offered(study)] == ["responses", "oracle"]


def test_forced_choice_responses_hold_choice_method_and_score_and_no_cam_is_offered(researcher):
    questions = [
        (t, m, "correct" if t == 0 else "misclassified", "positive" if t == 0 else "negative")
        for t, m in HAND
    ]
    study, items = study_with_items(researcher, "justify", questions, n_docs=2)
    workers = [Worker.objects.create(external_id=f"fc{i}") for i in range(3)]
    for item, key in zip(items, HAND, strict=True):
        for worker, (choice, confident) in zip(workers, HAND[key], strict=True):
            fc_answer(study, item, worker, choice, confident)
    rows = csv_rows(study)
    assert len(rows) == 12
    first = rows[0]
    assert (first["choice"], first["confident"], first["method"], first["method_label"]) == (
        "positive", "True", "occ_1", "occ_1 (W)",
    )  # fmt: skip
    assert (first["correct_answer"], first["split"], first["score"], first["item"]) == (
        "positive", "correct", "1.0", str(items[0].pk),
    )  # fmt: skip
    assert [float(r["score"]) for r in rows[3:6]] == [0.0, -0.5, 1.0]
    assert rows[3]["confident"] == "" and rows[3]["choice"] == "no preference"
    assert [e["name"] for e in offered(study)] == ["responses", "methods", "questions"]
    questions_table = {r["item"]: r for r in jsonl_rows(study, "questions")}
    assert questions_table[items[2].pk]["mean_score"] == pytest.approx(5 / 6, abs=1e-6)
    methods = {(r["method"], r["split"]): r for r in jsonl_rows(study, "methods")}
    assert methods[("lrp (W)", "misclassified")]["mean"] == pytest.approx(-0.5)
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert "CAM" not in page and "Scores per method" in page
    assert client.get(reverse("study-export", args=[study.uid, "items", "jsonl"])).status_code == 404


def test_datasheet_names_every_column_and_the_zip_holds_every_export(highlighted, researcher):
    study, _, _ = highlighted
    client = Client()
    client.force_login(researcher)
    sheet = client.get(reverse("study-datasheet", args=[study.uid]))
    assert sheet.status_code == 200 and sheet["Content-Type"].startswith("text/markdown")
    text = sheet.content.decode()
    for export in ("responses", "items", "labels"):
        header = next(csv.reader(io.StringIO("".join(stream(study, export, "csv")))))
        for column in header:
            assert f"| `{column}` |" in text, (export, column)
    assert "| `text` |" in text and "| `verification` |" not in text
    assert "3 received; 2 verified, 1 awaiting" in text and "1 gold" in text
    assert "`gold_overlap`: 0.5" in text and "{'" not in text
    with_unverified = client.get(reverse("study-datasheet", args=[study.uid]) + "?include_unverified=1")
    assert "| `verification` |" in with_unverified.content.decode()
    archive = client.get(reverse("study-export-all", args=[study.uid]))
    assert archive["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist()
    prefix = f"study-{study.uid}-"
    assert sorted(n.removeprefix(prefix) for n in names) == sorted(
        ["datasheet.md", *(f"{w}.{f}" for w in ("responses", "items", "labels") for f in ("csv", "jsonl"))]
    )
    inside = zipfile.ZipFile(io.BytesIO(archive.content)).read(f"{prefix}responses.csv").decode()
    assert inside == "".join(stream(study, "responses", "csv"))
    full = zipfile.ZipFile(
        io.BytesIO(
            client.get(reverse("study-export-all", args=[study.uid]) + "?include_unverified=1").content
        )
    )
    assert (
        f"{prefix}responses-with-unverified.csv" in full.namelist()
        and f"{prefix}labels.csv" in full.namelist()
    )
    assert (
        client.get(reverse("study-export-all", args=[study.uid]) + "?include_unverified=x").status_code == 400
    )


def test_exports_of_another_researchers_study_are_404(highlighted, other_researcher):
    study, _, _ = highlighted
    client = Client()
    client.force_login(other_researcher)
    for name in ("study-datasheet", "study-export-all"):
        assert client.get(reverse(name, args=[study.uid])).status_code == 404
