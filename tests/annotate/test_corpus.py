"""Importing texts from CSV and JSONL: offsets fixed at import, errors naming line and field, all or nothing."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotate.corpus.imports import CorpusImportError, detect_format, import_texts, read_texts
from annotate.models import Dataset, Document
from explain_engine.api import sentence_spans, word_spans

pytestmark = pytest.mark.django_db

CSV = (
    b"id,text,label,stars,metadata\n"
    b'r1,"Great  food. Lovely staff!",positive,5,"{""city"": ""Leeds""}"\n'
    b'r2,"Cold soup.\nRude waiter.",negative,1,\n'
    b'r3,"Fine I guess",positive,3,\n'
)


@pytest.fixture
def empty(researcher) -> Dataset:
    return Dataset.objects.create(owner=researcher, name="target")


def test_csv_import_stores_words_as_offsets(empty):
    assert import_texts(empty, CSV, "csv").documents == 3
    docs = {d.external_id: d for d in Document.objects.filter(dataset=empty)}
    r1, r2, r3 = docs["r1"], docs["r2"], docs["r3"]
    assert r1.words == [list(s) for s in word_spans(r1.text)]
    assert r1.word_strings == ["Great", "food.", "Lovely", "staff!"]
    assert r1.words[1] == [7, 12]  # offsets survive the double space
    assert r2.text == "Cold soup.\nRude waiter."
    assert r2.sentences == [list(s) for s in sentence_spans(r2.text, word_spans(r2.text))] == [[0, 2], [2, 4]]
    assert (r1.label, r2.label, r3.label) == ("positive", "negative", "positive")
    assert r1.metadata == {"stars": "5", "city": "Leeds"}
    empty.refresh_from_db()
    assert empty.labels == ["negative", "positive"]


def test_jsonl_import_keeps_metadata_and_integer_labels(empty):
    lines = [
        {"id": 7, "text": "good", "label": 1, "metadata": {"split": "train"}, "source": "web"},
        {"id": "8", "text": "bad", "label": 0},
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode() + b"\n\n"
    assert import_texts(empty, data, "jsonl").documents == 2
    doc = Document.objects.get(dataset=empty, external_id="7")
    assert (doc.label, doc.metadata) == ("1", {"split": "train", "source": "web"})


@pytest.mark.parametrize(
    ("data", "fmt", "line", "field"),
    [
        (b"id,text\nr1,hello\n", "csv", 1, "label"),
        (b"id,text,label\nr1,hello,pos\nr2,hello\n", "csv", 3, "label"),
        (b"id,text,label\nr1,hello,pos\nr2,   ,pos\n", "csv", 3, "text"),
        (b"id,text,label\nr1,hello,pos\nr1,again,neg\n", "csv", 3, "id"),
        (b'id,text,label,metadata\nr1,hi,pos,"[1]"\n', "csv", 2, "metadata"),
        (b'id,text,label,metadata\nr1,hi,pos,"{bad"\n', "csv", 2, "metadata"),
        (b'{"id": "a", "text": "x", "label": "p"}\n{"id": "b", "label": "p"}\n', "jsonl", 2, "text"),
        (b'{"id": "a", "text": "x"}\n', "jsonl", 1, "label"),
        (b'{"id": "a", "text": "x", "label": ["p"]}\n', "jsonl", 1, "label"),
        (b'{"id": true, "text": "x", "label": "p"}\n', "jsonl", 1, "id"),
        (b'{"id": "a", "text": "x", "label": "' + b"p" * 101 + b'"}\n', "jsonl", 1, "label"),
    ],
)
def test_bad_rows_name_line_and_field(empty, data, fmt, line, field):
    with pytest.raises(CorpusImportError) as exc:
        import_texts(empty, data, fmt)
    assert (exc.value.line, exc.value.field) == (line, field)
    assert f"line {line}" in str(exc.value) and repr(field) in str(exc.value)
    assert not Document.objects.filter(dataset=empty).exists()


def test_unreadable_json_names_the_line(empty):
    with pytest.raises(CorpusImportError) as exc:
        import_texts(empty, b'{"id": "a", "text": "x", "label": "p"}\n{not json}\n', "jsonl")
    assert exc.value.line == 2 and "not valid JSON" in exc.value.message


def test_bad_encoding_names_line_and_field(empty):
    csv_bytes = b'id,text,label\nr1,fine,pos\nr2,"caf\xe9 au lait",pos\n'
    with pytest.raises(CorpusImportError) as exc:
        import_texts(empty, csv_bytes, "csv")
    assert (exc.value.line, exc.value.field) == (3, "text")
    assert "UTF-8" in exc.value.message
    jsonl = b'{"id": "a", "text": "x", "label": "p"}\n{"id": "b", "text": "\xff", "label": "p"}\n'
    with pytest.raises(CorpusImportError) as exc:
        import_texts(empty, jsonl, "jsonl")
    assert (exc.value.line, exc.value.field) == (2, "text")


def test_nothing_is_half_imported(empty):
    rows = "".join(f"r{i},text number {i},pos\n" for i in range(50))
    with pytest.raises(CorpusImportError):
        import_texts(empty, f"id,text,label\n{rows}r50,,pos\n".encode(), "csv")
    assert Document.objects.count() == 0


def test_ids_already_in_the_dataset_are_refused(empty):
    import_texts(empty, b"id,text,label\nr1,one,pos\n", "csv")
    with pytest.raises(CorpusImportError) as exc:
        import_texts(empty, b"id,text,label\nr2,two,pos\nr1,again,pos\n", "csv")
    assert (exc.value.line, exc.value.field) == (3, "id")
    assert Document.objects.filter(dataset=empty).count() == 1


def test_empty_files_and_formats():
    with pytest.raises(CorpusImportError, match="no documents"):
        read_texts(b"id,text,label\n", "csv")
    with pytest.raises(CorpusImportError, match="no header"):
        read_texts(b"", "csv")
    assert detect_format("a.CSV") == "csv" and detect_format("b.jsonl") == "jsonl"
    with pytest.raises(CorpusImportError):
        detect_format("c.xlsx")
    with pytest.raises(CorpusImportError):
        read_texts(b"x", "xml")


def test_import_texts_command(researcher, tmp_path):
    path = tmp_path / "texts.csv"
    path.write_bytes(CSV)
    call_command("import_texts", str(path), "--dataset", "cmd", "--owner", researcher.username)
    dataset = Dataset.objects.get(name="cmd", owner=researcher)
    assert dataset.documents.count() == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "z", "label": "p"}\n')
    with pytest.raises(CommandError, match="line 1, field 'text'"):
        call_command("import_texts", str(bad), "--dataset", "cmd", "--owner", researcher.username)
    with pytest.raises(CommandError, match="no user"):
        call_command("import_texts", str(path), "--dataset", "cmd", "--owner", "nobody")
    assert dataset.documents.count() == 3
