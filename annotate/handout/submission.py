"""Storing an answer: one transaction, idempotent by ``submission_key``, validated by the task kind.

A retried POST with the same key finds the stored response and gets the same answer back. The
assignment row is locked (``SELECT ... FOR UPDATE``) so two copies of one submission arriving
together are handled one after the other. On PostgreSQL the common case (an open assignment) takes
two statements, the second of which stores the response, closes the assignment and counts the
item's response at once (one statement is one transaction; in an adaptive study the item's stopping rule
is decided in the same transaction: :mod:`annotate.quality.redundancy`); every other case takes the general path. An assignment that expired but was not yet released, or
was released while nobody took its slot, is still accepted (nothing is lost); one whose slot went to
another annotator is a :class:`SubmissionConflict`, and so is any new answer once the study is finished.

A browser submits through its :class:`~annotate.handout.workers.Seat`: only assignments of its worker made under
the platform unit it entered with, and its answers are stored verified or provisional as the seat says
(:class:`~annotate.models.Response`'s ``verification``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from annotate.handout.page_tokens import SERVER_SIGNALS, page_token_valid
from annotate.handout.workers import Seat
from annotate.infra import sql
from annotate.infra.sql import Prepared
from annotate.models import Assignment, Invite, Item, Response, Study, Worker
from annotate.quality.redundancy import policy_of, refresh_items
from annotate.tasks import get_kind

ASSIGNED = Assignment.Status.ASSIGNED
SUBMITTED = Assignment.Status.SUBMITTED
RELEASED = Assignment.Status.RELEASED
FINISHED_MESSAGE = "the study is finished: it takes no more answers"

# Who may submit: a session's seats by study uid, or bare worker ids (reconciliation, scripts: any
# platform unit, answers verified).
Holders = Collection[int] | Mapping[str, Seat]


class AssignmentNotFound(Exception):
    """No such assignment, or not one of this session's workers."""


class SubmissionConflict(Exception):
    """The submission cannot be stored as the assignment stands (HTTP 409)."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(message)


@dataclass(frozen=True)
class Submitted:
    """What storing an answer did: the response, whether this call created it (not a retry), and, when
    known, its study (with the fields the annotator API reads), worker, gold grade (``None``: not a gold)
    and verification, which tell whether the worker's trust may have moved (:attr:`moves_trust`)."""

    response_id: int
    created: bool
    study: Study | None = None
    worker_id: int | None = None
    gold_passed: bool | None = None
    verification: str = ""

    def body(self) -> dict[str, int]:
        return {"response": self.response_id}

    @property
    def moves_trust(self) -> bool:
        """Whether this answer may change its worker's trust: a newly stored, graded gold answer that
        counts. A provisional one counts only once verified (reconciliation refreshes trust then), and a
        retry was counted by the call that stored it."""
        return (
            self.created
            and self.gold_passed is not None
            and self.verification == Response.Verification.VERIFIED
            and self.study is not None
            and self.worker_id is not None
        )


def submit(
    assignment_uid: uuid.UUID | str,
    holders: Holders,
    submission_key: uuid.UUID,
    answer: Any,
    timings: dict[str, Any] | None = None,
    signals: dict[str, Any] | None = None,
    *,
    now: datetime | None = None,
    allow_finished: bool = False,
    recovered: bool = False,
    opened: Opened | None = None,
) -> Submitted:
    """Store the answer to an assignment held by one of ``holders`` (see :data:`Holders`).

    ``opened``: the assignment as :func:`open_assignment` already read it for these holders (PostgreSQL),
    so that it is not read twice.

    ``allow_finished`` lets reconciliation store an answer the platform kept for a study finished since;
    ``recovered`` marks an answer reconciliation recovered from the platform's copy (the server's word:
    a ``recovered`` in the client's ``signals`` is dropped, as every field :data:`SERVER_SIGNALS` names).
    Raises :class:`AssignmentNotFound`, :class:`SubmissionConflict`, or DRF ``ValidationError``
    naming the bad field (``answer``, ``timings``, ``submission_key``).
    """
    timings = timings or {}
    holders = holders if isinstance(holders, Mapping) else set(holders)
    try:
        if sql.native():
            fast = _submit_fast(
                opened or open_assignment(assignment_uid, holders),
                submission_key,
                answer,
                timings,
                signals or {},
                now or timezone.now(),
                allow_finished,
                recovered,
            )
            if fast is not None:
                return fast
        with transaction.atomic():
            return _submit(
                str(assignment_uid),
                holders,
                submission_key,
                answer,
                timings,
                signals or {},
                now or timezone.now(),
                allow_finished,
                recovered,
            )
    except IntegrityError:
        prior = (
            Response.objects.filter(submission_key=submission_key)
            .values_list("id", "assignment__uid")
            .first()
        )
        if prior is not None and str(prior[1]) == str(assignment_uid):
            return Submitted(prior[0], created=False)
        if prior is not None:
            raise ValidationError({"submission_key": ["already used for another assignment"]}) from None
        raise SubmissionConflict(
            "assignment", "this assignment expired and its place was given to another annotator"
        ) from None


