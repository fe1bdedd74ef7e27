"""Exports of a study's results, streamed row by row as CSV or JSON lines.

``responses``: one row per response (anonymised worker id, label, 0/1 map, timings, gold grade).
``items``: one row per item with its consensus attention map (CAM, bitwise AND of the maps) and
super attention map (SAM, bitwise OR), Sen et al. 2020 Defs. 2.4 and 2.5, from the engine.
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
CHUNK = 1000


class _AnonymousIds(dict):
    """``(provider, external_id)`` → the worker's pseudonym, computed once per worker."""

    def __missing__(self, key: tuple[str, str]) -> str:
        value = self[key] = Worker(provider=key[0], external_id=key[1]).anonymous_id
        return value


def response_rows(study: Study) -> Iterator[dict[str, Any]]:
    """One dict per response of ``study``, in submission order."""
    anonymous = _AnonymousIds()
    rows = (
        Response.objects.filter(study=study)
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
        )
    )
    for rid, item, doc, provider, external, answer, read_ms, answer_ms, gold, created in rows.iterator(CHUNK):
        answer = answer if isinstance(answer, dict) else {}
        yield {
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


def item_rows(study: Study) -> Iterator[dict[str, Any]]:
    """One dict per item of ``study`` with its responses' labels, CAM and SAM (empty when unanswered)."""
    items = (
        Item.objects.filter(study=study)
        .order_by("id")
        .values_list("id", "document__external_id", "document__label")
        .iterator(CHUNK)
    )
    answers = (
        Response.objects.filter(study=study).order_by("item_id", "id").values_list("item_id", "answer")
    ).iterator(CHUNK)
    grouped = groupby(answers, key=lambda row: row[0])
    pending = next(grouped, None)
    for item_id, doc, doc_label in items:
        given: list[dict] = []
        while pending is not None and pending[0] <= item_id:
            if pending[0] == item_id:
                given = [a for _, a in pending[1] if isinstance(a, dict)]
            pending = next(grouped, None)
        maps = [a["map"] for a in given if isinstance(a.get("map"), list)]
        if len({len(m) for m in maps}) > 1:
            raise ValueError(f"item {item_id}: its responses' maps differ in length")
        cam, sam = consensus_maps(maps)
        yield {
            "item": item_id,
            "document": doc,
            "document_label": doc_label,
            "responses": len(given),
            "labels": [a.get("label") for a in given],
            "cam": cam,
            "sam": sam,
        }


def rows_for(study: Study, what: str) -> tuple[tuple[str, ...], Iterator[dict[str, Any]]]:
    """The field names and rows of one export (``responses`` or ``items``)."""
    if what == "responses":
        return RESPONSE_FIELDS, response_rows(study)
    if what == "items":
        return ITEM_FIELDS, item_rows(study)
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


def stream(study: Study, what: str, fmt: str) -> Iterator[str]:
    """The export ``what`` of ``study`` in format ``fmt`` (``csv`` or ``jsonl``), as text chunks."""
    fields, rows = rows_for(study, what)
    if fmt == "csv":
        return stream_csv(fields, rows)
    if fmt == "jsonl":
        return stream_jsonl(rows)
    raise ValueError(f"unknown format {fmt!r}; use one of {FORMATS}")


def filename(study: Study, what: str, fmt: str) -> str:
    return f"study-{study.uid}-{what}.{fmt}"


def content_type(fmt: str) -> str:
    return "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"
