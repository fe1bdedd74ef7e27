"""Importing texts into datasets: CSV and JSONL files, and the raw YELP-HAT crowd output.

A text file holds one document per row (CSV) or line (JSONL) with the fields ``id``, ``text`` and
``label`` and optionally ``metadata`` (a JSON object); any other column or key is kept in the
metadata too. Everything is checked before anything is written: a bad byte, a missing field, an
empty text or a repeated id raises :class:`CorpusImportError` naming the line and the field, and
the documents are stored in one transaction with ``bulk_create`` in batches (all or nothing).

Imports are capped (settings ``HATLAB_IMPORT_MAX_*``, :func:`limits`): a file's bytes (checked before it
is read), its rows (reading stops at the first row past the cap), and each text's characters and words;
the error names the cap and the setting that raises it.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from annotate.infra.json_input import JSONInputError, find_unstorable, parse_json
from annotate.models import Dataset, Document

FORMATS = ("csv", "jsonl")
REQUIRED_FIELDS = ("id", "text", "label")
MAX_ID_LENGTH = 200
MAX_LABEL_LENGTH = 100
BATCH_SIZE = 1000


class CorpusImportError(ValueError):
    """A file that cannot be imported; ``line`` (1-based) and ``field`` say where. ``problems`` lists
    every problem found (this one alone, unless it is a :class:`CorpusImportProblems`)."""

    def __init__(self, line: int | None, field: str | None, message: str):
        self.line, self.field, self.message = line, field, message
        where = ", ".join(
            part for part in (f"line {line}" if line else "", f"field {field!r}" if field else "") if part
        )
        super().__init__(f"{where}: {message}" if where else message)

    @property
    def problems(self) -> list[CorpusImportError]:
        return [self]

    def sentences(self) -> list[str]:
        """Every problem as a line a page lists."""
        return [str(p) for p in self.problems]


#: At most this many problems of one file are listed; the rest are counted.
MAX_PROBLEMS = 50


class CorpusImportProblems(CorpusImportError):
    """Every problem found in one file (the first :data:`MAX_PROBLEMS`, in line order, and how many
    more), so that one upload shows them all."""

    def __init__(self, problems: Sequence[CorpusImportError]):
        ordered = sorted(problems, key=lambda p: p.line or 0)
        self.listed = ordered[:MAX_PROBLEMS]
        self.more = len(ordered) - len(self.listed)
        first = self.listed[0]
        count = f"{len(ordered)} problem{'s' if len(ordered) != 1 else ''}"
        super().__init__(None, None, f"{count}; the first: {first}")
        self.line, self.field = first.line, first.field

    @property
    def problems(self) -> list[CorpusImportError]:
        return list(self.listed)

    def sentences(self) -> list[str]:
        lines = [str(p) for p in self.listed]
        if self.more:
            lines.append(f"… and {self.more} more problem{'s' if self.more != 1 else ''} not listed.")
        return lines


def raise_problems(problems: Sequence[CorpusImportError]) -> None:
    """Raise every problem at once (the one alone, or a :class:`CorpusImportProblems`); nothing when none."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise CorpusImportProblems(problems)


@dataclass(frozen=True)
class ImportLimits:
    """The caps on one import (from the ``HATLAB_IMPORT_MAX_*`` settings)."""

    max_bytes: int
    max_rows: int
    max_chars: int
    max_words: int


def limits() -> ImportLimits:
    return ImportLimits(
        settings.HATLAB_IMPORT_MAX_BYTES,
        settings.HATLAB_IMPORT_MAX_ROWS,
        settings.HATLAB_IMPORT_MAX_CHARS,
        settings.HATLAB_IMPORT_MAX_WORDS,
    )


def check_file_size(size: int, field: str = "file") -> None:
    """Refuse a file larger than the import cap, before reading it."""
    cap = limits().max_bytes
    if size > cap:
        raise CorpusImportError(
            None, field, f"{size} bytes is over the import limit of {cap} bytes (HATLAB_IMPORT_MAX_BYTES)"
        )