_R = Response._meta.db_table
_A = Assignment._meta.db_table
_I = Item._meta.db_table
_S = Study._meta.db_table
_W = Worker._meta.db_table
_V = Invite._meta.db_table
# Whether the seat's invite was withdrawn: the worker read by its primary key and the invite by its unique
# (study, invitee), so the check costs the same whatever the planner knows of the tables (joined on the
# worker's provider instead, a fresh study's plan scanned every local worker and every invite of the study).
_READ = Prepared(
    "hatlab_submit_read",
    ("uuid",),
    f"""SELECT a.id, a.status, a.worker_id, a.item_id, a.study_id, i.payload, i.secret, i.is_gold,
               s.kind, s.config, s.instructions, s.time_limit_s, s.uid, s.status, s.provider,
               a.provider_assignment_id,
               EXISTS (SELECT 1 FROM {_V} v WHERE v.study_id = a.study_id AND v.revoked_at IS NOT NULL
                       AND v.invitee = (SELECT CASE WHEN w.provider = '{Invite.PROVIDER}'
                           AND left(w.external_id, {len(Invite.WORKER_PREFIX)}) = '{Invite.WORKER_PREFIX}'
                           THEN substring(w.external_id FROM {len(Invite.WORKER_PREFIX) + 1}) END
                           FROM {_W} w WHERE w.id = a.worker_id)),
               s.protocol
        FROM {_A} a JOIN {_I} i ON i.id = a.item_id JOIN {_S} s ON s.id = a.study_id
        WHERE a.uid = $1""",
)
_WRITE = Prepared(
    "hatlab_submit_write",
    (
        "bigint",
        "bigint",
        "bigint",
        "bigint",
        "uuid",
        "jsonb",
        "integer",
        "integer",
        "jsonb",
        "boolean",
        "timestamptz",
        "text",
    ),
    f"""WITH a AS (
            SELECT id FROM {_A} WHERE id = $1 AND status = '{ASSIGNED}' FOR UPDATE
        ), r AS (
            INSERT INTO {_R} (assignment_id, study_id, item_id, worker_id, submission_key, answer, read_ms,
                              answer_ms, signals, gold_passed, created, verification)
            SELECT a.id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM a
            RETURNING id
        ), submitted AS (
            UPDATE {_A} SET status = '{SUBMITTED}', submitted_at = $11,
                            provisional = provisional AND $12 <> '{Response.Verification.VERIFIED}'
            WHERE id = $1 AND EXISTS (SELECT 1 FROM r)
        ), counted AS (
            UPDATE {_I} SET responses_done = responses_done + 1 WHERE id = $3 AND EXISTS (SELECT 1 FROM r)
            RETURNING responses_done, responses_needed
        )
        SELECT r.id, c.responses_done, c.responses_needed FROM r LEFT JOIN counted c ON true""",
)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _seat(holders: Holders, study_uid: Any, worker_id: int, ref: str) -> Seat | None:
    """The seat that may submit an assignment of ``worker_id`` made under the platform unit ``ref`` in the
    study ``study_uid``: the session's seat in that study when it holds it; given bare worker ids, one of
    them on any unit, verified; else ``None``."""
    if isinstance(holders, Mapping):
        seat = holders.get(str(study_uid))
        return seat if seat is not None and seat.holds(worker_id, ref) else None
    return Seat(worker_id, None) if worker_id in holders else None


