"""Reconciliation: compare what a crowd platform says was submitted with what we stored, recover
answers we lost, review each submission once, and keep the payment ledger.

For every unit of work the platform reports (:meth:`CrowdProvider.fetch_submissions`):

1. its ``PlatformSubmission`` row is created or updated (unique per provider and external id);
2. a returned or timed-out one releases the worker's open assignments under that unit, so their items
   go back to the pool (the platform re-opens its place itself);
3. a submitted one is matched with our responses: those of its worker whose assignment was handed out
   under the platform's id of that unit of work (the seat's ``ref``), never by time: an answer stored
   under another unit, or by someone else who typed the worker's id, is no answer of this submission. A
   response in the platform's copy of the answers (MTurk's answer XML carries the page's ``hatlab``
   field: submission keys and answers) that we never stored (our server died in between) is stored now
   through the ordinary submission path (idempotent by ``submission_key``), on an assignment of that
   worker under that unit only; what cannot be stored, or a submission with no answer of its own, is
   *flagged* for the researcher;
4. the worker's *provisional* answers under that unit (their assignments carry its id) are verified when
   the unit was bound at entry to the same worker and the same HIT / Prolific study the platform lists it
   under (:class:`~annotate.models.EntryBinding`), and what a stored verified answer triggers runs
   (:func:`~annotate.handout.hooks.on_response_stored`);
5. under automatic review a matched submission is approved, or rejected when the study rejects workers
   excluded by their gold trust; flagged ones wait for a person. A decision is written before the
   platform is called and marked sent after, and the platform's "already approved" counts as sent, so
   nothing is approved, rejected or paid twice however often this runs.

After a complete listing, :func:`set_aside_unconfirmed` sets aside the provisional answers the platform
did not confirm in time (the provider's :meth:`~annotate.crowd.providers.base.CrowdProvider.confirmation_window_s`
plus ``settings.HATLAB_PROVISIONAL_GRACE_S``): their assignments are released and their items' slots
handed out again. It runs only after the platform answered, so an outage never sets genuine work aside;
a set-aside answer stays set aside even if its unit is confirmed later (its slot may be taken again).

Bonuses go through :func:`send_bonus`: the ``Payment`` row and its unique request token come first.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Sum
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base import (
    ANSWER_COPY_FIELD,
    APPROVED,
    REJECTED,
    RETURNED,
    SUBMITTED,
    TIMED_OUT,
    SubmissionRecord,
)
from annotate.crowd.providers.base.retry import ProviderConfigError, platform_errors
from annotate.handout.hooks import on_response_stored, on_verification_changed
from annotate.handout.submission import AssignmentNotFound, SubmissionConflict, submit
from annotate.handout.workers import Seat
from annotate.models import (
    Assignment,
    EntryBinding,
    Item,
    Payment,
    PlatformSubmission,
    Publication,
    Response,
    Study,
    Worker,
    WorkerTrust,
)
from annotate.quality.policy import policy_for
from explain_engine.api import EXCLUDED

logger = logging.getLogger("annotate.crowd.providers")


@dataclass
class ReconcileSummary:
    fetched: int = 0
    matched: int = 0
    recovered: int = 0
    flagged: int = 0
    released: int = 0
    approved: int = 0
    rejected: int = 0
    verified: int = 0
    set_aside: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def copied_submissions(answer: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The page's copy of its submissions in the platform's answer (the ``hatlab`` field, a JSON object
    with a ``submissions`` list); ``None`` when there is no usable copy."""
    raw = answer.get(ANSWER_COPY_FIELD)
    if not isinstance(raw, str):
        return None
    try:
        payload = json.loads(raw)
    except ValueError:
        return None
    entries = payload.get("submissions") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None
    return [e for e in entries if isinstance(e, dict)]


