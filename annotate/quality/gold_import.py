"""Golds from a file: a CSV (a header row naming the columns) or JSON lines, one gold answer a row, in the
format each kind documents (``TaskKind.gold_columns``, shown on the golds page). A row names its item by
``item`` (the number the golds page shows) or by the kind's key columns (the document's id, for most
kinds). Every row is checked before anything is saved: a file with one bad row changes nothing, and each
bad row is reported in a sentence that names its line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from rest_framework.exceptions import ValidationError

from annotate.corpus.imports import CorpusImportError, read_rows
from annotate.infra.field_errors import flatten_errors
from annotate.models import Item, Study
from annotate.quality.gold_review import GOLD_TIMINGS, set_gold
from annotate.tasks import get_kind

#: At most this many problems are listed (the file changes nothing either way).
MAX_ERRORS = 20


@dataclass
class GoldImport:
    saved: int = 0
    errors: list[str] = field(default_factory=list)


def item_number(item: Item) -> int:
    """The number the golds page shows for ``item`` (its position, from 1)."""
    return item.position + 1


def answer_errors(detail: Any) -> str:
    """A refused answer's errors as sentences: "The label must be one of …"."""
    parts = []
    for name, problems in flatten_errors(detail).items():
        last = name.split(".")[-1]
        subject = (
            "The answer"
            if last in ("answer", "gold", "non_field_errors")
            else f"The {last.replace('_', ' ')}"
        )
        parts.append(f"{subject} {'; '.join(problems)}.")
    return " ".join(parts)


def _find(row: dict[str, Any], by_number: dict[int, Item], by_key: dict[tuple, Item], key_columns) -> Item:
    number = row.get("item")
    if number not in (None, ""):
        text = str(number).strip()
        if not text.isdigit() or int(text) not in by_number:
            raise ValueError(
                f"there is no item {text} in this study (items are numbered 1 to {len(by_number)})"
            )
        return by_number[int(text)]
    if not key_columns:
        raise ValueError("name the item in an item column (its number on the golds page)")
    key = tuple(str(row.get(name, "")).strip() for name, _ in key_columns)
    if not all(key):
        names = " and ".join(name for name, _ in key_columns)
        raise ValueError(f"name the item by its number (item) or by {names}")
    found = by_key.get(key)
    if found is None:
        described = ", ".join(f"{name} {value}" for (name, _), value in zip(key_columns, key, strict=True))
        raise ValueError(f"no item of this study has {described}")
    return found


def import_golds(study: Study, text: str, fmt: str) -> GoldImport:
    """Read the gold answers of ``text`` (``fmt`` ``csv`` or ``jsonl``) and save them all, or none."""
    kind = get_kind(study.kind)
    result = GoldImport()
    if not kind.gold_columns:
        result.errors.append("Studies of this kind have no gold answers.")
        return result
    try:
        rows = list(read_rows(text, fmt, []))  # every row read and checked (capped) before any is used
    except CorpusImportError as exc:
        result.errors.append(f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
        return result
    items = list(
        Item.objects.filter(study=study).select_related("document", "study").order_by("position", "id")
    )
    by_number = {item_number(i): i for i in items}
    by_key = {kind.gold_item_key(i): i for i in items}
    chosen: list[tuple[Item, dict]] = []
    for line, row in rows:
        try:
            item = _find(row, by_number, by_key, kind.gold_key_columns)
            answer = kind.gold_answer(item, row)
            cleaned = kind.validate_gold(item, answer, dict(GOLD_TIMINGS))
        except ValueError as exc:
            result.errors.append(f"Line {line}: {exc}.")
        except ValidationError as exc:
            result.errors.append(f"Line {line}: {answer_errors(exc.detail)}")
        else:
            chosen.append((item, cleaned))
        if len(result.errors) >= MAX_ERRORS:
            result.errors.append(f"Reading stopped after {MAX_ERRORS} problems.")
            break
    if not rows:
        result.errors.append("The file has no rows of golds.")
    if result.errors:
        return result
    with transaction.atomic():
        for item, cleaned in chosen:
            set_gold(item, cleaned)
    result.saved = len(chosen)
    return result