@dataclass(frozen=True)
class Opened:
    """An assignment as the PostgreSQL path read it for a submission (:func:`open_assignment`): its row,
    the seat that may submit it, and whether that seat's invite was revoked (``withdrawn``)."""

    uid: str
    row: tuple
    seat: Seat

    @property
    def withdrawn(self) -> bool:
        return bool(self.row[16])


def open_assignment(assignment_uid: uuid.UUID | str, holders: Holders) -> Opened:
    """Read the assignment ``assignment_uid`` for a submission by one of ``holders`` (PostgreSQL, one
    statement): :class:`AssignmentNotFound` when it is none of theirs. Who may submit is known before the
    body is read; :func:`submit` then stores the answer without reading the assignment again."""
    uid = str(assignment_uid)
    with connection.cursor() as cursor:
        _READ.execute(cursor, [uid])
        row = cursor.fetchone()
    seat = None if row is None else _seat(holders, row[12], row[2], row[15])
    if row is None or seat is None:
        raise AssignmentNotFound(uid)
    return Opened(uid, row, seat)


def _submit_fast(
    opened: Opened,
    key: uuid.UUID,
    answer: Any,
    timings: dict[str, Any],
    signals: dict[str, Any],
    now: datetime,
    allow_finished: bool = False,
    recovered: bool = False,
) -> Submitted | None:
    """The common case on PostgreSQL: the assignment as read (:func:`open_assignment`) is open, so one
    statement, which is its own transaction, stores the response, closes the assignment and counts the
    item's response. ``None`` when it is not open (or stopped being): the general path decides."""
    row, seat, uid = opened.row, opened.seat, opened.uid
    assignment_id, status, worker_id, item_id, study_id, payload, secret, is_gold, kind_name = row[:9]
    if status != ASSIGNED:
        return None
    if row[13] == Study.Status.FINISHED and not allow_finished:
        raise SubmissionConflict("study", FINISHED_MESSAGE)
    study = Study(
        id=study_id,
        kind=kind_name,
        config=_json(row[9]),
        instructions=row[10],
        time_limit_s=row[11],
        uid=row[12],
        status=row[13],
        provider=row[14],
        protocol=_json(row[17]),
    )
    item = Item(id=item_id, study=study, payload=_json(payload), secret=_json(secret), is_gold=is_gold)
    kind = get_kind(kind_name)
    cleaned = kind.validate_answer(item, answer, timings)
    read_ms, moments = _timings(timings)
    grade = kind.grade_gold(item, cleaned)
    args = [
        assignment_id,
        study_id,
        item_id,
        worker_id,
        key,
        json.dumps(cleaned),
        read_ms,
        timings.get("answer_ms"),
        json.dumps(_signals(signals, moments, study, worker_id, uid, recovered)),
        grade,
        now,
        seat.verification,
    ]
    adaptive = not is_gold and policy_of(study).adaptive  # the item's stop is decided with its answer
    together = transaction.atomic() if connection.in_atomic_block or adaptive else nullcontext()
    with together, connection.cursor() as cursor:
        _WRITE.execute(cursor, args)
        stored = cursor.fetchone()
        # An item still short of the places it asked for has nothing to decide (its rule needs them all).
        if stored is not None and adaptive and stored[1] >= stored[2]:
            refresh_items(study, [item_id])
    return None if stored is None else Submitted(stored[0], True, study, worker_id, grade, seat.verification)


def _timings(timings: dict[str, Any]) -> tuple[int | None, dict[str, int]]:
    """Read time (the time to the label when not given) and the moments kept with the signals."""
    read_ms = timings.get("read_ms")
    if read_ms is None:
        read_ms = timings.get("label_at_ms")
    moments = {k: timings[k] for k in ("label_at_ms", "first_highlight_at_ms") if timings.get(k) is not None}
    return read_ms, moments


def _signals(
    signals: dict[str, Any],
    moments: dict[str, int],
    study: Study,
    worker_id: int,
    assignment_uid: Any,
    recovered: bool = False,
) -> dict[str, Any]:
    """The signals as stored: every field the server owns (:data:`SERVER_SIGNALS`) dropped from the
    client's, the page's token replaced by the server's verdict ``page`` (whether a valid token served
    with this assignment came: :mod:`annotate.handout.page_tokens`), ``recovered`` only when the server
    recovered the answer, the timing moments added."""
    stored = {k: v for k, v in signals.items() if k not in SERVER_SIGNALS}
    stored["page"] = page_token_valid(
        signals.get("page_token"), study.uid, worker_id, assignment_uid, study.time_limit_s
    )
    if recovered:
        stored["recovered"] = True
    return {**stored, "timings": moments} if moments else stored