def reconcile_study(
    study: Study, *, review: bool | None = None, now: datetime | None = None
) -> ReconcileSummary:
    """Reconcile every platform submission of ``study``; ``review`` overrides the policy's auto review;
    ``now`` is the time the unconfirmed answers' deadline is measured from."""
    provider = get_provider(study.provider)
    summary = ReconcileSummary()
    if not provider.platform:
        return summary
    auto = policy_for(study).review == "auto" if review is None else review
    try:
        records = list(provider.fetch_submissions(study))
    except platform_errors() as exc:
        summary.errors.append(f"fetching submissions: {exc}")
        return summary
    for record in records:
        summary.fetched += 1
        try:
            submission = _sync(study, provider.name, record, summary)
            if auto and submission.state in (
                PlatformSubmission.State.MATCHED,
                PlatformSubmission.State.RECOVERED,
            ):
                _auto_review(study, submission, summary)
        except platform_errors() as exc:
            logger.warning("reconciling %s %s failed: %s", provider.name, record.external_id, exc)
            summary.errors.append(f"{record.external_id}: {exc}")
    try:
        summary.set_aside = set_aside_unconfirmed(study, now)
    except ProviderConfigError as exc:
        summary.errors.append(f"setting unconfirmed answers aside: {exc}")
    return summary


def _confirm(
    study: Study, provider: str, record: SubmissionRecord, worker: Worker, summary: ReconcileSummary
):
    """Verify ``worker``'s provisional answers under the platform unit ``record`` lists, when that unit
    was bound at entry to the same worker id and the same HIT / Prolific study."""
    scope = Publication.objects.filter(pk=record.publication_id).values_list("external_id", flat=True).first()
    if not EntryBinding.objects.filter(
        provider=provider, ref=record.external_id, holder=record.worker_external_id, scope=scope or ""
    ).exists():
        return
    pending = Response.objects.filter(
        study=study,
        worker=worker,
        verification=Response.Verification.PROVISIONAL,
        assignment__provider_assignment_id=record.external_id,
    )
    ids = list(pending.values_list("id", flat=True))
    if not ids:
        return
    summary.verified += Response.objects.filter(
        pk__in=ids, verification=Response.Verification.PROVISIONAL
    ).update(verification=Response.Verification.VERIFIED)
    # Their places are confirmed now: they count toward the items' confirmed holders in the hand-out.
    Assignment.objects.filter(response__pk__in=ids).update(provisional=False)
    on_verification_changed(study, [worker.pk])


def set_aside_unconfirmed(study: Study, now: datetime | None = None) -> int:
    """Set aside the study's provisional answers older than the platform's confirmation window plus the
    grace period: each one's assignment is released and its item's count of responses goes down, so the
    slot is handed out again. Idempotent (only provisional answers are touched); returns how many."""
    window = get_provider(study.provider).confirmation_window_s(study) + settings.HATLAB_PROVISIONAL_GRACE_S
    deadline = (now or timezone.now()) - timedelta(seconds=window)
    with transaction.atomic():
        rows = list(
            Response.objects.select_for_update()
            .filter(study=study, verification=Response.Verification.PROVISIONAL, created__lt=deadline)
            .values_list("id", "assignment_id", "item_id", "worker_id")
        )
        if not rows:
            return 0
        Response.objects.filter(pk__in=[r[0] for r in rows]).update(
            verification=Response.Verification.SET_ASIDE
        )
        Assignment.objects.filter(pk__in=[r[1] for r in rows]).update(status=Assignment.Status.RELEASED)
        for item_id, count in Counter(r[2] for r in rows).items():
            Item.objects.filter(pk=item_id).update(responses_done=F("responses_done") - count)
    logger.info("set aside %d unconfirmed answer(s) of study %s", len(rows), study.pk)
    on_verification_changed(study, {r[3] for r in rows})
    return len(rows)


