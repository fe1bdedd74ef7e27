"""Public human-rationale sets imported from the page and the management command: a dataset plus a
finished study whose verified answers are the set's maps, read as human maps by the dashboards; every
refusal names the line and field, and stores nothing."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotate.corpus.imports import CorpusImportError
from annotate.corpus.rationales import RATIONALE_PROVIDER, import_rationales, read_upload
from annotate.dashboards.gather import map_records, study_data
from annotate.exports.rationales import rationale_zip
from annotate.models import Dataset, Document, Response, Study, Worker
from explain_engine.datasets.public_rationales import read_zaidan
from tests.annotate.test_rationale_exports import answered  # noqa: F401 (a fixture)
from tests.conftest import require_shared_data
from tests.engine.test_rationale_formats import _esnli, _hatexplain

pytestmark = pytest.mark.django_db


def _post(client: Client, fmt: str, name: str, filename: str, data: bytes):
    upload = SimpleUploadedFile(filename, data)
    return client.post(reverse("dataset-rationale-import"), {"format": fmt, "name": name, "file": upload})


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return buffer.getvalue()


@pytest.fixture
def client(researcher) -> Client:
    c = Client()
    c.force_login(researcher)
    return c


def test_zaidan_movie_rationales_from_the_page_are_human_maps(client, researcher):
    path = require_shared_data("movie-review-rationales-zaidan2007", "movie_rationales.jsonl")
    lines = (
        path.read_text(encoding="utf-8").splitlines()[:12]
        + path.read_text(encoding="utf-8").splitlines()[1000:1012]
    )
    page = _post(client, "zaidan", "movies", "movie_rationales.jsonl", "\n".join(lines).encode())
    study = Study.objects.get(dataset__name="movies")
    assert page.status_code == 302 and page["Location"] == reverse("study-detail", args=[study.uid])
    assert study.kind == "highlight" and study.status == Study.Status.FINISHED
    assert study.dataset.labels == ["neg", "pos"]
    expected = {
        r["id"]: r["annotations"][0]["map"]
        for r in read_zaidan(path)
        if r["id"] in {json.loads(x)["id"] for x in lines}
    }
    records, bad = map_records(study_data(study))
    assert bad == 0 and {r["external_id"]: r["annotations"][0]["map"] for r in records} == expected
    assert Worker.objects.filter(provider=RATIONALE_PROVIDER, external_id="zaidan:zaidan2007").count() == 1
    dashboard = client.get(reverse("study-dashboard", args=[study.uid]))
    assert dashboard.status_code == 200


def test_esnli_becomes_an_nli_pair_study(client, tmp_path):
    data = _esnli(tmp_path).read_bytes()
    assert _post(client, "esnli", "snli", "esnli_dev.csv", data).status_code == 302
    study = Study.objects.get(dataset__name="snli")
    assert study.kind == "nli_pair"
    doc = Document.objects.get(dataset=study.dataset)
    assert doc.metadata["hypothesis"] == "A man is outside." and doc.label == "entailment"
    answers = [r.answer for r in Response.objects.filter(study=study).order_by("assignment__slot")]
    assert answers == [
        {"label": "entailment", "premise_map": [0, 1, 0, 0, 0, 1], "hypothesis_map": [0, 1, 0, 1]},
        {"label": "entailment", "premise_map": [0, 0, 0, 0, 0, 1], "hypothesis_map": [0, 0, 0, 1]},
    ]
    assert client.get(reverse("study-results", args=[study.uid])).status_code == 200


def test_hatexplain_zip_keeps_the_annotators_across_posts(client, researcher, tmp_path):
    path = _hatexplain(tmp_path)
    body = _zip(
        {
            "hx/dataset.json": path.read_bytes(),
            "hx/post_id_divisions.json": (tmp_path / "post_id_divisions.json").read_bytes(),
        }
    )
    assert _post(client, "hatexplain", "hate", "hatexplain.zip", body).status_code == 302
    study = Study.objects.get(dataset__name="hate")
    by_worker = {
        r.worker.external_id: r.answer for r in Response.objects.filter(study=study).select_related("worker")
    }
    assert by_worker == {
        "hatexplain:7": {"label": "hatespeech", "map": [0, 0, 0, 1]},
        "hatexplain:9": {"label": "offensive", "map": [0, 1, 0, 1]},
    }
    assert Document.objects.get(dataset=study.dataset, external_id="p2").metadata["split"] == "test"


def test_an_eraser_export_imports_back_as_the_same_maps(answered, researcher):  # noqa: F811
    study, _, _ = answered
    records = read_upload("eraser", rationale_zip(study, "eraser"), "study.zip")
    done = import_rationales(records, researcher, "round trip", "eraser")
    before = {(r["document"], tuple(r["cam"]), tuple(r["sam"])) for r in _items(study)}
    after = {(r["document"], tuple(r["cam"]), tuple(r["sam"])) for r in _items(done.study)}
    assert before == after


def _items(study):
    from annotate.exports.tables import item_rows

    return [r for r in item_rows(study) if r["responses"]]


def test_refusals_name_line_and_field_and_store_nothing(client, tmp_path):
    datasets = Dataset.objects.count()
    bad = json.dumps({"id": "a", "label": "pos", "text": "so good", "rationale_spans": [[0, 5]]})
    page = _post(
        client,
        "zaidan",
        "bad",
        "z.jsonl",
        (
            json.dumps({"id": "b", "label": "neg", "text": "bad film", "rationale_spans": [[0, 1]]})
            + "\n"
            + bad
        ).encode(),
    )
    assert page.status_code == 200
    assert (
        "Nothing was imported. line 2, field &#x27;rationale_spans&#x27;: z.jsonl: span [0, 5) is outside the 2 words"
        in page.content.decode()
    )
    evil = _zip({"../escape.json": b"{}"})
    assert "lies outside the folder" in _post(client, "hatexplain", "evil", "x.zip", evil).content.decode()
    assert (
        "not a valid zip file" in _post(client, "eraser", "nozip", "x.zip", b"PK nonsense").content.decode()
    )
    assert (
        "needs its docs/ folder"
        in _post(client, "eraser", "nodocs", "x.zip", _zip({"train.jsonl": b""})).content.decode()
    )
    assert Dataset.objects.count() == datasets
    with pytest.raises(CorpusImportError, match="format"):
        read_upload("conll", b"x", "x.txt")


def test_a_taken_name_is_refused(client, researcher):
    Dataset.objects.create(owner=researcher, name="taken")
    page = _post(client, "zaidan", "taken", "z.jsonl", b"{}")
    assert "You already have a dataset with this name." in page.content.decode()


def test_management_command_imports_yelphat(researcher):
    path = require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv")
    out = io.StringIO()
    call_command(
        "import_rationales",
        "yelphat",
        str(path),
        "--owner",
        researcher.username,
        "--dataset",
        "yh",
        stdout=out,
    )
    assert "300 texts" in out.getvalue() and "900 human maps by 3 annotators" in out.getvalue()
    study = Study.objects.get(dataset__name="yh")
    records, bad = map_records(study_data(study))
    assert bad == 0 and len(records) == 300 and all(len(r["annotations"]) == 3 for r in records)


def test_an_imported_pair_study_exports_its_pairs(client, tmp_path, monkeypatch):
    """e-SNLI in, then out as ERASER (premise and hypothesis documents) and as a datasets folder."""
    assert _post(client, "esnli", "pairs", "esnli_dev.csv", _esnli(tmp_path).read_bytes()).status_code == 302
    study = Study.objects.get(dataset__name="pairs")
    (back,) = read_upload("eraser", rationale_zip(study, "eraser"), "pairs.zip")
    assert back["hypothesis"] == "A man is outside."
    assert sorted((a["map"], a["hypothesis_map"]) for a in back["annotations"]) == [
        ([0, 0, 0, 0, 0, 1], [0, 0, 0, 1]),
        ([0, 1, 0, 0, 0, 1], [0, 1, 0, 1]),
    ]
    datasets = pytest.importorskip("datasets", reason="the datasets library is a dev extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "hf"
    with zipfile.ZipFile(io.BytesIO(rationale_zip(study, "hf"))) as archive:
        archive.extractall(folder)
    rows = [
        r
        for split in datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "c")).values()
        for r in split
    ]
    assert [r["hypothesis_sam"] for r in rows] == [[0, 1, 0, 1]]