def _submit(
    uid: str,
    holders: Holders,
    key: uuid.UUID,
    answer: Any,
    timings: dict[str, Any],
    signals: dict[str, Any],
    now: datetime,
    allow_finished: bool = False,
    recovered: bool = False,
) -> Submitted:
    """The general path, inside the caller's transaction: lock the assignment, answer a retry with the
    stored response, refuse what the assignment's state does not allow, validate, then store."""
    assignment = _locked_assignment(uid)
    seat = (
        None
        if assignment is None
        else _seat(holders, assignment.study.uid, assignment.worker_id, assignment.provider_assignment_id)
    )
    if seat is None or assignment is None:
        raise AssignmentNotFound(uid)
    if assignment.status == SUBMITTED:
        return _retry(assignment, key)
    if assignment.study.status == Study.Status.FINISHED and not allow_finished:
        raise SubmissionConflict("study", FINISHED_MESSAGE)
    kind = get_kind(assignment.study.kind)
    item = assignment.item
    item.study = assignment.study
    cleaned = kind.validate_answer(item, answer, timings)
    if assignment.status == RELEASED and _slot_taken(assignment):
        raise SubmissionConflict(
            "assignment", "this assignment expired and its place was given to another annotator"
        )
    read_ms, moments = _timings(timings)
    response = Response.objects.create(
        assignment_id=assignment.pk,
        study_id=assignment.study_id,
        item_id=item.pk,
        worker_id=assignment.worker_id,
        submission_key=key,
        answer=cleaned,
        read_ms=read_ms,
        answer_ms=timings.get("answer_ms"),
        signals=_signals(signals, moments, assignment.study, assignment.worker_id, uid, recovered),
        gold_passed=kind.grade_gold(item, cleaned),
        verification=seat.verification,
    )
    confirmed = {"provisional": False} if seat.verified else {}  # a verified answer holds a confirmed place
    Assignment.objects.filter(pk=assignment.pk).update(status=SUBMITTED, submitted_at=now, **confirmed)
    Item.objects.filter(pk=item.pk).update(responses_done=F("responses_done") + 1)
    if not item.is_gold:
        refresh_items(assignment.study, [item.pk])  # an adaptive study's item: stopped or asked for more
    return Submitted(
        response.pk, True, assignment.study, assignment.worker_id, response.gold_passed, response.verification
    )


def _locked_assignment(uid: str) -> Assignment | None:
    """The assignment ``uid``, locked (``SELECT ... FOR UPDATE``), with the item and study fields that
    validating and grading an answer read."""
    return (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("item", "study")
        .only(
            "id",
            "uid",
            "status",
            "slot",
            "item_id",
            "worker_id",
            "study_id",
            "provider_assignment_id",
            "item__payload",
            "item__secret",
            "item__is_gold",
            "study__kind",
            "study__config",
            "study__instructions",
            "study__time_limit_s",
            "study__uid",
            "study__status",
            "study__provider",
            "study__protocol",
        )
        .filter(uid=uid)
        .first()
    )


def _retry(assignment: Assignment, key: uuid.UUID) -> Submitted:
    """A submitted assignment: the stored response when it came with the same ``key`` (a retry, not
    created again), else a conflict."""
    prior = Response.objects.filter(assignment_id=assignment.pk).values_list("id", "submission_key").first()
    if prior is not None and prior[1] == key:
        return Submitted(prior[0], False, assignment.study, assignment.worker_id)
    raise SubmissionConflict("assignment", "this assignment was already submitted")


def _slot_taken(assignment: Assignment) -> bool:
    """Whether a released assignment's slot, or its worker's place on the item, went to another
    assignment that is not released."""
    return (
        Assignment.objects.filter(item_id=assignment.item_id)
        .exclude(status=RELEASED)
        .filter(Q(slot=assignment.slot) | Q(worker_id=assignment.worker_id))
        .exists()
    )