def _sync(
    study: Study, provider: str, record: SubmissionRecord, summary: ReconcileSummary
) -> PlatformSubmission:
    worker, _ = Worker.objects.get_or_create(provider=provider, external_id=record.worker_external_id)
    with transaction.atomic():
        submission, _ = PlatformSubmission.objects.select_for_update().get_or_create(
            provider=provider,
            external_id=record.external_id,
            defaults={
                "publication_id": record.publication_id,
                "study": study,
                "worker": worker,
                "worker_external_id": record.worker_external_id,
                "platform_status": record.status,
            },
        )
        submission.platform_status = record.status
        submission.worker = worker
        submission.submitted_at = record.submitted_at or submission.submitted_at
        if record.answer:
            submission.answer = record.answer
        if record.status in (APPROVED, REJECTED) and not submission.decision_sent:
            # Decided on the platform (auto-approval delay, the requester's own site): record it.
            submission.decision = "approve" if record.status == APPROVED else "reject"
            submission.decision_sent = True
            submission.decided_at = submission.decided_at or timezone.now()
        submission.save()
    _confirm(study, provider, record, worker, summary)
    if record.status in (RETURNED, TIMED_OUT):
        released = Assignment.objects.filter(
            study=study,
            worker=worker,
            status=Assignment.Status.ASSIGNED,
            provider_assignment_id=record.external_id,
        ).update(status=Assignment.Status.RELEASED)
        summary.released += released
        PlatformSubmission.objects.filter(pk=submission.pk).update(state=PlatformSubmission.State.RELEASED)
        submission.state = PlatformSubmission.State.RELEASED
        return submission
    if record.status in (SUBMITTED, APPROVED, REJECTED):
        _match(study, submission, record, worker, summary)
    if submission.decision == "approve" and submission.decision_sent:
        _record_reward(submission)
    return submission


def _match(
    study: Study,
    submission: PlatformSubmission,
    record: SubmissionRecord,
    worker: Worker,
    summary: ReconcileSummary,
) -> None:
    entries = copied_submissions(submission.answer) or []
    problems: list[str] = [record.problem] if record.problem else []
    keys: list[uuid.UUID] = []
    for entry in entries:
        try:
            keys.append(uuid.UUID(str(entry.get("submission_key"))))
        except ValueError:
            problems.append(f"copied answer without a valid submission_key: {entry.get('submission_key')!r}")
    stored = set(Response.objects.filter(submission_key__in=keys).values_list("submission_key", flat=True))
    recovered = 0
    for entry, key in zip(entries, keys, strict=False):
        if key in stored:
            continue
        problem = _recover(entry, key, Seat(worker.pk, submission.external_id), study)
        if problem:
            problems.append(problem)
        else:
            recovered += 1
    count = Response.objects.filter(
        study=study, worker=worker, assignment__provider_assignment_id=submission.external_id
    ).count()
    if count == 0:
        problems.append("the platform has a submission but no answer of it is stored here")
    state = (
        PlatformSubmission.State.FLAGGED
        if problems
        else (PlatformSubmission.State.RECOVERED if recovered else PlatformSubmission.State.MATCHED)
    )
    PlatformSubmission.objects.filter(pk=submission.pk).update(
        state=state,
        flag_reason="; ".join(problems),
        responses_ours=count,
        responses_recovered=submission.responses_recovered + recovered,
    )
    submission.state, submission.flag_reason, submission.responses_ours = state, "; ".join(problems), count
    submission.responses_recovered += recovered
    summary.recovered += recovered
    if state == PlatformSubmission.State.FLAGGED:
        summary.flagged += 1
    else:
        summary.matched += 1


def _recover(entry: dict[str, Any], key: uuid.UUID, seat: Seat, study: Study) -> str:
    """Store one answer from the platform's copy through the ordinary submission path, on an assignment
    of the seat's worker under its unit (the submission's); returns what went wrong, or "" when stored."""
    assignment = str(entry.get("assignment", ""))
    timings = entry.get("timings") if isinstance(entry.get("timings"), dict) else {}
    signals = given if isinstance(given := entry.get("signals"), dict) else {}
    try:
        result = submit(
            assignment,
            {str(study.uid): seat},
            key,
            entry.get("answer"),
            timings,
            signals,
            allow_finished=True,
            recovered=True,
        )
    except AssignmentNotFound:
        return f"copied answer {key}: its assignment {assignment!r} is not this worker's under this unit"
    except SubmissionConflict as exc:
        return f"copied answer {key}: {exc.message}"
    except ValidationError as exc:
        return f"copied answer {key}: invalid ({exc.detail})"
    except (ValueError, TypeError) as exc:
        return f"copied answer {key}: {exc}"
    logger.info("recovered answer %s of worker %s from the platform's copy", key, seat.worker_id)
    on_response_stored(Response.objects.select_related("study").get(pk=result.response_id))
    return ""


