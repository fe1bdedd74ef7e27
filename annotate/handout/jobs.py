"""Releasing abandoned assignments on a schedule (requests release their own study's as they come)."""

from __future__ import annotations

from annotate.handout.assignment import release_expired
from annotate.jobs.base import job

RELEASE_EVERY_S = 60.0


@job(
    "annotate.release_expired_assignments",
    retried=False,
    every_s=RELEASE_EVERY_S,
    beat_name="release-expired-assignments",
    ignore_result=True,
)
def release_expired_assignments() -> int:
    """Release every assignment past its time limit; idempotent. Returns how many were released."""
    return release_expired()
