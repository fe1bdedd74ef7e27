"""Exports of a study's results, streamed row by row as CSV or JSON lines (the datasheet that describes them,
and the zip that holds them all, are in :mod:`annotate.exports.datasheet`).

``responses``: one row per response: study, item, document id and words (and text in JSON lines), the
worker's pseudonym and the platform's assignment id hashed, the answer in the columns its task kind
declares (:meth:`annotate.tasks.base.TaskKind.export_columns`), timings, gold flag and grade, the worker's
trust at export time. The aggregated exports are the ones the kind offers
(:meth:`~annotate.tasks.base.TaskKind.export_tables`), e.g. ``items``: one row per item with its
consensus attention map (CAM, bitwise AND of the maps) and super attention map (SAM, bitwise OR), Sen et
al. 2020 Defs. 2.4 and 2.5, from the engine.

Only verified answers are exported unless ``include_unverified`` is asked for (``?include_unverified=1``):
then provisional and set-aside answers come too, each response row with its ``verification`` and each
item row with the ``verifications`` of its ``labels``, in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import groupby, islice
from typing import Any

from django.utils import timezone

from annotate.exports.protocol import protocol_tables
from annotate.exports.pseudonyms import AnonymousIds, platform_pseudonym
from annotate.infra import csvfile
from annotate.models import Document, Item, Response, Study, WorkerTrust
from annotate.quality.redundancy import policy_of
from annotate.tasks import get_kind
from annotate.tasks.export_spec import Column, ExportItem, ExportTable
from explain_engine.api import consensus_maps, words_of

RESPONSES = "responses"
FORMATS = ("csv", "jsonl")
#: The columns of every per-response export before the kind's answer columns.
LEAD_COLUMNS: tuple[Column, ...] = (
    ("response", "the response's id"),
    ("study", "the study's id (uid)"),
    ("item", "the item's id (the question id)"),
    ("position", "the item's place in the study's hand-out order, from 0"),
    ("document", "the document's id, as imported"),
    ("words", "the document's words, in order (the maps index them); a JSON list in CSV"),
    ("worker", "the worker's pseudonym: a keyed hash of platform and worker id, different for every researcher (no platform id leaves the app)"),
    ("platform_assignment", "the platform's assignment or submission id, hashed the same way; empty for local work"),
)  # fmt: skip
#: The columns of every per-response export after the kind's answer columns.
TAIL_COLUMNS: tuple[Column, ...] = (
    ("read_ms", "milliseconds from showing the item to the first answer action"),
    ("answer_ms", "milliseconds spent answering (e.g. highlighting)"),
    ("assigned_at", "when the item was handed to the worker (ISO 8601, UTC)"),
    ("submitted_at", "when the answer was received (ISO 8601, UTC)"),
    ("gold", "whether the item is a gold item (its answer is known and graded)"),
    ("gold_passed", "the gold grade: true passed, false failed, empty for a non-gold item"),
    ("trust", "the worker's gold trust in this study at export time (empty: no gold record)"),
    ("trust_status", "pending (too few golds), trusted or excluded, at export time"),
)
#: An adaptive study's per-response export ends with how many answers the item took and why it stopped.
ADAPTIVE_COLUMNS: tuple[Column, ...] = (
    ("item_answers", "answers the item took: submitted answers when it stopped, or so far while it collects"),
    ("item_stop_reason", "why the item stopped collecting answers (its rule and measure, or its maximum); empty while it collects"),
)  # fmt: skip
#: The JSON lines export has the document's text as well.
TEXT_COLUMN: Column = ("text", "the document's text (JSON lines only)")
VERIFICATION_COLUMN: Column = (
    "verification",
    "verified, provisional (awaiting the platform's confirmation) or set_aside (never confirmed); "
    "only with include_unverified",
)
ITEM_COLUMNS: tuple[Column, ...] = (
    ("item", "the item's id"),
    ("document", "the document's id"),
    ("document_label", "the document's label, as imported"),
    ("words", "the document's words, in order (cam and sam index them); a JSON list in CSV"),
    ("responses", "answers to the item in this export"),
    ("labels", "their labels, in submission order"),
    ("cam", "consensus attention map: 1 where every answer highlighted the word (Sen et al. 2020, Def. 2.4)"),
    ("sam", "super attention map: 1 where any answer highlighted the word (Sen et al. 2020, Def. 2.5)"),
)  # fmt: skip
ITEM_FIELDS = tuple(name for name, _ in ITEM_COLUMNS)
ITEM_VERIFICATIONS = "verifications"
INCLUDE_UNVERIFIED = "include_unverified"
CHUNK = 1000


class UnknownExport(LookupError):
    """An export the study's kind does not offer."""


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


