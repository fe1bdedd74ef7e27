"""Imports are capped (file bytes, rows, characters and words per text; each error names its setting),
read row by row so that reading stops at the row cap, and checked against the dataset in batches."""

from __future__ import annotations

import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.corpus.imports import BATCH_SIZE, CorpusImportError, import_texts, read_rows
from annotate.kinds.nli_pair.pairs import read_pairs
from annotate.models import Dataset
from tests.annotate.kinds.nli_pair.test_kind import LABELS
from tests.annotate.test_api import api, upload  # noqa: F401 (a fixture and a helper)

pytestmark = pytest.mark.django_db


def rows_csv(n: int) -> bytes:
    return ("id,text,label\n" + "".join(f"{i},text number {i},pos\n" for i in range(n))).encode()


def test_rows_past_the_cap_are_refused_and_nothing_is_stored(settings, researcher):
    settings.HATLAB_IMPORT_MAX_ROWS = 5
    dataset = Dataset.objects.create(owner=researcher, name="capped")
    assert import_texts(dataset, rows_csv(5), "csv").documents == 5
    other = Dataset.objects.create(owner=researcher, name="too many")
    with pytest.raises(CorpusImportError, match=r"more than 5 rows.*HATLAB_IMPORT_MAX_ROWS") as caught:
        import_texts(other, rows_csv(6), "csv")
    assert caught.value.line == 7 and other.documents.count() == 0


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_reading_stops_at_the_cap(settings, fmt):
    """The row after the cap is never read: a broken row just past it goes unnoticed."""
    settings.HATLAB_IMPORT_MAX_ROWS = 3
    if fmt == "csv":
        text = "id,text,label\n" + "".join(f"{i},t,pos\n" for i in range(4)) + '5,"never closed\n'
    else:
        text = "".join(f'{{"id": {i}, "text": "t", "label": "pos"}}\n' for i in range(4)) + "{broken\n"
    rows = read_rows(text, fmt, ("id", "text", "label"))
    assert [next(rows)[0] for _ in range(3)] == ([2, 3, 4] if fmt == "csv" else [1, 2, 3])
    with pytest.raises(CorpusImportError, match="HATLAB_IMPORT_MAX_ROWS"):
        next(rows)


def test_characters_and_words_per_text(settings, researcher):
    settings.HATLAB_IMPORT_MAX_CHARS = 30
    settings.HATLAB_IMPORT_MAX_WORDS = 4
    dataset = Dataset.objects.create(owner=researcher, name="texts")
    long = b"id,text,label\n1,ok,pos\n2," + b"x" * 31 + b",pos\n"
    with pytest.raises(
        CorpusImportError, match=r"line 3, field 'text': 31 characters .*HATLAB_IMPORT_MAX_CHARS"
    ):
        import_texts(dataset, long, "csv")
    wordy = b'{"id": 1, "text": "one two three four five", "label": "pos"}\n'
    with pytest.raises(CorpusImportError, match=r"line 1, field 'text': 5 words .*HATLAB_IMPORT_MAX_WORDS"):
        import_texts(dataset, wordy, "jsonl")
    assert import_texts(dataset, b"id,text,label\n1,one two three four,pos\n", "csv").documents == 1


def test_a_pair_file_is_capped_too(settings):
    settings.HATLAB_IMPORT_MAX_CHARS = 20
    data = b"premise,hypothesis,label\nA short one,This hypothesis is much too long,neutral\n"
    with pytest.raises(CorpusImportError, match=r"line 2, field 'hypothesis'.*HATLAB_IMPORT_MAX_CHARS"):
        read_pairs(data, "csv", LABELS)
    settings.HATLAB_IMPORT_MAX_ROWS = 1
    two = b"premise,hypothesis,label\nA b,C d,neutral\nE f,G h,neutral\n"
    with pytest.raises(CorpusImportError, match="HATLAB_IMPORT_MAX_ROWS"):
        read_pairs(two, "csv", LABELS)


def test_uploads_over_the_size_cap_are_refused_unread(settings, api, researcher):  # noqa: F811
    settings.HATLAB_IMPORT_MAX_BYTES = 100
    big = rows_csv(10)
    assert len(big) > 100
    response = api.post("/api/datasets/", {"name": "big", "file": upload("big.csv", big)})
    assert response.status_code == 400
    assert "over the import limit of 100 bytes (HATLAB_IMPORT_MAX_BYTES)" in response.json()["file"][0]
    page = api.post(reverse("dataset-list"), {"name": "big page", "file": upload("big.csv", big)})
    assert "HATLAB_IMPORT_MAX_BYTES" in page.content.decode()
    assert not Dataset.objects.filter(name__startswith="big").exists()
    pairs = io.BytesIO(b"premise,hypothesis,label\n" + b"A b,C d,neutral\n" * 10)
    pairs.name = "pairs.csv"
    form = {"name": "pairs", "labels": ", ".join(LABELS), "annotators_per_item": 2, "time_limit_min": 20}
    page = api.post(reverse("nli-pair-import"), {**form, "provider": "local", "file": pairs})
    assert (
        "HATLAB_IMPORT_MAX_BYTES" in page.content.decode()
        and not Dataset.objects.filter(name="pairs").exists()
    )


def test_ids_are_checked_against_the_dataset_in_batches(researcher):
    """One query per BATCH_SIZE ids, so no query carries more variables than SQLite allows."""
    dataset = Dataset.objects.create(owner=researcher, name="many")
    n = 2 * BATCH_SIZE + 1
    with CaptureQueriesContext(connection) as queries:
        assert import_texts(dataset, rows_csv(n), "csv").documents == n
    lookups = [q["sql"] for q in queries if '"external_id" IN' in q["sql"]]
    assert len(lookups) == 3
