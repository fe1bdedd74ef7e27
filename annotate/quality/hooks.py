"""What the submission path calls after storing an answer, and reconciliation after verifying or setting
answers aside (database only: no broker, no platform)."""

from __future__ import annotations

from collections.abc import Iterable

from annotate.models import Response, Study
from annotate.quality.exclusion import QualitySummary, apply_local
from annotate.quality.grading import refresh_trust


def on_response_stored(response: Response) -> QualitySummary:
    """Keep the worker's trust current after a graded gold answer (a provisional one changes nothing
    until it is verified), and block them here at once when it falls under the threshold and the
    study blocks; platform mirroring is left to the quality job."""
    if response.gold_passed is None:
        return QualitySummary()
    return apply_local(response.study, refresh_trust(response.study, [response.worker_id]))


def on_verification_changed(study: Study, worker_ids: Iterable[int]) -> QualitySummary:
    """Recompute the trust of workers whose answers were just verified or set aside (only verified
    answers count towards trust), blocking or unblocking them here as the study's policy says."""
    return apply_local(study, refresh_trust(study, worker_ids))
