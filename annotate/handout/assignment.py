"""Handing out items: every item gets exactly ``responses_needed`` distinct annotators (at least as many
confirmed ones when unconfirmed identities overflow it: see below).

An assignment holds one *slot* ``0 .. responses_needed-1`` of one item. Two partial unique
constraints on live (not released) assignments are the last word: one live assignment per
``(item, slot)`` and one per ``(item, worker)``. On top of them, :func:`next_assignment` runs in one
transaction that

1. locks the worker's row (``SELECT ... FOR UPDATE``), so one worker's simultaneous requests queue
   up and a worker asking again gets the open assignment they already hold under the same platform
   unit (``ref``: two sessions of one worker id never share an assignment);
2. releases this study's expired assignments (their slots become free again);
3. picks the first open item the worker has never been given, locking it with
   ``FOR UPDATE SKIP LOCKED`` so that concurrent requests take different items instead of waiting;
   the queue's index holds only items with a free slot (``Item.slots_taken``, counted by the database's
   triggers), so the items the crowd is answering are not read on the way, however large the crowd;
4. takes the lowest free slot of that item in a single ``INSERT ... SELECT`` (a fresh snapshot
   taken after the lock, so a slot committed by someone else a moment ago is seen as taken).

On PostgreSQL the common case, a free slot on one of the first few candidates, is one statement and so one
round trip: a PL/pgSQL function made of the same statements (``_HAND_OUT``), each of which takes a fresh
snapshot as the separate statements do; whatever it does not decide goes the way described here.

When only items locked by other requests are left, a second transaction waits for the first of
them instead of skipping it, so nobody is told "nothing left" while a slot is still free. Should the
constraints still refuse a row (``IntegrityError``), the whole transaction is retried.

Unconfirmed identities cannot hold a study's work. A seat the platform has not confirmed (an MTurk
worker before reconciliation, a Prolific session while Prolific cannot be asked: anyone can type such
ids) gets *provisional* assignments. When every item's slots are held, the hand-out goes on with an
*overflow* pass: an item is open while fewer than ``responses_needed`` of its live assignments are
confirmed ones (not provisional), whoever else holds it, the least-held items first. So made-up
identities that fill every slot keep nobody from an item; a study still reaches ``responses_needed``
verified answers per item, and the answers of identities the platform never confirms are set aside
(:func:`annotate.crowd.providers.reconcile.set_aside_unconfirmed`). The price: when several
unconfirmed holders of one item are all genuine and confirmed later, the item has more verified answers
than it needs. The common case (a free slot) costs no query more: the overflow pass runs only when the
first finds nothing and some live assignment of the study is unconfirmed (so not at the end of a study
whose holders are all confirmed, where it would count every item's assignments on every request).

A provisional assignment is the seat's own: under its platform unit (``ref``) only. A worker's items
are those they had under the same unit, or confirmed ones under any: an unverified claim to a worker's
id on another unit neither keeps the real worker from an item nor counts in their progress.

A hand-out is committed durably (``synchronous_commit`` as the server has it, on by default), like an
answer: an item shown to an annotator survives a PostgreSQL crash, so the answer to it is accepted after
the restart instead of being refused as an unknown assignment (``tests/annotate/test_handout_crash.py``).
The SQL is written by hand (PostgreSQL) because these two requests are the service's hot path; on
other databases (the SQLite demo) the same steps run through the ORM.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from contextlib import nullcontext
from datetime import datetime, timedelta

from django.db import IntegrityError, ProgrammingError, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from annotate.infra import sql
from annotate.infra.sql import Prepared
from annotate.models import Assignment, Item, ItemSkip, Study, Worker, WorkerBlock
from annotate.quality.gold_mixing import gold_wanted
from annotate.tasks import get_kind
from annotate.tasks.base import GOLD_RATE_KEY, REDUNDANCY_KEY, TaskKind

ASSIGNED = Assignment.Status.ASSIGNED
SUBMITTED = Assignment.Status.SUBMITTED
RELEASED = Assignment.Status.RELEASED
MAX_ROUNDS = 100
MAX_REFUSALS = 5

_A = Assignment._meta.db_table
_I = Item._meta.db_table
_W = Worker._meta.db_table
_K = ItemSkip._meta.db_table


class WorkerBlocked(Exception):
    """The worker is blocked and gets no more work."""


def release_expired(study: Study | int | None = None, now: datetime | None = None) -> int:
    """Release assignments past their expiry (of one study, or of all); returns how many. Either way one
    statement that ``assignment_open_expiry_idx`` serves (it holds the open assignments only)."""
    now = now or timezone.now()
    qs = Assignment.objects.filter(status=ASSIGNED, expires_at__lt=now)
    if study is not None:
        qs = qs.filter(study_id=study if isinstance(study, int) else study.pk)
    return qs.update(status=RELEASED)


def next_assignment(
    study: Study,
    worker: Worker | int,
    *,
    now: datetime | None = None,
    gold: bool | None = None,
    ref: str = "",
    provisional: bool = False,
) -> Assignment | None:
    """The worker's open assignment in ``study``, else a new one, else ``None`` when nothing is left.

    ``gold`` restricts a new assignment to gold items (``True``) or to ordinary items (``False``);
    ``None`` takes any. ``ref`` is the platform's unit of work the session entered with (see
    :class:`annotate.handout.workers.Seat`): only an open assignment made under it is handed back, and a new one
    is made under it, so two sessions of one worker id never share an assignment. ``provisional``: the
    seat is not confirmed by the platform (see the module docstring). The returned assignment has its
    ``item`` loaded (payload only).
    """
    worker_id = worker if isinstance(worker, int) else worker.pk
    return next_with_progress(
        study, worker_id, now=now, gold=gold, ref=ref, provisional=provisional, with_progress=False
    )[0]


def next_with_progress(
    study: Study,
    worker_id: int,
    *,
    now: datetime | None = None,
    gold: bool | None = None,
    ref: str = "",
    provisional: bool = False,
    with_progress: bool = True,
) -> tuple[Assignment | None, dict[str, int]]:
    """:func:`next_assignment` and the worker's progress (see :func:`worker_progress`), read in the
    same statement as the new item when there is one; an adaptive study's ``total`` is read after the
    transaction, so the item's lock is not held for it. ``with_progress=False``: no progress (``{}``).

    A study whose config sets ``gold_rate`` mixes its golds in at that rate when ``gold`` is not
    given (:mod:`annotate.quality.gold_mixing`); otherwise items come in queue order."""
    rate = study.config.get(GOLD_RATE_KEY) if gold is None else None
    if rate is not None and (gold := gold_wanted(study, worker_id, rate)) is not None:
        for wanted in (gold, not gold):  # that kind ran out: the other one, if any is left
            assignment, progress = next_with_progress(
                study,
                worker_id,
                now=now,
                gold=wanted,
                ref=ref,
                provisional=provisional,
                with_progress=with_progress,
            )
            if assignment is not None:
                break
        return assignment, progress
    now = now or timezone.now()
    handed = _in_one_trip(study, worker_id, now, gold, ref, provisional)
    if handed is not None:
        return _with_progress(study, worker_id, ref, *handed, with_progress)
    wait, refused = False, 0
    for _ in range(MAX_ROUNDS):
        try:
            with sql.transaction_begun_by_first_statement() as begin:
                outcome, progress = _next(study, worker_id, now, gold, wait, begin, ref, provisional)
        except IntegrityError:
            refused += 1
            if refused == MAX_REFUSALS:
                raise
            continue
        if outcome is not _AGAIN:
            return _with_progress(study, worker_id, ref, outcome, progress, with_progress)
        wait = True
    raise RuntimeError(f"no assignment decided for worker {worker_id} after {MAX_ROUNDS} rounds")


def _with_progress(
    study: Study, worker_id: int, ref: str, outcome, progress: dict | None, with_progress: bool
) -> tuple[Assignment | None, dict[str, int]]:
    """What :func:`next_with_progress` answers for a decided hand-out."""
    if not with_progress:
        return outcome, {}
    if progress is not None and adaptive_policy(study):
        progress = {**progress, "total": worker_total(study, worker_id, progress["done"], ref)}
    return outcome, progress or worker_progress(study, worker_id, ref)


_AGAIN = object()


def _next(
    study: Study,
    worker_id: int,
    now: datetime,
    gold: bool | None,
    wait: bool,
    begin: str = "",
    ref: str = "",
    provisional: bool = False,
):
    """One transaction of :func:`next_with_progress`; returns ``(outcome, progress or None)``.
    ``begin`` is sent before the first statement (see :func:`annotate.infra.sql.transaction_begun_by_first_statement`).

    Without ``wait``, items locked by other requests are skipped; when only such items are left, the
    caller is told to come again (``_AGAIN``) with ``wait``: then the first open item is locked even if
    that means waiting, one item per transaction, so a transaction never waits while it holds an
    item's lock (no deadlock).
    """
    limit = study.config.get("max_items_per_worker")
    expires_at = now + timedelta(seconds=study.time_limit_s)
    lock = "wait" if wait else "skip"
    together = sql.native() and _exclusion_hook(study) is None
    if together:  # the common case: the worker's lock and the first candidate share one round trip
        status, found = _lock_then_candidate(study.pk, worker_id, now, begin, gold, lock, limit, ref)
    else:
        status = _lock_worker_and_release(study.pk, worker_id, now, begin)
    if status != Worker.Status.ACTIVE:
        raise WorkerBlocked(f"worker {worker_id} is {status or 'unknown'}")
    skipped: list[int] = [] if together else kind_excluded_items(study, worker_id)
    if not together:
        found = _candidate(study.pk, worker_id, skipped, gold, lock, limit, ref)
    while found is not None:
        item_id, needed = found[0], found[1]
        assignment = _take_slot(study.pk, worker_id, item_id, needed, now, expires_at, ref, provisional)
        if assignment is not None:
            return _handed(study, assignment, found)
        if wait:
            return _AGAIN, None
        skipped.append(item_id)
        found = _candidate(study.pk, worker_id, skipped, gold, lock, limit, ref)
    held = held_assignment(study, worker_id, ref)
    if held is not None:
        return held, None
    if limit and _submitted_count(study.pk, worker_id, ref) >= limit:
        return None, None
    if not wait and _candidate(study.pk, worker_id, skipped, gold, None, None, ref) is not None:
        return _AGAIN, None  # only items other requests hold locks on are left: wait for them
    return _overflow(study, worker_id, now, expires_at, skipped, gold, lock, limit, ref, provisional)


def _handed(study: Study, assignment: Assignment, found: tuple):
    """``(assignment, progress)`` for an assignment just made on the candidate ``found``."""
    item_id, _, payload, is_gold, done = found
    assignment.item = Item(pk=item_id, study_id=study.pk, payload=payload, is_gold=is_gold)
    return assignment, {"done": done, "total": worker_share(study)}


def _overflow(
    study: Study,
    worker_id: int,
    now: datetime,
    expires_at: datetime,
    skipped: list[int],
    gold: bool | None,
    lock: str,
    limit: int | None,
    ref: str,
    provisional: bool,
):
    """Every free slot is held: an item with fewer confirmed (not provisional) live assignments than it
    needs, the least-held first, on a slot past the ones it needs (see the module docstring). Unconfirmed
    holders never keep anyone from work; an item stops once it has its confirmed holders.

    With no unconfirmed holder in the study nothing is read: the first pass found no free slot, so every
    item still short of answers has as many live assignments as it needs, all confirmed. This is the end of
    every study, where each worker's last request would otherwise count every item's live assignments."""
    if not unconfirmed_holders(study.pk).exists():
        return None, None
    found = _candidate(study.pk, worker_id, skipped, gold, lock, limit, ref, overflow=True)
    while found is not None:
        item_id, needed = found[0], found[1]
        assignment = _take_slot(
            study.pk, worker_id, item_id, needed, now, expires_at, ref, provisional, overflow=True
        )
        if assignment is not None:
            return _handed(study, assignment, found)
        if lock == "wait":
            return _AGAIN, None
        skipped.append(item_id)
        found = _candidate(study.pk, worker_id, skipped, gold, lock, limit, ref, overflow=True)
    if lock != "wait" and _candidate(study.pk, worker_id, skipped, gold, None, None, ref, overflow=True):
        return _AGAIN, None
    return None, None


def unconfirmed_holders(study_id: int) -> QuerySet[Assignment]:
    """The study's live provisional assignments (``assignment_unconfirmed_idx`` holds just these)."""
    return Assignment.objects.filter(study_id=study_id, provisional=True).exclude(status=RELEASED)