def check_text(line: int, field: str, text: str) -> None:
    """Refuse a text longer than the caps on characters and on words (as whitespace separates them)."""
    cap = limits()
    if len(text) > cap.max_chars:
        raise CorpusImportError(
            line,
            field,
            f"{len(text)} characters is over the limit of {cap.max_chars} (HATLAB_IMPORT_MAX_CHARS)",
        )
    words = len(text.split())
    if words > cap.max_words:
        raise CorpusImportError(
            line, field, f"{words} words is over the limit of {cap.max_words} (HATLAB_IMPORT_MAX_WORDS)"
        )


@dataclass(frozen=True)
class TextRecord:
    """One document read from a file, not yet stored."""

    line: int
    id: str
    text: str
    label: str
    metadata: dict[str, Any]


def detect_format(filename: str) -> str:
    """``csv`` or ``jsonl`` from a file name's extension (``.json`` / ``.ndjson`` count as JSONL)."""
    suffix = Path(filename).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in {".jsonl", ".ndjson", ".json"}:
        return "jsonl"
    raise CorpusImportError(None, "format", f"cannot tell the format of {filename!r}; use .csv or .jsonl")


def _decode(data: bytes, fmt: str) -> str:
    """UTF-8 text of ``data``; a bad byte raises :class:`CorpusImportError` naming its line and field."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        prefix = data[: exc.start].decode("utf-8-sig", errors="replace")
        line = prefix.count("\n") + 1
        message = f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        raise CorpusImportError(line, _field_at_end(prefix, fmt), message) from None


def _field_at_end(prefix: str, fmt: str) -> str | None:
    """The field being read where ``prefix`` ends (for naming where a bad byte sits)."""
    if fmt == "csv":
        try:
            rows = list(csv.reader(io.StringIO(prefix, newline="")))
        except csv.Error:
            return None
        if len(rows) < 2 or prefix.endswith("\n"):
            return rows[0][0] if len(rows) >= 2 and rows[0] else None
        header, row = rows[0], rows[-1]
        return header[len(row) - 1] if 0 < len(row) <= len(header) else None
    keys = re.findall(r'"((?:[^"\\]|\\.)*)"\s*:', prefix.rsplit("\n", 1)[-1])
    return keys[-1] if keys else None


def _clean_record(line: int, values: dict[str, Any], present: Sequence[str]) -> TextRecord:
    """Check one row's fields and split off its metadata."""
    for name in REQUIRED_FIELDS:
        if name not in present:
            raise CorpusImportError(line, name, "missing")
    raw_id, text, label = values["id"], values["text"], values["label"]
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        raise CorpusImportError(line, "id", "must be a non-empty string or integer")
    doc_id = str(raw_id).strip()
    if len(doc_id) > MAX_ID_LENGTH:
        raise CorpusImportError(line, "id", f"longer than {MAX_ID_LENGTH} characters")
    if not isinstance(text, str) or not text.strip():
        raise CorpusImportError(line, "text", "must be a non-empty string")
    check_text(line, "text", text)
    if label is None:
        label = ""
    if isinstance(label, bool) or not isinstance(label, str | int):
        raise CorpusImportError(line, "label", "must be a string, an integer or empty")
    label = str(label).strip()
    if len(label) > MAX_LABEL_LENGTH:
        raise CorpusImportError(line, "label", f"longer than {MAX_LABEL_LENGTH} characters")
    metadata = values.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise CorpusImportError(line, "metadata", "must be a JSON object")
    extra = {k: v for k, v in values.items() if k not in (*REQUIRED_FIELDS, "metadata")}
    return TextRecord(line, doc_id, text, label, {**extra, **metadata})