def _auto_review(study: Study, submission: PlatformSubmission, summary: ReconcileSummary) -> None:
    if submission.decision or submission.platform_status != SUBMITTED:
        return
    policy = policy_for(study)
    excluded = WorkerTrust.objects.filter(
        study=study, worker_id=submission.worker_id, status=EXCLUDED
    ).exists()
    if excluded and policy.excluded_action == "reject":
        if review_submission(submission, "reject", policy.rejection_feedback):
            summary.rejected += 1
    elif review_submission(submission, "approve", "Thank you for your work."):
        summary.approved += 1


def review_submission(submission: PlatformSubmission, decision: str, feedback: str = "") -> bool:
    """Approve or reject a platform submission once. The decision is stored (row locked) before the
    platform is called and marked sent after; a second call, or a platform that says it is done already,
    sends nothing more. Returns whether this call decided it."""
    if decision not in ("approve", "reject"):
        raise ProviderConfigError("decision", "must be approve or reject")
    if decision == "reject" and not feedback.strip():
        raise ProviderConfigError("feedback", "a rejection needs feedback for the worker")
    with transaction.atomic():
        locked = PlatformSubmission.objects.select_for_update().get(pk=submission.pk)
        if locked.decision_sent or (locked.decision and locked.decision != decision):
            submission.decision, submission.decision_sent = locked.decision, locked.decision_sent
            return False
        locked.decision = decision
        locked.decision_feedback = feedback
        locked.decided_at = locked.decided_at or timezone.now()
        locked.save(update_fields=["decision", "decision_feedback", "decided_at", "synced_at"])
    provider = get_provider(locked.provider)
    if decision == "approve":
        provider.approve(locked, feedback)
    else:
        provider.reject(locked, feedback)
    PlatformSubmission.objects.filter(pk=locked.pk).update(decision_sent=True)
    locked.decision_sent = True
    submission.decision, submission.decision_feedback, submission.decision_sent = decision, feedback, True
    if decision == "approve":
        _record_reward(locked)
    return True


def _record_reward(submission: PlatformSubmission) -> Payment | None:
    """The ledger row of the reward an approval pays (recorded once, by a unique token)."""
    if submission.worker_id is None:
        return None
    publication: Publication = submission.publication
    provider = get_provider(submission.provider)
    payment, _ = Payment.objects.get_or_create(
        request_token=f"reward-{submission.provider}-{submission.external_id}"[:64],
        defaults={
            "study_id": submission.study_id,
            "worker_id": submission.worker_id,
            "submission": submission,
            "provider": submission.provider,
            "kind": Payment.Kind.REWARD,
            "amount": publication.reward,
            "fee": provider.fee(publication.study, publication.reward, "reward", publication.places),
            "currency": publication.currency,
            "status": Payment.Status.SENT,
            "sent_at": timezone.now(),
        },
    )
    return payment


#: The largest bonus one payment may carry (the publish page's bonus form has the same bound).
MAX_BONUS = Decimal("100")