def _exclusion_hook(study: Study):
    return getattr(get_kind(study.kind), "excluded_items", None)


def kind_excluded_items(study: Study, worker_id: int) -> list[int]:
    """Items the study's task kind keeps from this worker: the kind's optional
    ``excluded_items(study, worker_id)`` (called after the worker's row is locked), else none."""
    hook = _exclusion_hook(study)
    return list(hook(study, worker_id)) if hook is not None else []


def _own(ref: str) -> Q:
    """A worker's assignments that are the seat's own: confirmed ones, or any made under its unit ``ref``."""
    return Q(provisional=False) | Q(provider_assignment_id=ref)


def _submitted_count(study_id: int, worker_id: int, ref: str = "") -> int:
    """The answers the seat of ``worker_id`` under ``ref`` submitted in the study, and the items it
    skipped (see :func:`_own` and :mod:`annotate.protocol.controls`)."""
    own = Assignment.objects.filter(worker_id=worker_id, study_id=study_id).filter(_own(ref))
    return own.filter(status=SUBMITTED).count() + own.filter(skip__isnull=False).count()


# a worker's status in a study: the site-wide status, unless the study's owner blocked them (WorkerBlock)
_STATUS_IN_STUDY = f"""CASE WHEN EXISTS (
        SELECT 1 FROM {WorkerBlock._meta.db_table} b JOIN {Study._meta.db_table} s ON s.owner_id = b.owner_id
        WHERE s.id = {{study}} AND b.worker_id = {{worker}}) THEN '{Worker.Status.BLOCKED.value}' ELSE w.status END"""
