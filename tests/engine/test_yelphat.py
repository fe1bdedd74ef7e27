"""YELP-HAT raw CSV conversion (Sen et al. 2020): real files against PROVENANCE.md, and the error paths."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from explain_engine.__main__ import main
from explain_engine.datasets.yelphat import (
    MalformedCSVError,
    convert,
    parse_html_map,
    parse_html_spans,
    read_maps_jsonl,
    read_raw,
)
from tests.conftest import require_shared_data

# file: (reviews, answers, maps-per-review histogram, mean words highlighted per map)
EXPECTED = {
    "ham_part1(50words).csv": (300, 900, {3: 300}, 12.8),
    "ham_part2(50words).csv": (610, 1590, {3: 436, 2: 108, 1: 66}, 10.7),
    "ham_part6(100words).csv": (439, 1314, {3: 437, 2: 1, 1: 1}, 16.2),
    "ham_part7.csv": (625, 2096, {4: 351, 3: 144, 2: 130}, 7.6),
    "ham_part8(200words).csv": (181, 543, {3: 181}, 24.7),
}
HEADER = "Input.label,Input.text,Answer.Q1Answer,Answer.html_output\n"


def _html(words: list[str], active: set[int]) -> str:
    spans = [
        f'<span class=""active"">{w}</span>' if i in active else f"<span>{w}</span>"
        for i, w in enumerate(words)
    ]
    return '"' + " ".join(spans) + ' <span></span>"'


@pytest.fixture(scope="module")
def converted():
    raw = require_shared_data("yelp-hat", "raw")
    paths = [raw / name for name in EXPECTED]
    return convert(paths)


def test_counts_per_file_match_provenance(converted):
    records, report = converted
    by_file = {f.file: f for f in report.files}
    assert set(by_file) == set(EXPECTED)
    for name, (reviews, answers, hist, mean) in EXPECTED.items():
        counts = by_file[name]
        assert (counts.reviews, counts.answers, counts.maps) == (reviews, answers, answers)
        recs = [r for r in records if r["source"]["file"] == name]
        assert len(recs) == reviews
        assert dict(Counter(len(r["annotations"]) for r in recs)) == hist
        maps = [a["map"] for r in recs for a in r["annotations"]]
        assert round(sum(map(sum, maps)) / len(maps), 1) == mean
        assert round(counts.mean_highlighted, 1) == mean
    assert report.mismatches == []
    assert report.reviews == 2155 and report.answers == report.maps == 6443


def test_words_and_map_lengths(converted):
    records, _ = converted
    for rec in records:
        words = [rec["text"][s:e] for s, e in rec["words"]]
        assert words == rec["text"].split()
        assert all(len(a["map"]) == len(words) for a in rec["annotations"])
        assert all(set(a["map"]) <= {0, 1} for a in rec["annotations"])
    part1 = [r for r in records if r["source"]["file"].startswith("ham_part1")]
    assert {len(r["words"]) for r in part1} == {50}
    part8 = [r for r in records if r["source"]["file"].startswith("ham_part8")]
    assert {len(r["words"]) for r in part8} == {200}


def test_labels_and_ids(converted):
    records, _ = converted
    part1 = [r for r in records if r["source"]["file"] == "ham_part1(50words).csv"]
    answers = Counter(a["label"] for r in part1 for a in r["annotations"])
    assert answers == {"negative": 441, "positive": 425, "cannot decide": 31, None: 3}
    assert Counter(r["label"] for r in part1) == {0: 155, 1: 145}
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids)
    assert part1[0]["id"] == "ham_part1(50words):1"
    assert part1[0]["source"]["rows"] == [2, 3, 4]
    assert part1[0]["text"].startswith("Out in Twinsburg")
    first_map = part1[0]["annotations"][0]["map"]
    words = part1[0]["text"].split()
    assert [w for w, m in zip(words, first_map, strict=True) if m] == [
        "glad",
        "very",
        "friendly.",
        "presentation",
        "flavors",
        "great.",
    ]


def test_read_raw_is_stable(converted):
    raw = require_shared_data("yelp-hat", "raw")
    again = read_raw(raw / "ham_part8(200words).csv")
    first = [r for r in converted[0] if r["source"]["file"] == "ham_part8(200words).csv"]
    assert again == first


def test_parse_html_map_variants():
    html = '<span>Good</span> <span class="active">food</span> <span class="">&amp;</span> <span></span>'
    assert parse_html_map(html) == [0, 1, 0]
    assert parse_html_spans(html) == [("Good", 0), ("food", 1), ("&", 0)]
    # markup a browser extension left inside a span; no trailing empty span
    html = '<span class="active"><i class="ext">love</i></span> <span>it</span>'
    assert parse_html_spans(html) == [("love", 1), ("it", 0)]
    assert parse_html_map("") == []
    assert parse_html_map('<span CLASS="x active">a</span>') == [1]
    assert parse_html_map('<span class="inactive">a</span>') == [0]


def test_synthetic_grouping_mismatch_and_labels(tmp_path: Path):
    text = "Great food and nice staff"
    other = "Awful service never again"
    rows = [
        f"1,{text},yes,{_html(text.split(), {0, 1})}",
        f"1,{text},IDK,{_html(text.split(), set())}",
        f"0,{other},no,{_html(other.split(), {0, 2})}",
        f"1,{text},,{_html(text.split()[:3], {0})}",  # 3 spans for 5 words: left out
        f"0,{text},yes,{_html(text.split(), {4})}",  # gold label differs from the first row
    ]
    path = tmp_path / "part.csv"
    path.write_text(HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    records, report = convert([path])
    assert [r["id"] for r in records] == ["part:1", "part:2"]
    great, awful = records
    assert great["label"] == 1 and awful["label"] == 0
    assert [a["label"] for a in great["annotations"]] == ["positive", "cannot decide", "positive"]
    assert great["annotations"][0]["map"] == [1, 1, 0, 0, 0]
    assert great["source"]["rows"] == [2, 3, 6]
    assert awful["annotations"][0]["map"] == [1, 0, 1, 0]
    assert [(m.row, m.kept) for m in report.mismatches] == [(5, False), (6, True)]
    assert "3 word spans" in report.mismatches[0].why and "5 words" in report.mismatches[0].why
    assert "Input.label" in report.mismatches[1].why
    assert (report.reviews, report.answers, report.maps) == (2, 5, 4)
    assert "mismatches: 2" in report.summary()


def test_multiline_text_rows_are_counted_as_rows(tmp_path: Path):
    text = "Nice place.\nBad parking."
    html = _html(text.split(), {0})
    path = tmp_path / "multi.csv"
    path.write_text(HEADER + f'1,"{text}",yes,{html}\n1,"{text}",badvalue,{html}\n', encoding="utf-8")
    with pytest.raises(MalformedCSVError) as err:
        read_raw(path)
    assert (err.value.row, err.value.line, err.value.column) == (3, 4, "Answer.Q1Answer")
    assert "multi.csv" in str(err.value) and "row 3" in str(err.value)


def test_missing_column(tmp_path: Path):
    path = tmp_path / "nocol.csv"
    path.write_text("Input.label,Input.text,Answer.html_output\n1,good,<span>good</span>\n", encoding="utf-8")
    with pytest.raises(MalformedCSVError) as err:
        read_raw(path)
    assert err.value.row == 1 and err.value.column == "Answer.Q1Answer"
    assert "nocol.csv" in str(err.value) and "missing column" in str(err.value)


def test_bad_encoding_names_row_and_column(tmp_path: Path):
    good = f"1,Tasty food,yes,{_html(['Tasty', 'food'], {0})}\n"
    bad = "0,Na\xefve service,no,<span>Na\xefve</span>\n".encode("latin-1")
    path = tmp_path / "latin.csv"
    path.write_bytes((HEADER + good).encode() + bad)
    with pytest.raises(MalformedCSVError) as err:
        read_raw(path)
    assert (err.value.row, err.value.column, err.value.line) == (3, "Input.text", 3)
    assert "not UTF-8" in str(err.value) and "0xef" in str(err.value)


def test_bad_gold_label_and_field_count(tmp_path: Path):
    path = tmp_path / "label.csv"
    path.write_text(HEADER + f"5,Tasty,yes,{_html(['Tasty'], set())}\n", encoding="utf-8")
    with pytest.raises(MalformedCSVError) as err:
        read_raw(path)
    assert (err.value.row, err.value.column) == (2, "Input.label")
    path.write_text(HEADER + "1,Tasty,yes\n", encoding="utf-8")
    with pytest.raises(MalformedCSVError) as err:
        read_raw(path)
    assert (err.value.row, err.value.column) == (2, "Answer.html_output")
    assert "3 fields" in str(err.value)
    path.write_text(HEADER + "1,,yes,<span></span>\n", encoding="utf-8")
    with pytest.raises(MalformedCSVError, match="empty review text"):
        read_raw(path)


def test_cli_convert_writes_jsonl_and_reports(tmp_path: Path, capsys):
    text = "The food was great and cheap"
    path = tmp_path / "cli.csv"
    path.write_text(
        HEADER + f"1,{text},yes,{_html(text.split(), {0})}\n1,{text},no,{_html(text.split(), {3, 4})}\n",
        encoding="utf-8",
    )
    out = tmp_path / "maps.jsonl"
    assert main(["yelphat", "convert", str(path), "--out", str(out), "--json", "--pos"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["reviews"], report["answers"], report["maps"]) == (1, 2, 2)
    (rec,) = read_maps_jsonl(out)
    assert rec["words"] == [[0, 3], [4, 8], [9, 12], [13, 18], [19, 22], [23, 28]]
    assert [a["label"] for a in rec["annotations"]] == ["positive", "negative"]
    assert rec["annotations"][1]["map"] == [0, 0, 0, 1, 1, 0]
    assert rec["pos"] == ["DT", "NN", "VBD", "JJ", "CC", "JJ"]

    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n", encoding="utf-8")
    assert main(["yelphat", "convert", str(bad), "--out", str(out)]) == 2
    assert "bad.csv: row 1" in capsys.readouterr().err


def test_read_maps_jsonl_rejects_bad_lines(tmp_path: Path):
    path = tmp_path / "m.jsonl"
    path.write_text(
        '{"id": "a", "text": "x y", "words": [[0,1],[2,3]], "label": 1, "annotations": [{"map": [1]}]}\n'
    )
    with pytest.raises(ValueError, match="m.jsonl:1: annotation 0 has 1 map entries for 2 words"):
        read_maps_jsonl(path)
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match=":1: invalid JSON"):
        read_maps_jsonl(path)
