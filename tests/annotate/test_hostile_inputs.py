"""Inputs that gave 500 and must be a 400 naming the field, with nothing stored: imports of texts (the
datasets page and the API) and of golds holding a NUL, a lone surrogate, NaN, a number out of range, JSON
nested 50,000 deep or an integer of 5,000 digits; the gold editor saving deep JSON; a bonus of NaN,
Infinity or 1e30; a gold file over the import cap."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Dataset, Item, Payment, Study
from tests.annotate.conftest import make_dataset, make_study, make_worker
from tests.annotate.crowd_helpers import answer
from tests.annotate.test_api import upload

pytestmark = pytest.mark.django_db

DEEP = "[" * 50_000 + "]" * 50_000
JSONL = "jsonl"
CSV = "csv"

# (file name, contents, the field the error names)
BAD_FILES = {
    "CSV with a NUL byte": ("t.csv", b"id,text,label\n1,a\x00b,pos\n", "text"),
    "JSONL with a NUL": ("t.jsonl", b'{"id": 1, "text": "a\\u0000b", "label": "pos"}\n', "text"),
    "JSONL with a lone surrogate": (
        "t.jsonl",
        b'{"id": 1, "text": "ok", "label": "pos", "metadata": {"note": "\\ud800"}}\n',
        "metadata.note",
    ),
    "JSONL with NaN in metadata": (
        "t.jsonl",
        b'{"id": 1, "text": "ok", "label": "pos", "metadata": {"score": NaN}}\n',
        "metadata.score",
    ),
    "JSONL with 1e400 in metadata": (
        "t.jsonl",
        b'{"id": 1, "text": "ok", "label": "pos", "metadata": {"score": 1e400}}\n',
        "metadata.score",
    ),
    "JSONL with -1e400 in metadata": (
        "t.jsonl",
        b'{"id": 1, "text": "ok", "label": "pos", "metadata": {"score": -1e400}}\n',
        "metadata.score",
    ),
    "JSONL nested 50,000 deep": (
        "t.jsonl",
        b'{"id": 1, "text": "ok", "label": "pos", "metadata": {"x": ' + DEEP.encode() + b"}}\n",
        "line 1",
    ),
    "JSONL with a 5,000-digit integer": (
        "t.jsonl",
        b'{"id": 1, "text": "ok", "label": "pos", "metadata": {"n": ' + b"9" * 5000 + b"}}\n",
        "metadata.n",
    ),
    "CSV metadata nested 50,000 deep": (
        "t.csv",
        b'id,text,label,metadata\n1,ok,pos,"' + DEEP.encode() + b'"\n',
        "metadata",
    ),
    "CSV metadata with NaN": ("t.csv", b'id,text,label,metadata\n1,ok,pos,"{""a"": NaN}"\n', "metadata.a"),
}


@pytest.fixture
def api(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_dataset_api_refuses_unstorable_files_naming_the_field(api, case):
    name, content, field = BAD_FILES[case]
    response = api.post("/api/datasets/", {"name": "bad", "file": upload(name, content)})
    assert response.status_code == 400, response.content
    assert field in response.json()["file"][0]
    existing = api.post("/api/datasets/", {"name": "kept"}, content_type="application/json").json()
    imported = api.post(f"/api/datasets/{existing['id']}/import/", {"file": upload(name, content)})
    assert imported.status_code == 400 and field in imported.json()["file"][0]
    assert not Dataset.objects.filter(name="bad").exists()
    assert not Dataset.objects.get(name="kept").documents.exists()


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_dataset_page_refuses_unstorable_files_naming_the_field(api, case):
    name, content, field = BAD_FILES[case]
    response = api.post(reverse("dataset-list"), {"name": "bad", "file": upload(name, content)})
    assert response.status_code == 400
    assert "Nothing was imported" in response.content.decode() and field in response.content.decode()
    assert not Dataset.objects.filter(name="bad").exists()


def test_good_files_still_import(api):
    good = b'{"id": 1, "text": "ok", "label": "pos", "metadata": {"score": 1.5e300, "n": 12345678901234567890}}\n'
    response = api.post("/api/datasets/", {"name": "good", "file": upload("g.jsonl", good)})
    assert response.status_code == 201, response.content
    document = Dataset.objects.get(name="good").documents.get()
    assert float(document.metadata["score"]) == 1.5e300  # jsonb keeps it as a numeric
    assert document.metadata["n"] == 12345678901234567890


# ------------------------------------------------------------------ golds


@pytest.fixture
def gold_study(researcher) -> Study:
    return make_study(researcher, make_dataset(researcher, n=4, name="golds"), name="golds")


def test_gold_editor_refuses_deep_json_naming_the_field(api, gold_study):
    item = Item.objects.filter(study=gold_study).first()
    url = reverse("study-gold-save", args=[gold_study.uid, item.pk])
    deep = api.post(url, '{"answer": ' + DEEP + "}", content_type="application/json")
    assert deep.status_code == 400 and "deeper" in deep.json()["errors"]["answer"][0]
    nan = api.post(url, '{"answer": {"label": NaN}}', content_type="application/json")
    assert nan.status_code == 400 and "NaN" in nan.json()["errors"]["answer.label"][0]
    item.refresh_from_db()
    assert not item.is_gold


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("g.jsonl", '{"item": 1, "label": "positive", "words": ' + DEEP + "}\n", "deeper"),
        ("g.jsonl", '{"item": 1, "label": "positive", "words": [' + "9" * 5000 + "]}\n", "words.0"),
        ("g.jsonl", '{"item": 1, "label": "positive", "words": [1e400]}\n', "words.0"),
        ("g.jsonl", '{"item": 1, "label": "positive", "words": [NaN]}\n', "words.0"),
        ("g.csv", "item,label,words\n1,posi\x00tive,1\n", "label"),
    ],
)
def test_gold_import_refuses_deep_and_unstorable_lines(api, gold_study, name, content, words):
    response = api.post(
        reverse("study-golds-import", args=[gold_study.uid]), {"file": upload(name, content.encode())}
    )
    assert response.status_code == 400 and words in response.content.decode()
    assert not Item.objects.filter(study=gold_study, is_gold=True).exists()


def test_gold_import_is_capped_before_it_is_read(api, gold_study, settings):
    settings.HATLAB_IMPORT_MAX_BYTES = 100
    lines = "".join(json.dumps({"item": 1, "label": "positive"}) + "\n" for _ in range(10)).encode()
    response = api.post(
        reverse("study-golds-import", args=[gold_study.uid]), {"file": upload("g.jsonl", lines)}
    )
    assert response.status_code == 400 and "HATLAB_IMPORT_MAX_BYTES" in response.content.decode()
    assert not Item.objects.filter(study=gold_study, is_gold=True).exists()


# ------------------------------------------------------------------ bonuses


@pytest.mark.parametrize("amount", ["NaN", "Infinity", "-Infinity", "1e30", "sNaN", "0", "100.01"])
def test_bonus_amounts_out_of_range_are_a_400_naming_the_field(api, study, amount):
    worker = make_worker("w-bonus")
    answer(study, worker, study.items.first())
    url = reverse("quality-worker", args=[study.uid, worker.pk, "bonus"])
    response = api.post(url, {"amount": amount, "reason": "good work", "key": "k1"})
    assert response.status_code == 400 and response.content.decode().startswith("amount:")
    assert not Payment.objects.exists()
