"""Exports of a study's results, streamed row by row as CSV or JSON lines.

``responses``: one row per response (anonymised worker id, label, 0/1 map, timings, gold grade).
``items``: one row per item with its consensus attention map (CAM, bitwise AND of the maps) and
super attention map (SAM, bitwise OR), Sen et al. 2020 Defs. 2.4 and 2.5, from the engine.

Only verified answers are exported unless ``include_unverified`` is asked for (``?include_unverified=1``):
then provisional and set-aside answers come too, each response row with its ``verification`` and each
item row with the ``verifications`` of its ``labels``, in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import groupby
from typing import Any

from annotate import csvfile
from annotate.models import Item, Response, Study, Worker
from explain_engine.api import consensus_maps

WHAT = ("responses", "items")
FORMATS = ("csv", "jsonl")
RESPONSE_FIELDS = (
    "response",
    "item",
    "document",
    "worker",
    "label",
    "map",
    "read_ms",
    "answer_ms",
    "gold_passed",
    "submitted_at",
)
ITEM_FIELDS = ("item", "document", "document_label", "responses", "labels", "cam", "sam")
INCLUDE_UNVERIFIED = "include_unverified"
CHUNK = 1000


def include_unverified(value: str | None) -> bool:
    """The ``include_unverified`` query parameter: absent, ``0`` or ``false`` → no; ``1`` or ``true`` →
    yes; anything else raises ``ValueError`` with a message naming the parameter."""
    if value is None or value.lower() in ("", "0", "false"):
        return False
    if value.lower() in ("1", "true"):
        return True
    raise ValueError(f"{INCLUDE_UNVERIFIED} must be 0 or 1, not {value[:20]!r}")


def _answers(study: Study, unverified: bool):
    """The study's responses that an export shows: verified ones, or all when ``unverified``."""
    responses = Response.objects.filter(study=study)
    return responses if unverified else responses.counted()


class _AnonymousIds(dict):
    """``(provider, external_id)`` → the worker's pseudonym, computed once per worker."""

    def __missing__(self, key: tuple[str, str]) -> str:
        value = self[key] = Worker(provider=key[0], external_id=key[1]).anonymous_id
        return value


def response_rows(study: Study, unverified: bool = False) -> Iterator[dict[str, Any]]:
    """One dict per verified response of ``study`` (every response, with its ``verification``, when
    ``unverified``), in submission order."""
    anonymous = _AnonymousIds()
    rows = (
        _answers(study, unverified)
        .order_by("id")
        .values_list(
            "id",
            "item_id",
            "item__document__external_id",
            "worker__provider",
            "worker__external_id",
            "answer",
            "read_ms",
            "answer_ms",
            "gold_passed",
            "created",
            "verification",
        )
    )
    for (
        rid,
        item,
        doc,
        provider,
        external,
        answer,
        read_ms,
        answer_ms,
        gold,
        created,
        verification,
    ) in rows.iterator(CHUNK):
        answer = answer if isinstance(answer, dict) else {}
        row = {
            "response": rid,
            "item": item,
            "document": doc,
            "worker": anonymous[provider, external],
            "label": answer.get("label"),
            "map": answer.get("map"),
            "read_ms": read_ms,
            "answer_ms": answer_ms,
            "gold_passed": gold,
            "submitted_at": created.isoformat(),
        }
        yield (row | {"verification": verification}) if unverified else row


def item_rows(study: Study, unverified: bool = False) -> Iterator[dict[str, Any]]:
    """One dict per item of ``study`` with its verified responses' labels, CAM and SAM (empty when
    unanswered); with ``unverified``, of all its responses, and their ``verifications``."""
    items = (
        Item.objects.filter(study=study)
        .order_by("id")
        .values_list("id", "document__external_id", "document__label")
        .iterator(CHUNK)
    )
    answers = (
        _answers(study, unverified)
        .order_by("item_id", "id")
        .values_list("item_id", "answer", "verification")
        .iterator(CHUNK)
    )
    grouped = groupby(answers, key=lambda row: row[0])
    pending = next(grouped, None)
    for item_id, doc, doc_label in items:
        given: list[dict] = []
        verifications: list[str] = []
        while pending is not None and pending[0] <= item_id:
            if pending[0] == item_id:
                kept = [(a, v) for _, a, v in pending[1] if isinstance(a, dict)]
                given, verifications = [a for a, _ in kept], [v for _, v in kept]
            pending = next(grouped, None)
        maps = [a["map"] for a in given if isinstance(a.get("map"), list)]
        if len({len(m) for m in maps}) > 1:
            raise ValueError(f"item {item_id}: its responses' maps differ in length")
        cam, sam = consensus_maps(maps)
        row = {
            "item": item_id,
            "document": doc,
            "document_label": doc_label,
            "responses": len(given),
            "labels": [a.get("label") for a in given],
            "cam": cam,
            "sam": sam,
        }
        yield (row | {"verifications": verifications}) if unverified else row


def rows_for(
    study: Study, what: str, unverified: bool = False
) -> tuple[tuple[str, ...], Iterator[dict[str, Any]]]:
    """The field names and rows of one export (``responses`` or ``items``); ``unverified`` adds the
    provisional and set-aside answers and a column saying which is which."""
    if what == "responses":
        fields = RESPONSE_FIELDS + (("verification",) if unverified else ())
        return fields, response_rows(study, unverified)
    if what == "items":
        fields = ITEM_FIELDS + (("verifications",) if unverified else ())
        return fields, item_rows(study, unverified)
    raise ValueError(f"unknown export {what!r}; use one of {WHAT}")


def _csv_cell(value: Any) -> Any:
    if isinstance(value, list):
        if all(isinstance(v, int) for v in value):
            return " ".join(map(str, value))
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


def stream_csv(fields: Iterable[str], rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """CSV text, header first; 0/1 maps as space-separated digits, other lists as JSON (formula-safe cells,
    :mod:`annotate.csvfile`)."""
    fields = tuple(fields)
    return csvfile.stream_csv(fields, ([row[f] for f in fields] for row in rows), cell=_csv_cell)


def stream_jsonl(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """One JSON object per line."""
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def stream(study: Study, what: str, fmt: str, unverified: bool = False) -> Iterator[str]:
    """The export ``what`` of ``study`` in format ``fmt`` (``csv`` or ``jsonl``), as text chunks;
    ``unverified`` includes the answers not (yet) verified, marked as such."""
    fields, rows = rows_for(study, what, unverified)
    if fmt == "csv":
        return stream_csv(fields, rows)
    if fmt == "jsonl":
        return stream_jsonl(rows)
    raise ValueError(f"unknown format {fmt!r}; use one of {FORMATS}")


def filename(study: Study, what: str, fmt: str, unverified: bool = False) -> str:
    return f"study-{study.uid}-{what}{'-with-unverified' if unverified else ''}.{fmt}"


def content_type(fmt: str) -> str:
    return "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"
