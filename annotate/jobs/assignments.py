"""Releasing abandoned assignments on a schedule (requests release their own study's as they come)."""

from __future__ import annotations

from celery import current_app, shared_task

from annotate.assignment import release_expired

RELEASE_EVERY_S = 60.0


@shared_task(name="annotate.release_expired_assignments", ignore_result=True)
def release_expired_assignments() -> int:
    """Release every assignment past its time limit; idempotent. Returns how many were released."""
    return release_expired()


current_app.conf.beat_schedule = {
    **(current_app.conf.beat_schedule or {}),
    "release-expired-assignments": {
        "task": "annotate.release_expired_assignments",
        "schedule": RELEASE_EVERY_S,
    },
}