def tables_of(study: Study) -> dict[str, ExportTable]:
    """The aggregated exports the study's kind offers, then its protocol's (:mod:`annotate.exports.protocol`),
    by name."""
    tables = [*get_kind(study.kind).export_tables(study), *protocol_tables(study)]
    return {table.name: table for table in tables}


def response_columns(study: Study, unverified: bool = False, text: bool = False) -> tuple[Column, ...]:
    """The columns of the per-response export of ``study``: the shared ones around its kind's; ``text``
    (JSON lines) adds the document's text after its words, ``unverified`` the verification column."""
    lead = LEAD_COLUMNS[:6] + ((TEXT_COLUMN,) if text else ()) + LEAD_COLUMNS[6:]
    kind_columns = tuple(get_kind(study.kind).export_columns(study))
    adaptive = ADAPTIVE_COLUMNS if policy_of(study).adaptive else ()
    return lead + kind_columns + TAIL_COLUMNS + adaptive + ((VERIFICATION_COLUMN,) if unverified else ())


def _pages(rows: Iterable[tuple], size: int) -> Iterator[list[tuple]]:
    """``rows`` in lists of at most ``size``, read lazily."""
    remaining = iter(rows)
    while page := list(islice(remaining, size)):
        yield page


def _documents(ids: set[int]) -> dict[int, tuple[list[str], str]]:
    """document id → ``(words, text)`` for the documents ``ids``, in one query."""
    found = Document.objects.filter(pk__in=ids).values_list("pk", "text", "words")
    return {pk: (words_of(text, offsets), text) for pk, text, offsets in found}


def _items(ids: set[int], documents: dict[int, tuple[list[str], str]]) -> dict[int, ExportItem]:
    """item id → what its kind may read of it (:class:`ExportItem`) for the items ``ids``, in one query;
    ``documents`` holds their documents' words."""
    found = Item.objects.filter(pk__in=ids).values_list("pk", "payload", "secret", "document_id")
    return {
        pk: ExportItem(payload or {}, secret or {}, documents[doc_id][0] if doc_id in documents else [])
        for pk, payload, secret, doc_id in found
    }


def response_rows(study: Study, unverified: bool = False, text: bool = False) -> Iterator[dict[str, Any]]:
    """One dict per verified response of ``study`` (every response, with its ``verification``, when
    ``unverified``), in submission order; ``text`` adds the document's text. The responses are read
    :data:`CHUNK` at a time, with the items and documents of each chunk in one query each, so the number of
    queries grows with the chunks, not with the documents, and only one chunk's documents are held."""
    kind = get_kind(study.kind)
    anonymous = AnonymousIds(study.owner_id)
    trust = {
        worker: (value, status)
        for worker, value, status in WorkerTrust.objects.filter(study=study).values_list(
            "worker_id", "trust", "status"
        )
    }
    rows = (
        _answers(study, unverified)
        .order_by("id")
        .values_list(
            "id", "item_id", "item__position", "item__is_gold", "item__document_id",
            "item__document__external_id", "worker_id", "worker__provider", "worker__external_id",
            "assignment__provider_assignment_id", "assignment__assigned_at", "answer", "read_ms",
            "answer_ms", "gold_passed", "created", "verification", "item__responses_done", "item__stop_reason",
        )
    )  # fmt: skip
    adaptive = policy_of(study).adaptive
    for page in _pages(rows.iterator(CHUNK), CHUNK):
        documents = _documents({row[4] for row in page if row[4] is not None})
        items = _items({row[1] for row in page}, documents)
        for (
            rid, item_id, position, is_gold, doc_id, doc, worker_id, provider, external, unit, assigned_at,
            answer, read_ms, answer_ms, gold, created, verification, item_answers, stop_reason,
        ) in page:  # fmt: skip
            answer = answer if isinstance(answer, dict) else {}
            words, doc_text = documents.get(doc_id, ([], ""))
            worker_trust, trust_status = trust.get(worker_id, (None, ""))
            row = {
                "response": rid,
                "study": str(study.uid),
                "item": item_id,
                "position": position,
                "document": doc,
                "words": words,
                **({"text": doc_text} if text else {}),
                "worker": anonymous[provider, external],
                "platform_assignment": platform_pseudonym(study.owner_id, provider, unit),
                **kind.export_answer(study, items[item_id], answer),
                "read_ms": read_ms,
                "answer_ms": answer_ms,
                "assigned_at": assigned_at.isoformat() if assigned_at else None,
                "submitted_at": created.isoformat(),
                "gold": is_gold,
                "gold_passed": gold,
                "trust": None if worker_trust is None else round(worker_trust, 4),
                "trust_status": trust_status,
                **({"item_answers": item_answers, "item_stop_reason": stop_reason} if adaptive else {}),
            }
            yield (row | {"verification": verification}) if unverified else row