def read_rows(
    text: str, fmt: str, required: Sequence[str], problems: list[CorpusImportError] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of a CSV file (a header row naming the columns, ``required`` among them) or a JSONL file
    (one JSON object a line) as ``(line, values)``, one at a time; blank rows are skipped. A CSV row's
    values hold only the cells it has. Errors name the line (and the column when one is missing); a row
    past the cap on rows stops the reading with an error. This is where every imported row is checked for
    what cannot be stored: a JSONL line is read by :func:`read_json`, and any row holding a NUL or a lone
    surrogate is refused naming the field.

    With a ``problems`` list, a bad row is added to it and skipped, and the reading goes on (a file that
    cannot be read on, such as one without its header, still raises at once)."""
    cap = limits().max_rows
    rows = _csv_rows(text, required) if fmt == "csv" else _jsonl_rows(text)
    for n, (line, values) in enumerate(rows, 1):
        if n > cap:
            raise CorpusImportError(
                line, None, f"more than {cap} rows: over the import limit (HATLAB_IMPORT_MAX_ROWS)"
            )
        try:
            if isinstance(values, CorpusImportError):
                raise values
            check_storable(line, values)
        except CorpusImportError as exc:
            if problems is None:
                raise
            problems.append(exc)
            continue
        yield line, values


#: A row as read: its line and its values, or the problem that makes it unreadable.
RawRow = tuple[int, "dict[str, Any] | CorpusImportError"]


def _csv_rows(text: str, required: Sequence[str]) -> Iterator[RawRow]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise CorpusImportError(
            1, None, "the file is empty (no header row): the first row must name the columns"
        ) from None
    except csv.Error as exc:
        raise CorpusImportError(1, None, f"the header row cannot be read ({exc})") from None
    for name in required:
        if name not in header:
            raise CorpusImportError(1, name, f"no {name!r} column; the header row has {header}")
    if len(set(header)) != len(header):
        raise CorpusImportError(1, None, f"repeated column names in the header {header}")
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CorpusImportError(start, None, f"this row cannot be read ({exc})") from None
        if any(cell.strip() for cell in row):
            if len(row) > len(header):
                yield (
                    start,
                    CorpusImportError(start, None, f"{len(row)} cells where the header names {len(header)}"),
                )
            else:
                yield start, dict(zip(header, row, strict=False))
        start = reader.line_num + 1


def read_json(line: int, raw: str, field: str | None = None) -> Any:
    """JSON from a file (a JSONL line, or a CSV cell named ``field``), read as the API reads a body
    (:func:`annotate.infra.json_input.parse_json`): nested at most ``HATLAB_JSON_MAX_DEPTH`` deep, no NaN,
    Infinity or number out of range, no NUL or lone surrogate; the error names the line and the field."""
    try:
        return parse_json(
            raw,
            max_bytes=limits().max_bytes,
            max_depth=settings.HATLAB_JSON_MAX_DEPTH,
            what="the line" if field is None else "the cell",
        )
    except JSONInputError as exc:
        inner = None if exc.field == "detail" else exc.field
        where = ".".join(part for part in (field, inner) if part) or None
        raise CorpusImportError(line, where, exc.message) from None


def check_storable(line: int, values: dict[str, Any]) -> None:
    """Refuse a row holding a value PostgreSQL cannot store (a NUL, a lone surrogate), naming its field."""
    problem = find_unstorable(values)
    if problem is not None:
        raise CorpusImportError(line, None if problem.field == "detail" else problem.field, problem.message)


def _jsonl_rows(text: str) -> Iterator[RawRow]:
    for line, raw in enumerate(io.StringIO(text), 1):
        if not raw.strip():
            continue
        try:
            values = read_json(line, raw)
        except CorpusImportError as exc:
            yield line, exc
            continue
        if not isinstance(values, dict):
            yield line, CorpusImportError(line, None, "each line must be a JSON object")
        else:
            yield line, values


def _csv_metadata(line: int, values: dict[str, Any]) -> dict[str, Any]:
    """A CSV row's ``metadata`` cell, which holds JSON, parsed."""
    if values.get("metadata", "").strip():
        values["metadata"] = read_json(line, values["metadata"], "metadata")
    return values


def clean_labels(labels: Sequence[str] | str | None) -> list[str]:
    """A label set as typed (comma-separated) or listed: stripped, empty ones and repeats dropped."""
    items = labels.split(",") if isinstance(labels, str) else list(labels or [])
    return list(dict.fromkeys(str(label).strip() for label in items if str(label).strip()))


def label_problems(records: Sequence[TextRecord], allowed: Sequence[str]) -> list[CorpusImportError]:
    """Rows whose label is empty or outside ``allowed`` (none when ``allowed`` is empty: a dataset
    without labels)."""
    if not allowed:
        return []
    named = ", ".join(allowed)
    problems = []
    for rec in records:
        if not rec.label:
            problems.append(
                CorpusImportError(
                    rec.line, "label", f"empty; every document of this dataset needs one of: {named}"
                )
            )
        elif rec.label not in allowed:
            problems.append(
                CorpusImportError(
                    rec.line, "label", f"{rec.label!r} is not one of the dataset's labels: {named}"
                )
            )
    return problems


def read_texts(data: bytes, fmt: str, labels: Sequence[str] | None = None) -> list[TextRecord]:
    """Parse and check a CSV or JSONL file's bytes; ids must be unique within the file. Every problem is
    found before any is raised (:class:`CorpusImportProblems`). With ``labels``, every document's label
    must be one of them; without, the labels the file uses are the set, and a document without a label
    among labelled ones is refused."""
    if fmt not in FORMATS:
        raise CorpusImportError(None, "format", f"must be one of {FORMATS}")
    check_file_size(len(data))
    text = _decode(data, fmt)
    problems: list[CorpusImportError] = []
    records: list[TextRecord] = []
    first_line: dict[str, int] = {}
    try:
        for line, values in read_rows(text, fmt, REQUIRED_FIELDS, problems):
            try:
                rec = _clean_record(
                    line, _csv_metadata(line, values) if fmt == "csv" else values, list(values)
                )
            except CorpusImportError as exc:
                problems.append(exc)
                continue
            if rec.id in first_line:
                problems.append(
                    CorpusImportError(rec.line, "id", f"{rec.id!r} repeats line {first_line[rec.id]}")
                )
            first_line.setdefault(rec.id, rec.line)
            records.append(rec)
    except CorpusImportError as exc:  # the file cannot be read on
        problems.append(exc)
    allowed = clean_labels(labels) or sorted({r.label for r in records if r.label})
    problems += label_problems(records, allowed)
    raise_problems(problems)
    if not records:
        raise CorpusImportError(None, None, "the file holds no documents")
    return records


def store_records(dataset: Dataset, records: Sequence[TextRecord]) -> int:
    """Add ``records`` to ``dataset`` in one transaction; every id already in the dataset is an error."""
    with transaction.atomic():
        Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        ids = [r.id for r in records]
        taken: set[str] = set()
        for start in range(0, len(ids), BATCH_SIZE):  # in batches: SQLite caps a query's variables
            chunk = ids[start : start + BATCH_SIZE]
            taken.update(
                Document.objects.filter(dataset=dataset, external_id__in=chunk).values_list(
                    "external_id", flat=True
                )
            )
        raise_problems(
            [
                CorpusImportError(rec.line, "id", f"{rec.id!r} is already in dataset {dataset.name!r}")
                for rec in records
                if rec.id in taken
            ]
        )
        documents = [
            Document.from_text(dataset, r.id, r.text, label=r.label, metadata=r.metadata) for r in records
        ]
        Document.objects.bulk_create(documents, batch_size=BATCH_SIZE)
        labels = sorted(set(dataset.labels or []) | {r.label for r in records if r.label})
        if labels != dataset.labels:
            dataset.labels = labels
            dataset.save(update_fields=["labels"])
    return len(documents)


@dataclass(frozen=True)
class Imported:
    """What one import added: how many documents, and how many of each label."""

    documents: int
    labels: dict[str, int]

    def sentence(self, dataset_name: str) -> str:
        """``Imported 3 documents into reviews, labelled negative (1), positive (2).``"""
        noun = "document" if self.documents == 1 else "documents"
        text = f"Imported {self.documents} {noun} into {dataset_name}"
        if self.labels:
            text += ", labelled " + ", ".join(f"{label} ({n})" for label, n in self.labels.items())
        else:
            text += ", without labels"
        return text + "."


def import_texts(
    dataset: Dataset, data: bytes, fmt: str, labels: Sequence[str] | str | None = None
) -> Imported:
    """Import a CSV or JSONL file's bytes into ``dataset``. The label set is ``labels`` when given, else
    the dataset's own when it has one, else the labels the file uses; a document with an empty label or
    one outside the set is refused (a dataset whose documents have no labels at all is fine)."""
    allowed = clean_labels(labels) or list(dataset.labels or [])
    records = read_texts(data, fmt, allowed)
    count = store_records(dataset, records)
    tally: dict[str, int] = {}
    for rec in sorted(records, key=lambda r: r.label):
        if rec.label:
            tally[rec.label] = tally.get(rec.label, 0) + 1
    return Imported(count, tally)
