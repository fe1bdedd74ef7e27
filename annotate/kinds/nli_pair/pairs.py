"""Importing NLI pairs from CSV or JSONL: one pair per row (CSV) or line (JSONL).

Fields: ``premise`` and ``hypothesis`` (non-empty texts), ``label`` (optional: empty, or one of the
study's labels), ``id`` (optional: ``pair-<line>`` when missing) and ``gold`` (optional: a JSON
object ``{"label", "premise_map", "hypothesis_map"}``, checked when the study's items are built).
Any other field is kept in the pair's metadata. Everything is checked before anything is stored; a
problem raises :class:`~annotate.corpus.imports.CorpusImportError` saying in plain words which line and
field are wrong (every problem of the file at once). A pair is stored as a Document whose text is the premise (its canonical words are
the premise's) and whose ``metadata["hypothesis"]`` is the hypothesis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate.corpus.imports import (
    FORMATS,
    MAX_ID_LENGTH,
    CorpusImportError,
    TextRecord,
    check_file_size,
    check_text,
    raise_problems,
    read_json,
    read_rows,
    store_records,
)
from annotate.kinds.nli_pair.config import GOLD_FIELD, HYPOTHESIS_FIELD
from annotate.models import Dataset
from explain_engine.api import word_spans

REQUIRED = ("premise", "hypothesis")
KNOWN = ("id", "premise", "hypothesis", "label", GOLD_FIELD)


def _clean_pair(line: int, values: dict[str, Any], labels: Sequence[str]) -> TextRecord:
    """Check one pair's fields and turn it into a record (premise as text, hypothesis in metadata)."""
    for name in REQUIRED:
        text = values.get(name)
        if name not in values:
            raise CorpusImportError(line, name, f"missing: every pair needs a {name}")
        if not isinstance(text, str) or not word_spans(text):
            raise CorpusImportError(line, name, f"the {name} is empty; write at least one word")
        check_text(line, name, text)
    raw_id = values.get("id")
    if raw_id is None or str(raw_id).strip() == "":
        pair_id = f"pair-{line}"
    elif isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise CorpusImportError(line, "id", "must be a text or a whole number")
    else:
        pair_id = str(raw_id).strip()
    if len(pair_id) > MAX_ID_LENGTH:
        raise CorpusImportError(line, "id", f"longer than {MAX_ID_LENGTH} characters")
    label = values.get("label")
    label = "" if label is None else label
    if not isinstance(label, str) or (label.strip() and label.strip() not in labels):
        raise CorpusImportError(
            line,
            "label",
            f"{label!r} is not a label of this study; use one of {list(labels)} or leave it empty",
        )
    gold = values.get(GOLD_FIELD)
    if isinstance(gold, str) and gold.strip():
        gold = read_json(line, gold, GOLD_FIELD)
    if gold not in (None, "") and not isinstance(gold, dict):
        raise CorpusImportError(
            line, GOLD_FIELD, "must be an object with label, premise_map and hypothesis_map"
        )
    metadata = {k: v for k, v in values.items() if k not in KNOWN}
    metadata[HYPOTHESIS_FIELD] = values["hypothesis"]
    if isinstance(gold, dict):
        metadata[GOLD_FIELD] = gold
    return TextRecord(line, pair_id, values["premise"], label.strip(), metadata)


def read_pairs(data: bytes, fmt: str, labels: Sequence[str]) -> list[TextRecord]:
    """Parse and check a CSV or JSONL file of pairs; ids must be unique within the file. Every problem is
    found before any is raised (:class:`~annotate.corpus.imports.CorpusImportProblems`)."""
    if fmt not in FORMATS:
        raise CorpusImportError(None, "format", f"must be one of {FORMATS}")
    check_file_size(len(data))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CorpusImportError(line, None, "not valid UTF-8; save the file as UTF-8") from None
    records: list[TextRecord] = []
    first_line: dict[str, int] = {}
    problems: list[CorpusImportError] = []
    try:
        for line, values in read_rows(text, fmt, REQUIRED, problems):
            try:
                record = _clean_pair(line, values, labels)
            except CorpusImportError as exc:
                problems.append(exc)
                continue
            if record.id in first_line:
                problems.append(
                    CorpusImportError(
                        line, "id", f"{record.id!r} was already used on line {first_line[record.id]}"
                    )
                )
            first_line.setdefault(record.id, line)
            records.append(record)
    except CorpusImportError as exc:  # the file cannot be read on
        problems.append(exc)
    raise_problems(problems)
    if not records:
        raise CorpusImportError(None, None, "the file holds no pairs")
    return records


def import_pairs(dataset: Dataset, data: bytes, fmt: str, labels: Sequence[str]) -> int:
    """Add the pairs of a CSV or JSONL file to ``dataset`` (all or nothing); returns how many."""
    return store_records(dataset, read_pairs(data, fmt, labels))