def item_rows(study: Study, unverified: bool = False) -> Iterator[dict[str, Any]]:
    """One dict per item of ``study`` with its document's words, its verified responses' labels, CAM and
    SAM over those words (empty when unanswered); with ``unverified``, of all its responses, and their ``verifications``."""
    items = (
        Item.objects.filter(study=study)
        .order_by("id")
        .values_list("id", "document__external_id", "document__label", "document__text", "document__words")
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
    for item_id, doc, doc_label, text, offsets in items:
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
            "words": words_of(text, offsets) if text is not None else [],
            "responses": len(given),
            "labels": [a.get("label") for a in given],
            "cam": cam,
            "sam": sam,
        }
        yield (row | {"verifications": verifications}) if unverified else row


def item_table(study: Study, unverified: bool = False) -> tuple[tuple[str, ...], Iterator[dict[str, Any]]]:
    """The ``items`` export: its field names and rows (:func:`item_rows`)."""
    return ITEM_FIELDS + ((ITEM_VERIFICATIONS,) if unverified else ()), item_rows(study, unverified)


def rows_for(
    study: Study, what: str, unverified: bool = False, text: bool = False
) -> tuple[tuple[str, ...], Iterator[dict[str, Any]]]:
    """The field names and rows of one export (``responses`` or one of the kind's tables);
    ``unverified`` adds the provisional and set-aside answers and a column saying which is which, ``text``
    (JSON lines) the documents' text. :class:`UnknownExport` for an export the kind does not offer,
    ``ValueError`` for ``unverified`` with a table that counts verified answers only."""
    if what == RESPONSES:
        fields = tuple(name for name, _ in response_columns(study, unverified, text))
        return fields, response_rows(study, unverified, text)
    table = tables_of(study).get(what)
    if table is None:
        offered = ", ".join([RESPONSES, *tables_of(study)])
        raise UnknownExport(f"a {study.kind} study has no {what!r} export; it offers {offered}")
    if unverified and not table.takes_unverified:
        raise ValueError(
            f"{INCLUDE_UNVERIFIED}: the {what} export counts verified answers only; "
            f"ask the responses export for unverified ones"
        )
    names, rows = table.rows(study, unverified)
    return tuple(names), iter(rows)


def offered(study: Study) -> list[dict[str, Any]]:
    """The exports of ``study`` for its page: ``responses``, then its kind's tables, each with its
    ``name``, ``title``, ``summary`` and whether it ``takes_unverified``."""
    responses = {
        "name": RESPONSES,
        "title": "Responses",
        "summary": "one row per answer, with the document's words and the answer's fields",
        "takes_unverified": True,
    }
    return [
        responses,
        *(
            {"name": t.name, "title": t.title, "summary": t.summary, "takes_unverified": t.takes_unverified}
            for t in tables_of(study).values()
        ),
    ]


def _csv_cell(value: Any) -> Any:
    """Lists of whole numbers (0/1 maps) as space-separated digits, other lists and objects as JSON."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return " ".join(map(str, value))
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return round(value, 6) if value == value else ""
    return "" if value is None else value


def stream_csv(fields: Iterable[str], rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """CSV text, header first; 0/1 maps as space-separated digits, other lists as JSON (formula-safe cells,
    :mod:`annotate.infra.csvfile`)."""
    fields = tuple(fields)
    return csvfile.stream_csv(fields, ([row[f] for f in fields] for row in rows), cell=_csv_cell)


def stream_jsonl(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """One JSON object per line (NaN as null)."""
    for row in rows:
        yield json.dumps(_json_safe(row), ensure_ascii=False) + "\n"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def stream(study: Study, what: str, fmt: str, unverified: bool = False) -> Iterator[str]:
    """The export ``what`` of ``study`` in format ``fmt`` (``csv`` or ``jsonl``), as text chunks;
    ``unverified`` includes the answers not (yet) verified, marked as such."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {FORMATS}")
    fields, rows = rows_for(study, what, unverified, text=fmt == "jsonl")
    if fmt == "csv":
        return stream_csv(fields, rows)
    if fmt == "jsonl":
        return stream_jsonl(rows)
    raise ValueError(f"unknown format {fmt!r}; use one of {FORMATS}")


def filename(study: Study, what: str, fmt: str, unverified: bool = False) -> str:
    return f"study-{study.uid}-{what}{'-with-unverified' if unverified else ''}.{fmt}"


def content_type(fmt: str) -> str:
    return "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"


def exported_at() -> str:
    return timezone.now().replace(microsecond=0).isoformat()