_LOCK_AND_RELEASE = Prepared(
    "hatlab_lock_worker",
    ("bigint", "bigint", "timestamptz"),
    f"""WITH released AS (
            UPDATE {_A} SET status = '{RELEASED}' WHERE study_id = $1 AND status = '{ASSIGNED}' AND expires_at < $3
            RETURNING 1)
        SELECT {_STATUS_IN_STUDY.format(study="$1", worker="$2")}, (SELECT count(*) FROM released)
        FROM {_W} w WHERE w.id = $2 FOR UPDATE OF w""",
)


def _lock_worker_and_release(study_id: int, worker_id: int, now: datetime, begin: str = "") -> str | None:
    """Lock the worker's row (their requests queue up) and release the study's expired assignments;
    returns the worker's status (``None`` for no such worker)."""
    if sql.native():
        with connection.cursor() as cursor:
            _LOCK_AND_RELEASE.execute(cursor, [study_id, worker_id, now], prefix=begin)
            row = cursor.fetchone()
        return None if row is None else row[0]
    status = Worker.objects.select_for_update().filter(pk=worker_id).values_list("status", flat=True).first()
    release_expired(study_id, now)
    owner = Study.objects.filter(pk=study_id).values_list("owner_id", flat=True).first()
    if status is not None and WorkerBlock.objects.filter(owner_id=owner, worker_id=worker_id).exists():
        return Worker.Status.BLOCKED.value
    return status


