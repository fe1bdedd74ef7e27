"""Records from JSONL and CSV files (the corpus export and the YELP-HAT conversion output).

A record is a dict with ``id`` (str), ``text`` (str, at least one word) and ``label`` (str, or
None when labels are optional); every other field of the input (``words``, ``annotations``,
``metadata`` …) is kept as it is. Errors name the file, the line and the field.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path


def _record(
    raw: dict,
    where: str,
    fallback_id: str,
    text_field: str,
    label_field: str,
    id_field: str,
    require_label: bool,
) -> dict:
    text = raw.get(text_field)
    if text is None:
        raise ValueError(f"{where}: missing field {text_field!r}")
    if not isinstance(text, str):
        raise ValueError(f"{where}: field {text_field!r} must be a string, got {type(text).__name__}")
    if not text.split():
        raise ValueError(f"{where}: field {text_field!r} has no words")
    label = raw.get(label_field)
    if label is None or label == "":
        if require_label:
            raise ValueError(f"{where}: missing field {label_field!r}")
        label = None
    elif isinstance(label, (dict, list)):
        raise ValueError(f"{where}: field {label_field!r} must be a string or a number")
    ident = raw.get(id_field)
    rest = {k: v for k, v in raw.items() if k not in (text_field, label_field, id_field)}
    return {
        **rest,
        "id": fallback_id if ident in (None, "") else str(ident),
        "text": text,
        "label": None if label is None else str(label),
    }


def _unique(records: Iterator[tuple[str, dict]]) -> list[dict]:
    seen: dict[str, str] = {}
    out = []
    for where, rec in records:
        if rec["id"] in seen:
            raise ValueError(f"{where}: id {rec['id']!r} already used at {seen[rec['id']]}")
        seen[rec["id"]] = where
        out.append(rec)
    return out


def json_lines(path: str | Path) -> Iterator[tuple[str, object]]:
    """``(where, value)`` for each non-blank line of a JSON-lines file, ``where`` being ``"path:line"``;
    a line that is not JSON raises ``ValueError`` naming it."""
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: invalid JSON ({exc.msg})") from None


def read_jsonl(
    path: str | Path,
    text_field: str = "text",
    label_field: str = "label",
    id_field: str = "id",
    require_label: bool = True,
) -> list[dict]:
    """One JSON object per line (blank lines skipped); a missing ``id`` becomes the line number."""
    path = Path(path)

    def rows() -> Iterator[tuple[str, dict]]:
        for where, raw in json_lines(path):
            if not isinstance(raw, dict):
                raise ValueError(f"{where}: expected a JSON object, got {type(raw).__name__}")
            lineno = where.rsplit(":", 1)[1]
            yield where, _record(raw, where, lineno, text_field, label_field, id_field, require_label)

    return _unique(rows())


def read_csv(
    path: str | Path,
    text_field: str = "text",
    label_field: str = "label",
    id_field: str = "id",
    require_label: bool = True,
    delimiter: str = ",",
) -> list[dict]:
    """A CSV (or, with ``delimiter='\\t'``, TSV) file with a header row naming the fields."""
    path = Path(path)

    def rows() -> Iterator[tuple[str, dict]]:
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter=delimiter)
            header = reader.fieldnames or []
            if text_field not in header:
                raise ValueError(
                    f"{path}:1: header has no column {text_field!r} (columns: {', '.join(header)})"
                )
            if require_label and label_field not in header:
                raise ValueError(
                    f"{path}:1: header has no column {label_field!r} (columns: {', '.join(header)})"
                )
            for n, raw in enumerate(reader, start=1):
                where = f"{path}:{reader.line_num}"
                if None in raw:
                    raise ValueError(f"{where}: more values than header columns")
                yield where, _record(raw, where, str(n), text_field, label_field, id_field, require_label)

    return _unique(rows())
