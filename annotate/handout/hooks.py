"""What the submission path calls after storing an answer, and reconciliation after verifying or setting
answers aside (database only: no broker, no platform)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction

from annotate.handout.submission import Submitted
from annotate.models import Response, Study
from annotate.quality.exclusion import QualitySummary, apply_local
from annotate.quality.grading import refresh_trust
from annotate.quality.redundancy import refresh_for_workers

logger = logging.getLogger(__name__)


def on_response_stored(response: Response) -> QualitySummary:
    """Keep the worker's trust current after a graded gold answer (a provisional one changes nothing
    until it is verified), and block them here at once when it falls under the threshold and the
    study blocks; platform mirroring is left to the quality job."""
    if response.gold_passed is None or response.verification != Response.Verification.VERIFIED:
        return QualitySummary()
    return refresh_worker(response.study, response.worker_id)


def on_submitted(result: Submitted) -> QualitySummary:
    """:func:`on_response_stored` for the annotator's submission, from what
    :func:`~annotate.handout.submission.submit` returned: nothing to do (no query) unless the answer moves trust
    (:attr:`~annotate.handout.submission.Submitted.moves_trust`). Called once the answer is committed; a failure
    here is logged and reported in ``errors``, and leaves the answer stored: the quality job recomputes
    trust later."""
    if not result.moves_trust:
        return QualitySummary()
    assert result.study is not None and result.worker_id is not None  # a stored answer has both
    try:
        return refresh_worker(result.study, result.worker_id)
    except Exception as exc:  # whatever went wrong, the stored answer stands
        logger.exception(
            "refreshing the trust of worker %s in study %s after response %s failed",
            result.worker_id,
            result.study.pk,
            result.response_id,
        )
        return QualitySummary(errors=[f"trust refresh failed: {exc}"])


def refresh_worker(study: Study, worker_id: int) -> QualitySummary:
    """Recompute one worker's trust and block or unblock them here, in one transaction: a trust change
    is never stored without its block (the quality job acts on changes only, so it would not block later)."""
    with transaction.atomic():
        summary = apply_local(study, refresh_trust(study, [worker_id]))
        refresh_for_workers(study, [worker_id])  # their answers' weight moved: items may stop or reopen
        return summary


def on_verification_changed(study: Study, worker_ids: Iterable[int]) -> QualitySummary:
    """Recompute the trust of workers whose answers were just verified or set aside (only verified
    answers count towards trust), blocking or unblocking them here as the study's policy says."""
    worker_ids = list(worker_ids)
    summary = apply_local(study, refresh_trust(study, worker_ids))
    refresh_for_workers(study, worker_ids)  # an adaptive study's items decide again on what counts now
    return summary