# The seat's own submitted answers and skipped items: confirmed ones, or any under its unit ($6); see _own.
_DONE = f"""((SELECT count(*) FROM {_A} d WHERE d.worker_id = $2 AND d.study_id = $1 AND d.status = '{SUBMITTED}'
             AND (NOT d.provisional OR d.provider_assignment_id = $6))
           + (SELECT count(*) FROM {_K} k JOIN {_A} d ON d.id = k.assignment_id
              WHERE k.worker_id = $2 AND k.study_id = $1 AND (NOT d.provisional OR d.provider_assignment_id = $6)))"""
_LIVE = f"(SELECT count(*) FROM {{_A}} a WHERE a.item_id = i.id AND a.status <> '{RELEASED}'{{only}})"
_CANDIDATE_SQL = f"""
    SELECT i.id, i.responses_needed, i.payload, i.is_gold, {_DONE}, (SELECT {_STATUS_IN_STUDY.format(study="$1", worker="$2")} FROM {_W} w WHERE w.id = $2)
    FROM {_I} i
    WHERE i.study_id = $1 AND NOT i.retired {{open}}
      AND ($3::boolean IS NULL OR i.is_gold = $3)
      AND i.id <> ALL($4)
      AND NOT EXISTS (SELECT 1 FROM {_A} a WHERE a.item_id = i.id AND a.worker_id = $2
                      AND (NOT a.provisional OR a.provider_assignment_id = $6))
      AND {{live}} < i.responses_needed
      AND NOT EXISTS (SELECT 1 FROM {_A} h WHERE h.worker_id = $2 AND h.study_id = $1 AND h.status = '{ASSIGNED}'
                      AND h.provider_assignment_id = $6)
      AND ($5::integer IS NULL OR $5 > {_DONE})
    ORDER BY {{order}}
    LIMIT 1"""
