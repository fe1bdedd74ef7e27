"""YELP-HAT raw Mechanical Turk output (Sen et al. 2020 Sen et al. 2020) as one record per review.

The raw CSVs hold ONE ROW PER WORKER ANSWER with the columns ``Input.label`` (Yelp label, 0 = 1–2
stars, 1 = 4–5 stars), ``Input.text`` (the review), ``Answer.Q1Answer`` (the worker's own judgement:
``yes`` / ``no`` / ``idk`` / empty) and ``Answer.html_output`` (the worker's attention map: one
``<span>`` per whitespace word, ``class="active"`` when highlighted, plus a trailing empty span).

:func:`read_raw` groups the rows of a file by exact review text and returns records::

    {"id": "ham_part1(50words):1", "text": ..., "words": [[start, end], ...], "label": 0 | 1,
     "annotations": [{"label": "positive" | "negative" | "cannot decide" | None, "map": [0, 1, ...]}],
     "source": {"file": "ham_part1(50words).csv", "rows": [2, 3, 4]}}

``words`` are the canonical words (:func:`explain_engine.text.word_spans`, i.e. ``text.split()``);
every map has one entry per word. An answer whose map length differs from the word count is left out
and listed in the :class:`ConversionReport`. Rows are numbered as a spreadsheet shows them: the
header is row 1, the first answer row 2 (a review text may span several physical lines).
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

from explain_engine.datasets.jsonl import json_lines
from explain_engine.text import word_spans

COLUMNS = ("Input.label", "Input.text", "Answer.Q1Answer", "Answer.html_output")
ANSWER_LABELS: dict[str, str | None] = {
    "yes": "positive",
    "no": "negative",
    "idk": "cannot decide",
    "": None,
}
LABEL_CATEGORIES = ("positive", "negative", "cannot decide")
GOLD_LABELS = {"0": 0, "1": 1}

_SPAN = re.compile(r"<span\b([^>]*)>(.*?)</span\s*>", re.IGNORECASE | re.DOTALL)
_ACTIVE = re.compile(r"""\bclass\s*=\s*["'][^"']*\bactive\b""", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


class MalformedCSVError(ValueError):
    """A raw file that cannot be read: names the file, the row and the column at fault."""

    def __init__(self, path: str | Path, row: int, column: str | None, why: str, line: int | None = None):
        self.path, self.row, self.column, self.why, self.line = str(path), row, column, why, line
        where = f"row {row}" + (f" (line {line})" if line is not None else "")
        col = f", column {column!r}" if column else ""
        super().__init__(f"{path}: {where}{col}: {why}")


@dataclass
class Mismatch:
    """One answer whose map does not fit its review (``kept`` says whether the map was still used)."""

    file: str
    row: int
    why: str
    kept: bool = False


@dataclass
class FileCounts:
    file: str
    reviews: int
    answers: int
    maps: int
    mean_highlighted: float


@dataclass
class ConversionReport:
    """What a conversion read: per file reviews, answers, kept maps, and every mismatch."""

    files: list[FileCounts] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def reviews(self) -> int:
        return sum(f.reviews for f in self.files)

    @property
    def answers(self) -> int:
        return sum(f.answers for f in self.files)

    @property
    def maps(self) -> int:
        return sum(f.maps for f in self.files)

    def to_dict(self) -> dict:
        return {
            "reviews": self.reviews,
            "answers": self.answers,
            "maps": self.maps,
            "files": [asdict(f) for f in self.files],
            "mismatches": [asdict(m) for m in self.mismatches],
        }

    def summary(self) -> str:
        """A human-readable table of the counts, followed by the mismatches."""
        name_w = max([len(f.file) for f in self.files] + [4])
        lines = [f"{'file':<{name_w}}  reviews  answers     maps  mean highlighted"]
        for f in self.files:
            lines.append(
                f"{f.file:<{name_w}}  {f.reviews:7d}  {f.answers:7d}  {f.maps:7d}  {f.mean_highlighted:16.2f}"
            )
        lines.append(f"{'total':<{name_w}}  {self.reviews:7d}  {self.answers:7d}  {self.maps:7d}")
        lines.append(f"mismatches: {len(self.mismatches)}")
        lines.extend(
            f"  {m.file} row {m.row}: {m.why}" + (" (map kept)" if m.kept else " (map left out)")
            for m in self.mismatches
        )
        return "\n".join(lines)


def parse_html_spans(html_output: str) -> list[tuple[str, int]]:
    """The ``(word, highlighted)`` pairs of an ``Answer.html_output`` value.

    One pair per ``<span>``; markup inside a span (browser extensions left ``<i>`` tags in a few
    answers) is removed and HTML entities are decoded. The trailing empty span the task page
    appends is dropped; a highlighted word is one whose span has ``class="active"``.
    """
    spans = [
        (html.unescape(_TAG.sub("", inner)), 1 if _ACTIVE.search(attrs) else 0)
        for attrs, inner in _SPAN.findall(html_output)
    ]
    if spans and spans[-1][0] == "":
        spans.pop()
    return spans


def parse_html_map(html_output: str) -> list[int]:
    """The binary human attention map (0/1 per word) of an ``Answer.html_output`` value (Sen et al. 2020 §3)."""
    return [active for _, active in parse_html_spans(html_output)]


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 text of ``data``; on a bad byte, a :class:`MalformedCSVError` naming its row and column."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        prefix = data[: exc.start].decode("utf-8-sig", errors="replace")
        line = prefix.count("\n") + 1
        why = f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        try:
            records = list(csv.reader(io.StringIO(prefix)))
        except csv.Error:
            raise MalformedCSVError(path, line, None, why, line=line) from exc
        header = records[0] if records else []
        if not records or prefix.endswith("\n"):
            row, n_fields = len(records) + 1, 1
        else:
            row, n_fields = len(records), len(records[-1])
        column = header[n_fields - 1] if 0 < n_fields <= len(header) else None
        raise MalformedCSVError(path, row, column, why, line=line) from exc


def _iter_rows(path: Path, text: str) -> Iterable[tuple[int, int, dict[str, str]]]:
    """``(row, line, values)`` for each data row, checking the header and the field count."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise MalformedCSVError(path, 1, None, "empty file (no header)", line=1) from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise MalformedCSVError(
            path, 1, ", ".join(missing), f"missing column(s); the header has {header}", line=1
        )
    row, line = 1, reader.line_num + 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise MalformedCSVError(path, row + 1, None, f"unreadable CSV ({exc})", line=line) from exc
        row += 1
        if not fields:
            line = reader.line_num + 1
            continue
        if len(fields) != len(header):
            column = header[len(fields)] if len(fields) < len(header) else f"#{len(header) + 1}"
            why = f"{len(fields)} fields where the header has {len(header)}"
            raise MalformedCSVError(path, row, column, why, line=line)
        yield row, line, dict(zip(header, fields, strict=True))
        line = reader.line_num + 1


def _read_file(path: Path, report: ConversionReport, progress: bool | None) -> list[dict]:
    text = _decode(path, path.read_bytes())
    stem, name = path.stem, path.name
    records: list[dict] = []
    by_text: dict[str, dict] = {}
    answers = maps = highlighted = 0
    disable = None if progress is None else not progress  # None: tqdm shows the bar only on a terminal
    rows = tqdm(_iter_rows(path, text), desc=name, unit=" answers", disable=disable, leave=False)
    for row, line, values in rows:
        gold_raw = values["Input.label"].strip()
        if gold_raw not in GOLD_LABELS:
            raise MalformedCSVError(path, row, "Input.label", f"{gold_raw!r} is not 0 or 1", line=line)
        answer_raw = values["Answer.Q1Answer"].strip().lower()
        if answer_raw not in ANSWER_LABELS:
            why = f"{values['Answer.Q1Answer']!r} is not one of yes / no / idk / empty"
            raise MalformedCSVError(path, row, "Answer.Q1Answer", why, line=line)
        review = values["Input.text"]
        if not review.strip():
            raise MalformedCSVError(path, row, "Input.text", "empty review text", line=line)
        answers += 1
        record = by_text.get(review)
        if record is None:
            spans = word_spans(review)
            record = {
                "id": f"{stem}:{len(records) + 1}",
                "text": review,
                "words": [list(s) for s in spans],
                "label": GOLD_LABELS[gold_raw],
                "annotations": [],
                "source": {"file": name, "rows": []},
            }
            by_text[review] = record
            records.append(record)
        elif GOLD_LABELS[gold_raw] != record["label"]:
            first = record["source"]["rows"][0] if record["source"]["rows"] else "?"
            why = f"Input.label {gold_raw} differs from {record['label']} on row {first} of the same review"
            report.mismatches.append(Mismatch(name, row, why, kept=True))
        spans_html = parse_html_spans(values["Answer.html_output"])
        words = review.split()
        if len(spans_html) != len(words):
            why = f"Answer.html_output has {len(spans_html)} word spans, Input.text has {len(words)} words"
            report.mismatches.append(Mismatch(name, row, why))
            continue
        differing = [i for i, (w, (hw, _)) in enumerate(zip(words, spans_html, strict=True)) if w != hw]
        if differing:
            i = differing[0]
            why = f"{len(differing)} span word(s) differ from the text, first #{i}: {spans_html[i][0]!r} vs {words[i]!r}"
            report.mismatches.append(Mismatch(name, row, why, kept=True))
        attention = [active for _, active in spans_html]
        record["annotations"].append({"label": ANSWER_LABELS[answer_raw], "map": attention})
        record["source"]["rows"].append(row)
        maps += 1
        highlighted += sum(attention)
    mean = highlighted / maps if maps else 0.0
    report.files.append(FileCounts(name, len(records), answers, maps, round(mean, 4)))
    return records


def convert(
    paths: Sequence[str | Path], progress: bool | None = False
) -> tuple[list[dict], ConversionReport]:
    """Read raw YELP-HAT CSVs; return the review records and a :class:`ConversionReport`.

    ``progress``: ``True`` shows a tqdm bar per file, ``None`` shows it only on a terminal.
    Raises :class:`MalformedCSVError` (a ``ValueError``) on a file that cannot be read, and
    ``FileNotFoundError`` on a missing one.
    """
    report = ConversionReport()
    records: list[dict] = []
    for p in paths:
        records.extend(_read_file(Path(p), report, progress))
    return records, report


def read_raw(paths: Sequence[str | Path] | str | Path, progress: bool | None = False) -> list[dict]:
    """The review records of one or more raw YELP-HAT CSVs (see the module docstring)."""
    if isinstance(paths, str | Path):
        paths = [paths]
    return convert(paths, progress=progress)[0]


def write_maps_jsonl(records: Iterable[dict], path: str | Path) -> int:
    """Write records as JSON lines (UTF-8); return how many were written."""
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for rec in records:
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_maps_jsonl(path: str | Path) -> list[dict]:
    """Records written by ``yelphat convert`` (one JSON object per line), checked for the fields used.

    Each record needs ``id``, ``text``, ``words``, ``label`` and ``annotations`` with one map
    entry per word; a bad line raises ``ValueError`` naming the file and line.
    """
    records = []
    for where, rec in json_lines(path):
        missing = [
            k
            for k in ("id", "text", "words", "label", "annotations")
            if not isinstance(rec, dict) or k not in rec
        ]
        if missing:
            raise ValueError(f"{where}: missing field(s) {missing}")
        assert isinstance(rec, dict)
        n = len(rec["words"])
        for a, ann in enumerate(rec["annotations"]):
            if len(ann.get("map", ())) != n:
                why = f"annotation {a} has {len(ann.get('map', ()))} map entries for {n} words"
                raise ValueError(f"{where}: {why}")
        records.append(rec)
    return records
