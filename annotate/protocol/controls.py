"""The worker's controls on the items: skip an item with a reason, and go back to an answer already
sent to change it.

A skip releases the worker's assignment (its slot goes to the next worker who asks) and records the
reason; the hand-out never gives a worker an item they once held, so the item goes to someone else. A
skipped item counts toward the worker's share (:func:`annotate.handout.assignment.worker_progress`), so
at most ``max_skips`` of them (protocol setting) may be skipped.

An edit replaces the stored answer after checking it as a new answer is checked, keeps the answer
before it in :class:`~annotate.models.ResponseEdit`, and is stored once per ``submission_key`` (a
retried edit changes nothing more). Only the worker's own answers, while the study runs and within the
study's time limit of when they were sent (the session), may be changed."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotate.handout.submission import AssignmentNotFound, SubmissionConflict
from annotate.handout.workers import Seat
from annotate.models import Assignment, ItemSkip, Response, ResponseEdit, Study
from annotate.tasks import get_kind

DEFAULT_MAX_SKIPS = 3


def skip_reasons(study: Study) -> list[str]:
    return list((study.protocol or {}).get("skip_reasons", []))


def max_skips(study: Study) -> int:
    return int((study.protocol or {}).get("max_skips", DEFAULT_MAX_SKIPS))


def back_allowed(study: Study) -> bool:
    return bool((study.protocol or {}).get("back"))


def _held(assignment: Assignment | None, seats: Mapping[str, Seat]) -> Seat | None:
    if assignment is None:
        return None
    seat = seats.get(str(assignment.study.uid))
    if seat is None or not seat.holds(assignment.worker_id, assignment.provider_assignment_id):
        return None
    return seat


def skip(assignment_uid: uuid.UUID | str, seats: Mapping[str, Seat], reason: Any) -> ItemSkip:
    """Skip the open assignment ``assignment_uid`` of one of ``seats`` for ``reason`` (one of the
    study's skip reasons; anything else is refused once the assignment is known to be the seat's). Raises :class:`AssignmentNotFound`, or :class:`SubmissionConflict` naming the
    field (``reason``, ``assignment``, ``study``)."""
    with transaction.atomic():
        assignment = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("study")
            .filter(uid=assignment_uid)
            .first()
        )
        if _held(assignment, seats) is None or assignment is None:
            raise AssignmentNotFound(str(assignment_uid))
        study = assignment.study
        reasons = skip_reasons(study)
        if not reasons:
            raise SubmissionConflict("study", "this study does not let items be skipped")
        if not isinstance(reason, str) or reason not in reasons:
            raise SubmissionConflict("reason", f"choose one of: {'; '.join(reasons)}")
        if assignment.status != Assignment.Status.ASSIGNED:
            raise SubmissionConflict("assignment", "this item is no longer open for you")
        if study.status != Study.Status.RUNNING:
            raise SubmissionConflict("study", "the study is not running")
        skipped = ItemSkip.objects.filter(study=study, worker_id=assignment.worker_id).count()
        if skipped >= max_skips(study):
            raise SubmissionConflict("reason", f"you may skip at most {max_skips(study)} items")
        Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.RELEASED)
        return ItemSkip.objects.create(
            assignment=assignment,
            study=study,
            item_id=assignment.item_id,
            worker_id=assignment.worker_id,
            reason=reason,
        )


def _editable(study: Study, worker_id: int, ref: str, now: datetime):
    """The worker's answers in ``study`` under ``ref`` that may still be changed, newest first."""
    since = now - timedelta(seconds=study.time_limit_s)
    return (
        Response.objects.filter(
            study=study,
            worker_id=worker_id,
            assignment__provider_assignment_id=ref,
            assignment__submitted_at__gte=since,
        )
        .select_related("assignment", "item")
        .order_by("-assignment__submitted_at", "-id")
    )


def previous_answer(
    study: Study, seat: Seat, before: uuid.UUID | None = None, now: datetime | None = None
) -> Response | None:
    """The worker's answer sent just before the one to assignment ``before`` (the newest without it),
    among those they may still change; ``None`` when there is none."""
    if not back_allowed(study) or study.status != Study.Status.RUNNING:
        return None
    answers = _editable(study, seat.worker_id, seat.ref or "", now or timezone.now())
    if before is None:
        return answers.first()
    mine = list(answers.values_list("assignment__uid", flat=True)[:500])
    if before not in mine:
        return None
    index = mine.index(before)
    return answers[index + 1] if index + 1 < len(mine) else None


def edit_answer(
    assignment_uid: uuid.UUID | str,
    seats: Mapping[str, Seat],
    submission_key: uuid.UUID,
    answer: Any,
    now: datetime | None = None,
    timings: dict[str, Any] | None = None,
) -> tuple[ResponseEdit | None, bool]:
    """Replace the answer to ``assignment_uid`` (one of ``seats``') with ``answer``, keeping the one
    before: ``(edit, created)``; a retry with the same ``submission_key`` is ``(the edit, False)``.
    Raises :class:`AssignmentNotFound`, :class:`SubmissionConflict`, or DRF ``ValidationError``
    naming the bad part of ``answer``."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = Assignment.objects.select_related("study").filter(uid=assignment_uid).first()
        if _held(assignment, seats) is None:
            raise AssignmentNotFound(str(assignment_uid))
        response = (
            Response.objects.select_for_update(of=("self",))
            .select_related("assignment", "assignment__study", "item")
            .filter(assignment__uid=assignment_uid)
            .first()
        )
        if response is None:
            raise SubmissionConflict("assignment", "this item has no answer of yours to change yet")
        done = ResponseEdit.objects.filter(submission_key=submission_key).first()
        if done is not None:
            if done.response_id != response.pk:
                raise SubmissionConflict("submission_key", "already used for another answer")
            return done, False
        study = response.assignment.study
        if not back_allowed(study):
            raise SubmissionConflict("study", "this study does not let answers be changed")
        if study.status != Study.Status.RUNNING:
            raise SubmissionConflict("study", "the study is not running: answers can no longer be changed")
        sent = response.assignment.submitted_at
        if sent is None or sent < now - timedelta(seconds=study.time_limit_s):
            raise SubmissionConflict("assignment", "this answer was sent too long ago to be changed")
        kind = get_kind(study.kind)
        item = response.item
        item.study = study
        cleaned = kind.validate_answer(item, answer, timings or {})
        edit = ResponseEdit.objects.create(
            response=response, submission_key=submission_key, previous_answer=response.answer, answer=cleaned
        )
        Response.objects.filter(pk=response.pk).update(
            answer=cleaned, gold_passed=kind.grade_gold(item, cleaned)
        )
        return edit, True