# The first pass: a free slot (every live assignment holds one), in queue order (an adaptive study's items
# collecting their minimum, round 0, before those asked for more: annotate.quality.redundancy); the count the
# triggers keep (Item.slots_taken) matches item_queue_idx, so the items whose slots are all held are not walked
# past; the slot statement after the item's lock, and the unique constraints, have the last word. The overflow pass:
# fewer confirmed live assignments than needed, the least-held item first.
_PASSES = {
    False: _CANDIDATE_SQL.format(
        open="AND i.responses_done < i.responses_needed AND i.slots_taken < i.responses_needed",
        live=_LIVE.format(_A=_A, only=""),
        order="i.round, i.position, i.id",
    ),
    True: _CANDIDATE_SQL.format(
        open="",
        live=_LIVE.format(_A=_A, only=" AND NOT a.provisional"),
        order=f"{_LIVE.format(_A=_A, only='')}, i.position, i.id",
    ),
}
_CANDIDATE = {
    (lock, overflow): Prepared(
        f"hatlab_{'overflow' if overflow else 'candidate'}_{name}",
        ("bigint", "bigint", "boolean", "bigint[]", "integer", "text"),
        f"{_PASSES[overflow]} {clause}",
    )
    for lock, name, clause in (
        ("skip", "skip", "FOR UPDATE OF i SKIP LOCKED"),
        ("wait", "wait", "FOR UPDATE OF i"),
        (None, "read", ""),
    )
    for overflow in (False, True)
}


_WORKER_STATUS = Prepared(
    "hatlab_worker_status",
    ("bigint", "bigint"),
    f"SELECT {_STATUS_IN_STUDY.format(study='$1', worker='$2')} FROM {_W} w WHERE w.id = $2",
)


def _lock_then_candidate(
    study_id: int,
    worker_id: int,
    now: datetime,
    begin: str,
    gold: bool | None,
    lock: str,
    limit: int | None,
    ref: str = "",
) -> tuple[str | None, tuple[int, int, dict, bool, int] | None]:
    """:func:`_lock_worker_and_release` and then :func:`_candidate` in one round trip (PostgreSQL):
    the worker's status and the first candidate, which carries that status (read after the lock)."""
    with connection.cursor() as cursor:
        sql.execute_together(
            cursor,
            [
                (_LOCK_AND_RELEASE, [study_id, worker_id, now]),
                (_CANDIDATE[lock, False], [study_id, worker_id, gold, [], limit, ref]),
            ],
            prefix=begin,
        )
        row = cursor.fetchone()
        if row is None:  # no candidate: the status on its own
            _WORKER_STATUS.execute(cursor, [study_id, worker_id])
            status = cursor.fetchone()
            return (None if status is None else status[0]), None
    return row[5], _candidate_row(row)


def _candidate_row(row) -> tuple[int, int, dict, bool, int]:
    payload = json.loads(row[2]) if isinstance(row[2], str) else row[2]
    return row[0], row[1], payload, row[3], row[4]


def _candidate(
    study_id: int,
    worker_id: int,
    skipped: list[int],
    gold: bool | None,
    lock: str | None,
    limit: int | None,
    ref: str = "",
    overflow: bool = False,
) -> tuple[int, int, dict, bool, int] | None:
    """The first open item (by position) this worker never had under ``ref`` (see :func:`_own`), unless
    they hold an open assignment under ``ref`` or reached ``limit``: locked skipping locked ones
    (``"skip"``), locked waiting for a lock (``"wait"``), or just read (``None``). With ``overflow``, an
    item with fewer confirmed live assignments than needed, the least-held first (see the module
    docstring). Comes with the worker's submitted count, for their progress."""
    if sql.native():
        with connection.cursor() as cursor:
            _CANDIDATE[lock, overflow].execute(cursor, [study_id, worker_id, gold, skipped, limit, ref])
            row = cursor.fetchone()
        return None if row is None else _candidate_row(row)
    if Assignment.objects.filter(
        worker_id=worker_id, study_id=study_id, status=ASSIGNED, provider_assignment_id=ref
    ).exists():
        return None
    done = _submitted_count(study_id, worker_id, ref)
    if limit and done >= limit:
        return None
    live = Count("assignments", filter=~Q(assignments__status=RELEASED))
    confirmed = Count(
        "assignments", filter=~Q(assignments__status=RELEASED) & Q(assignments__provisional=False)
    )
    had = Assignment.objects.filter(item=OuterRef("pk"), worker_id=worker_id).filter(_own(ref))
    qs = (
        Item.objects.filter(study_id=study_id, retired=False)
        .exclude(pk__in=skipped)
        .exclude(Exists(had))
        .annotate(live=live, confirmed=confirmed)
    )
    if overflow:
        qs = qs.filter(confirmed__lt=F("responses_needed")).order_by("live", "position", "id")
    else:
        qs = qs.filter(responses_done__lt=F("responses_needed"), live__lt=F("responses_needed"))
        qs = qs.order_by("round", "position", "id")
    if gold is not None:
        qs = qs.filter(is_gold=gold)
    row = qs.values_list("id", "responses_needed", "payload", "is_gold").first()
    return None if row is None else (*row, done)