def send_bonus(
    study: Study,
    worker: Worker,
    amount: Decimal,
    reason: str,
    token: str,
    submission: PlatformSubmission | None = None,
) -> Payment:
    """Pay ``worker`` a bonus once per ``token`` (a form's nonce, or a job's key): the ledger row is
    created first; a second call with the same token returns the row and pays nothing more. The amount is
    checked here, for every caller: a finite number above 0 and at most :data:`MAX_BONUS` (NaN, Infinity and
    1e30 are refused naming ``amount``, before anything is stored)."""
    if not amount.is_finite() or amount <= 0 or amount > MAX_BONUS:
        raise ProviderConfigError("amount", f"must be a number more than 0 and at most {MAX_BONUS}")
    if not reason.strip():
        raise ProviderConfigError("reason", "workers are told why they get a bonus; give a reason")
    if not token or len(token) > 64:
        raise ProviderConfigError("token", "must be 1-64 characters")
    provider = get_provider(worker.provider)
    with transaction.atomic():
        payment, created = Payment.objects.select_for_update().get_or_create(
            request_token=token,
            defaults={
                "study": study,
                "worker": worker,
                "submission": submission,
                "provider": worker.provider,
                "kind": Payment.Kind.BONUS,
                "amount": amount,
                "fee": provider.fee(study, amount, "bonus") if provider.platform else Decimal("0.00"),
                "currency": provider.currency,
                "reason": reason,
            },
        )
        if not created and (payment.worker_id != worker.pk or payment.amount != amount):
            raise ProviderConfigError("token", "already used for a different payment")
        if payment.status == Payment.Status.SENT:
            return payment
    try:
        reference = provider.send_bonus(payment)
    except platform_errors() as exc:
        Payment.objects.filter(pk=payment.pk).update(status=Payment.Status.FAILED, error=str(exc)[:2000])
        payment.refresh_from_db()
        raise
    Payment.objects.filter(pk=payment.pk).update(
        status=Payment.Status.SENT,
        sent_at=timezone.now(),
        external_ref=reference or payment.external_ref,
        error="",
    )
    payment.refresh_from_db()
    return payment


def unsubmitted_workers(study: Study) -> list[int]:
    """Platform workers who answered here but whom the platform reports no submission for (they may
    still be working, or never submitted: they cannot be paid through the platform)."""
    provider = get_provider(study.provider)
    if not provider.platform:
        return []
    reported = PlatformSubmission.objects.filter(study=study).values_list("worker_id", flat=True)
    return list(
        Response.objects.filter(study=study, worker__provider=provider.name)
        .exclude(worker_id__in=reported)
        .values_list("worker_id", flat=True)
        .distinct()
    )


def spend(study: Study) -> dict[str, Any]:
    """What the study has paid out (rewards and bonuses sent, with the platform's fees), what is
    committed (open places not yet paid), and the payments pending or failed."""
    sent = Payment.objects.filter(study=study, status=Payment.Status.SENT)
    by_kind = {
        row["kind"]: row
        for row in sent.values("kind").annotate(amount=Sum("amount"), fee=Sum("fee"), n=Count("id"))
    }
    zero = Decimal("0.00")
    rewards = by_kind.get(Payment.Kind.REWARD, {}).get("amount") or zero
    bonuses = by_kind.get(Payment.Kind.BONUS, {}).get("amount") or zero
    fees = sum((row["fee"] or zero for row in by_kind.values()), zero)
    publications = Publication.objects.filter(study=study).exclude(status=Publication.Status.FAILED)
    places = sum(p.places for p in publications)
    approved = PlatformSubmission.objects.filter(study=study, decision="approve", decision_sent=True).count()
    open_places = sum(
        p.places for p in publications.filter(status__in=[Publication.Status.OPEN, Publication.Status.PAUSED])
    )
    currencies = sorted({p.currency for p in publications} | set(sent.values_list("currency", flat=True)))
    return {
        "currency": currencies[0] if len(currencies) == 1 else ",".join(currencies),
        "rewards": str(rewards),
        "bonuses": str(bonuses),
        "fees": str(fees),
        "total": str(rewards + bonuses + fees),
        "rewards_paid": by_kind.get(Payment.Kind.REWARD, {}).get("n", 0),
        "bonuses_paid": by_kind.get(Payment.Kind.BONUS, {}).get("n", 0),
        "places": places,
        "open_places": open_places,
        "approved": approved,
        "pending_payments": Payment.objects.filter(study=study, status=Payment.Status.PENDING).count(),
        "failed_payments": Payment.objects.filter(study=study, status=Payment.Status.FAILED).count(),
    }
