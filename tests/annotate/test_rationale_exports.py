"""A highlighting study's maps as an ERASER folder and as a Hugging Face datasets folder: from the study
page and the API, read back with each format's own reader, with the same maps, pseudonyms and labels."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from annotate.exports.rationales import rationale_records, rationale_zip
from annotate.exports.tables import UnknownExport, item_rows
from annotate.handout.assignment import next_assignment
from annotate.handout.submission import submit
from annotate.models import Item, Response, Worker
from tests.annotate.conftest import make_dataset, make_study, make_worker
from tests.engine.test_rationale_formats import eraser_annotations, eraser_maps

pytestmark = pytest.mark.django_db

TIMINGS = {"read_ms": 1000, "answer_ms": 500, "label_at_ms": 1000, "first_highlight_at_ms": 1100}


@pytest.fixture
def answered(researcher):
    """Three items, two annotators each, and one answer left unverified (it must stay out)."""
    study = make_study(
        researcher, make_dataset(researcher, n=3, name="rat"), name="rat", annotators_per_item=2
    )
    workers = [make_worker("rat-1"), make_worker("rat-2")]
    given = {}
    for _ in range(3):
        for w, worker in enumerate(workers):
            a = next_assignment(study, worker)
            word_map = [0] * len(a.item.payload["words"])
            word_map[w] = word_map[2] = 1
            label = ["positive", "negative"][w]
            submit(a.uid, {worker.pk}, uuid.uuid4(), {"label": label, "map": word_map}, TIMINGS)
            doc = Item.objects.select_related("document").get(pk=a.item_id).document
            given[(doc.external_id, worker.anonymous_id)] = (label, word_map)
    last = Response.objects.filter(study=study, worker=workers[1]).latest("id")
    Response.objects.filter(pk=last.pk).update(verification=Response.Verification.PROVISIONAL)
    return study, workers, given


def _unzip(body: bytes, to: Path) -> Path:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        archive.extractall(to)
    return to


def test_records_hold_the_verified_maps_with_pseudonyms(answered):
    study, workers, given = answered
    records = rationale_records(study)
    maps = {(r["id"], a["annotator"]): (a["label"], a["map"]) for r in records for a in r["annotations"]}
    assert len(maps) == 5  # six answers, one provisional
    assert all(given[key] == value for key, value in maps.items())
    assert {a for _, a in maps} == {w.anonymous_id for w in workers}
    assert not any(w.external_id in json.dumps(records) for w in workers)


def test_eraser_zip_reads_back_with_the_benchmarks_loader(answered, researcher, tmp_path):
    study, _, given = answered
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("study-rationales", args=[study.uid, "eraser"]))
    assert page.status_code == 200 and page["Content-Type"] == "application/zip"
    assert f"study-{study.uid}-rationales-eraser.zip" in page["Content-Disposition"]
    folder = _unzip(page.content, tmp_path)
    maps, labels = {}, {}
    for split in ("train", "val", "test"):
        maps.update(eraser_maps(folder, split))
        labels.update(
            {a.annotation_id: a.classification for a in eraser_annotations(folder / f"{split}.jsonl")}
        )
    assert len(maps) == 5
    for (doc, worker), (label, word_map) in given.items():
        key = f"{doc}:{worker}"
        if f"{key}@{doc}" in maps:
            assert maps[f"{key}@{doc}"] == word_map and labels[key] == label
    assert (folder / "datasheet.md").read_text().startswith("#")
    # CAM and SAM beside them: the items export's figures
    cams = {}
    for split in ("train", "val", "test"):
        for line in (folder / "cam" / f"{split}.jsonl").read_text().splitlines():
            row = json.loads(line)
            cams[row["annotation_id"]] = sorted(
                i for g in row["evidences"] for ev in g for i in range(ev["start_token"], ev["end_token"])
            )
    for row in item_rows(study):
        assert cams[row["document"]] == [i for i, v in enumerate(row["cam"]) if v]


def test_hf_zip_loads_with_the_datasets_library(answered, researcher, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets", reason="the datasets library is a dev extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    study, _, given = answered
    client = Client()
    client.force_login(researcher)
    api = client.get(f"/api/studies/{study.uid}/export/rationales-hf.zip/")
    assert api.status_code == 200, api.content[:300]
    folder = _unzip(api.content, tmp_path / "hf")
    card = (folder / "README.md").read_text()
    assert card.startswith("---\n") and study.name in card and "## " in card
    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))
    rows = [row for split in loaded.values() for row in split]
    assert len(rows) == 3
    for row in rows:
        for ann in row["annotations"]:
            assert given[(row["id"], ann["annotator"])] == (ann["label"], ann["map"])
        maps = [a["map"] for a in row["annotations"]]
        assert row["cam"] == [int(all(c)) for c in zip(*maps, strict=True)]
        assert row["sam"] == [int(any(c)) for c in zip(*maps, strict=True)]


def test_rationale_exports_need_the_owner_a_highlighting_kind_and_a_known_format(
    answered, researcher, other_researcher
):
    study, _, _ = answered
    client = Client()
    client.force_login(other_researcher)
    assert client.get(reverse("study-rationales", args=[study.uid, "eraser"])).status_code == 404
    assert client.get(f"/api/studies/{study.uid}/export/rationales-hf.zip/").status_code == 404
    client.force_login(researcher)
    assert client.get(f"/studies/{study.uid}/export/rationales-csv.zip").status_code == 404
    with pytest.raises(ValueError, match="unknown rationale format"):
        rationale_zip(study, "csv")
    study.kind = "sentence_rating"
    with pytest.raises(UnknownExport, match="no maps over words"):
        rationale_records(study)


def test_the_study_page_offers_the_rationale_exports(answered, researcher):
    study, _, _ = answered
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert reverse("study-rationales", args=[study.uid, "eraser"]) in page
    assert reverse("study-rationales", args=[study.uid, "hf"]) in page


def test_no_platform_id_leaves(answered):
    study, workers, _ = answered
    body = rationale_zip(study, "eraser")
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        text = "".join(archive.read(n).decode() for n in archive.namelist())
    assert not any(w.external_id in text for w in Worker.objects.filter(pk__in=[w.pk for w in workers]))