_TAKE_SQL = f"""INSERT INTO {_A} (uid, study_id, item_id, worker_id, slot, status, assigned_at, expires_at,
                          provider_assignment_id, provisional)
        SELECT $1, $2, $3, $4, s.slot, '{ASSIGNED}', $5, $6, $8, $9
        FROM generate_series(0, $7 - 1{{beyond}}) AS s(slot)
        WHERE NOT EXISTS (
            SELECT 1 FROM {_A} a WHERE a.item_id = $3 AND a.slot = s.slot AND a.status <> '{RELEASED}'){{room}}
        ORDER BY s.slot LIMIT 1
        RETURNING id, slot"""
# The first pass takes one of the item's own slots; the overflow pass any free slot number, while the
# item's confirmed live assignments are fewer than it needs (read after the item's lock).
_TAKE_SLOT = {
    overflow: Prepared(
        f"hatlab_take_{'overflow' if overflow else 'slot'}",
        ("uuid", "bigint", "bigint", "bigint", "timestamptz", "timestamptz", "integer", "text", "boolean"),
        _TAKE_SQL.format(beyond="", room="")
        if not overflow
        else _TAKE_SQL.format(
            beyond=f" + (SELECT count(*) FROM {_A} a WHERE a.item_id = $3 AND a.status <> '{RELEASED}')",
            room=f""" AND (SELECT count(*) FROM {_A} a WHERE a.item_id = $3 AND a.status <> '{RELEASED}'
                        AND NOT a.provisional) < $7""",
        ),
    )
    for overflow in (False, True)
}


def _take_slot(
    study_id: int,
    worker_id: int,
    item_id: int,
    needed: int,
    now: datetime,
    expires_at: datetime,
    ref: str = "",
    provisional: bool = False,
    overflow: bool = False,
) -> Assignment | None:
    """Insert an assignment (under the platform's unit ``ref``, ``provisional`` or not) on the lowest free
    slot of a locked item, or ``None`` when it is full (with ``overflow``: when its confirmed live
    assignments are as many as it needs; see the module docstring).
    On PostgreSQL one statement with a fresh snapshot: a slot committed since the item was chosen
    is seen as taken."""
    if sql.native():
        assignment = _unsaved(study_id, item_id, worker_id, now, expires_at, ref, provisional)
        args = [assignment.uid, study_id, item_id, worker_id, now, expires_at, needed, ref, provisional]
        with connection.cursor() as cursor:
            _TAKE_SLOT[overflow].execute(cursor, args)
            row = cursor.fetchone()
        if row is None:
            return None
        assignment.pk, assignment.slot = row
        return assignment
    live = Assignment.objects.filter(item_id=item_id).exclude(status=RELEASED)
    used = set(live.values_list("slot", flat=True))
    if overflow and live.filter(provisional=False).count() >= needed:
        return None
    free = next((s for s in range(needed + (len(used) if overflow else 0)) if s not in used), None)
    if free is None:
        return None
    assignment = Assignment.objects.create(
        study_id=study_id,
        item_id=item_id,
        worker_id=worker_id,
        slot=free,
        expires_at=expires_at,
        provider_assignment_id=ref,
        provisional=provisional,
    )
    # ``assigned_at`` is auto_now_add, which would ignore ``now``; set it as the native statement does.
    Assignment.objects.filter(pk=assignment.pk).update(assigned_at=now)
    assignment.assigned_at = now
    return assignment


def _unsaved(
    study_id: int,
    item_id: int | None,
    worker_id: int,
    now: datetime,
    expires_at: datetime,
    ref: str,
    provisional: bool,
) -> Assignment:
    """The assignment a hand-out statement inserts (its uid made here), before it has an id and a slot."""
    assignment = Assignment(
        study_id=study_id,
        item_id=item_id,
        worker_id=worker_id,
        status=ASSIGNED,
        expires_at=expires_at,
        provider_assignment_id=ref,
        provisional=provisional,
    )
    assignment.assigned_at = now
    return assignment


def _named(statement: str, names: dict[int, str]) -> str:
    """``statement`` with its parameters ``$n`` written as the PL/pgSQL names ``names[n]``."""
    return re.sub(r"\$(\d+)", lambda m: names[int(m.group(1))], statement)


