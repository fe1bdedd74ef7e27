"""What the submission path calls after storing an answer (database only: no broker, no platform)."""

from __future__ import annotations

from annotate.models import Response
from annotate.quality.exclusion import QualitySummary, apply_local
from annotate.quality.grading import refresh_trust


def on_response_stored(response: Response) -> QualitySummary:
    """Keep the worker's trust current after a graded gold answer, and block them here at once when it
    falls under the threshold and the study blocks; platform mirroring is left to the quality job."""
    if response.gold_passed is None:
        return QualitySummary()
    return apply_local(response.study, refresh_trust(response.study, [response.worker_id]))