# The common hand-out in one statement, so in one round trip and its own transaction: a PL/pgSQL function
# (temporary, made on each connection with the statements below, so that its SQL is theirs) that locks the
# worker and releases expired assignments (_LOCK_AND_RELEASE), then takes the first candidate
# (_CANDIDATE["skip", False]) and its lowest free slot (_TAKE_SLOT[False]). In READ COMMITTED each statement
# of a function runs on a fresh snapshot, so the slot is read after the item's lock, as in the two-statement
# transaction. Nothing taken (a held assignment, the worker's limit, items full or locked, the overflow
# pass, a blocked worker): the row says so and the caller takes the general path.
_ONE_TRIP_TRIES = 3
_HAND_OUT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION pg_temp.hatlab_hand_out(
    p_study bigint, p_worker bigint, p_now timestamptz, p_gold boolean, p_limit integer, p_ref text,
    p_uid uuid, p_expires timestamptz, p_provisional boolean)
RETURNS TABLE (o_status text, o_assignment bigint, o_slot integer, o_item bigint, o_needed integer,
               o_payload jsonb, o_is_gold boolean, o_done bigint)
LANGUAGE plpgsql VOLATILE AS $hatlab$
DECLARE
    v_skipped bigint[] := '{{}}';
    v_released bigint;
    v_status text;
BEGIN
    {_named(_LOCK_AND_RELEASE.sql, {1: "p_study", 2: "p_worker", 3: "p_now"})}
    INTO o_status, v_released;
    IF o_status IS DISTINCT FROM '{Worker.Status.ACTIVE.value}' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    FOR attempt IN 1..{_ONE_TRIP_TRIES} LOOP
        {
    _named(
        _CANDIDATE["skip", False].sql,
        {1: "p_study", 2: "p_worker", 3: "p_gold", 4: "v_skipped", 5: "p_limit", 6: "p_ref"},
    )
}
        INTO o_item, o_needed, o_payload, o_is_gold, o_done, v_status;
        EXIT WHEN NOT FOUND;
        {
    _named(
        _TAKE_SLOT[False].sql,
        {
            1: "p_uid",
            2: "p_study",
            3: "o_item",
            4: "p_worker",
            5: "p_now",
            6: "p_expires",
            7: "o_needed",
            8: "p_ref",
            9: "p_provisional",
        },
    )
}
        INTO o_assignment, o_slot;
        IF FOUND THEN
            RETURN NEXT;
            RETURN;
        END IF;
        v_skipped := v_skipped || o_item;
    END LOOP;
    o_item := NULL;
    RETURN NEXT;
END
$hatlab$"""
_HAND_OUT = Prepared(
    "hatlab_hand_out",
    ("bigint", "bigint", "timestamptz", "boolean", "integer", "text", "uuid", "timestamptz", "boolean"),
    "SELECT * FROM pg_temp.hatlab_hand_out($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    needs=_HAND_OUT_FUNCTION,
)


def _in_one_trip(
    study: Study, worker_id: int, now: datetime, gold: bool | None, ref: str, provisional: bool
) -> tuple[Assignment, dict[str, int]] | None:
    """The common hand-out (PostgreSQL, no kind exclusions) in one round trip: ``(assignment, progress)``,
    or ``None`` when the general path must decide (see ``_HAND_OUT_FUNCTION``). Raises
    :class:`WorkerBlocked` as the general path does."""
    if not sql.native() or _exclusion_hook(study) is not None:
        return None
    expires_at = now + timedelta(seconds=study.time_limit_s)
    assignment = _unsaved(study.pk, None, worker_id, now, expires_at, ref, provisional)
    limit = study.config.get("max_items_per_worker")
    args = [study.pk, worker_id, now, gold, limit, ref, assignment.uid, expires_at, provisional]
    inner = transaction.atomic() if connection.in_atomic_block else nullcontext()  # a savepoint inside one
    try:
        with inner, connection.cursor() as cursor:
            _HAND_OUT.execute(cursor, args)
            status, assignment.pk, assignment.slot, *found = cursor.fetchone()
    except IntegrityError:  # a slot committed under it: the general path retries
        return None
    except ProgrammingError as exc:
        if not sql.function_lost(exc):
            raise
        sql.forget(_HAND_OUT)  # made in a transaction that rolled back: made again next time
        return None
    if status != Worker.Status.ACTIVE:
        raise WorkerBlocked(f"worker {worker_id} is {status or 'unknown'}")
    if assignment.pk is None:
        return None
    assignment.item_id = found[0]
    return _handed(study, assignment, _candidate_row(found))


ITEM_COUNT_TTL_S = 30.0
_item_counts: dict[uuid.UUID, tuple[float, int]] = {}


def study_item_count(study: Study) -> int:
    """The number of items (not retired) of a study, for progress displays.

    Kept for ``ITEM_COUNT_TTL_S`` seconds in this process: counting a large study's items on every
    request would cost as much as handing the item out, and the figure only labels a progress bar.
    Keyed by the study's uid, not its id: SQLite gives a deleted or rolled-back study's id to the next one.
    """
    now = time.monotonic()
    cached = _item_counts.get(study.uid)
    if cached is not None and now - cached[0] < ITEM_COUNT_TTL_S:
        return cached[1]
    count = Item.objects.filter(study_id=study.pk, retired=False).count()
    _item_counts[study.uid] = (now, count)
    return count


_shares: dict[uuid.UUID, tuple[float, int]] = {}


def worker_share(study: Study) -> int:
    """The most items one worker is given in the study, the ``q`` of their "item i of q": the kind's share
    rule over the items in use (:meth:`annotate.tasks.base.TaskKind.worker_share`: one question per text
    in the forced-choice tasks), capped by ``max_items_per_worker``. Kept as :func:`study_item_count` is."""
    kind = get_kind(study.kind)
    if type(kind).worker_share is TaskKind.worker_share:  # every item: the count alone
        share = study_item_count(study)
    else:
        now = time.monotonic()
        cached = _shares.get(study.uid)
        if cached is not None and now - cached[0] < ITEM_COUNT_TTL_S:
            share = cached[1]
        else:
            documents = Item.objects.filter(study_id=study.pk, retired=False).values_list(
                "document_id", flat=True
            )
            share = kind.worker_share(study, list(documents))
            _shares[study.uid] = (now, share)
    limit = study.config.get("max_items_per_worker")
    return min(share, limit) if limit else share


def work_left(study: Study, worker_id: int, ref: str = "") -> bool:
    """Whether the hand-out has anything more for this worker under ``ref`` now (an open assignment, or
    an item they could be given), read without taking anything."""
    held = Assignment.objects.filter(
        worker_id=worker_id, study_id=study.pk, status=ASSIGNED, provider_assignment_id=ref
    ).exists()
    limit = study.config.get("max_items_per_worker")
    if held:
        return True
    return any(
        _candidate(study.pk, worker_id, [], None, None, limit, ref, overflow=overflow) is not None
        for overflow in (False, True)
    )


def worker_total(study: Study, worker_id: int, done: int, ref: str = "") -> int:
    """The ``q`` of a worker's "item i of q", who submitted ``done`` answers: :func:`worker_share`; in an
    adaptive study (:mod:`annotate.quality.redundancy`) no more than they will be given: their answers, the
    item they hold and, under the kind's share rule, the items still collecting answers that they were not
    given (an item that stopped before the worker reached it is not theirs to count)."""
    share = worker_share(study)
    if not adaptive_policy(study):
        return share
    theirs = Assignment.objects.filter(study_id=study.pk, worker_id=worker_id).exclude(status=RELEASED)
    held = theirs.filter(status=ASSIGNED, provider_assignment_id=ref).count()
    open_items = (
        Item.objects.filter(study_id=study.pk, retired=False, stop_reason="")
        .exclude(pk__in=theirs.values("item_id"))
        .exclude(pk__in=kind_excluded_items(study, worker_id))
    )
    kind = get_kind(study.kind)
    if type(kind).worker_share is TaskKind.worker_share:  # every item: the count alone
        left = open_items.count()
    else:
        left = kind.worker_share(study, list(open_items.values_list("document_id", flat=True)))
    return min(share, done + held + left)


def adaptive_policy(study: Study) -> bool:
    """Whether the study's redundancy policy is adaptive (:mod:`annotate.quality.redundancy`)."""
    return ((study.config or {}).get(REDUNDANCY_KEY) or {}).get("mode") == "adaptive"


def worker_progress(study: Study, worker_id: int, ref: str = "") -> dict[str, int]:
    """``{"done": answers the seat of ``worker_id`` under ``ref`` submitted (its own: see :func:`_own`),
    "total": items they may answer at most (:func:`worker_total`)}``."""
    done = _submitted_count(study.pk, worker_id, ref)
    return {"done": done, "total": worker_total(study, worker_id, done, ref)}


def held_assignment(study: Study, worker_id: int, ref: str = "") -> Assignment | None:
    """The worker's open assignment in ``study`` under ``ref`` (with its item), handing out nothing new:
    what a paused study still lets the worker finish."""
    return (
        Assignment.objects.filter(
            worker_id=worker_id, study_id=study.pk, status=ASSIGNED, provider_assignment_id=ref
        )
        .select_related("item")
        .only("id", "uid", "item_id", "slot", "status", "expires_at", "item__payload", "item__is_gold")
        .order_by("id")
        .first()
    )
