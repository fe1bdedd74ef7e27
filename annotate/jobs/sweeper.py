"""The sweep that keeps jobs from being lost: a running job whose heartbeat stopped is marked lost and
queued again, and a queued job that never reached the broker (or that the broker may have lost) is
sent again.

Where it runs: on the beat schedule every ``HATLAB_JOB_SWEEP_S`` seconds (the ``sweep-jobs`` entry),
and in the web process on the requests that touch jobs (starting one, the job and model-run pages and
their progress polls), at most once per ``HATLAB_JOB_SWEEP_S`` per process. Beat needs the broker to
send its sweep; the web process does not, so a job started while the broker was down is sent by the
first request after it is back, and by beat's next sweep otherwise. Two sweeps at once skip each
other's rows (``SKIP LOCKED``); a job sent twice still runs once (:func:`annotate.jobs.base.claim`).
In-process (eager) Celery, the demo's, has nothing to sweep.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotate.jobs.base import job
from annotate.jobs.dispatch import QUEUE_DOWN_NOTE, event, held_note, hold, owner_is_full, send
from annotate.models import Job

log = logging.getLogger(__name__)


@dataclass
class Sweep:
    """What one sweep did: jobs found lost (re-queued), jobs sent, jobs the broker did not take."""

    lost: list[int] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    unsent: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"lost": self.lost, "sent": self.sent, "unsent": self.unsent}


def lost_message(job_row: Job) -> str:
    beat = job_row.heartbeat.astimezone(timezone.get_current_timezone()).strftime("%H:%M:%S %Z")
    return f"worker {job_row.worker or 'unknown'} lost at {beat}, re-queued"


def requeue_lost(now: datetime) -> list[int]:
    """Mark every running job whose heartbeat is older than ``HATLAB_JOB_LOST_AFTER_S`` lost: back to
    queued, unsent, with what happened in its message and events. Returns their ids."""
    cutoff = now - timedelta(seconds=settings.HATLAB_JOB_LOST_AFTER_S)
    ids = []
    with transaction.atomic():
        rows = (
            Job.objects.select_for_update(skip_locked=True)
            .filter(status=Job.Status.RUNNING, heartbeat__lt=cutoff)
            .exclude(task="")
        )
        for row in rows:
            note = lost_message(row)
            log.warning("job %s: %s", row.pk, note)
            row.status, row.message, row.sent, row.heartbeat = Job.Status.QUEUED, note, None, None
            row.events = event(row, note, now)
            row.save(update_fields=["status", "message", "sent", "heartbeat", "events", "updated"])
            ids.append(row.pk)
    return ids


def resend_due(now: datetime, first: Sequence[int] = ()) -> tuple[list[int], list[int]]:
    """Send the jobs in ``first``, those whose send failed, every queued job not sent
    ``HATLAB_JOB_SEND_GRACE_S`` after it was dispatched, and every one sent more than
    ``HATLAB_JOB_RESEND_S`` ago and still queued, oldest first. A job whose owner has no room is held and
    skipped (the next sweep tries it again). Stops at the first one the broker does not take: it is
    down, the rest waits for the next sweep. Returns (sent, not sent)."""
    due = (
        Job.objects.filter(status=Job.Status.QUEUED)
        .exclude(task="")
        .filter(
            Q(pk__in=list(first))
            | Q(sent__isnull=True, message__in=[QUEUE_DOWN_NOTE, held_note()])
            | Q(sent__isnull=True, updated__lt=now - timedelta(seconds=settings.HATLAB_JOB_SEND_GRACE_S))
            | Q(sent__lt=now - timedelta(seconds=settings.HATLAB_JOB_RESEND_S))
        )
        .order_by("created")
    )
    sent: list[int] = []
    with transaction.atomic():
        ids = list(due.select_for_update(skip_locked=True).values_list("pk", flat=True))
        for position, job_id in enumerate(ids):
            row = Job.objects.filter(pk=job_id).first()
            if row is not None and owner_is_full(row):
                hold(row)
                continue
            if not send(job_id):
                return sent, ids[position:]
            sent.append(job_id)
    return sent, []


def sweep(now: datetime | None = None) -> Sweep:
    """Re-queue lost jobs, then send whatever is due."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return Sweep()
    now = now or timezone.now()
    done = Sweep(lost=requeue_lost(now))
    done.sent, done.unsent = resend_due(now, done.lost)
    return done


_last_sweep = [-float("inf")]


def sweep_soon() -> Sweep | None:
    """:func:`sweep`, unless this process swept less than ``HATLAB_JOB_SWEEP_S`` seconds ago (then
    None). For the web requests that touch jobs; the throttle is per process and only spares work."""
    now = time.monotonic()
    if now - _last_sweep[0] < settings.HATLAB_JOB_SWEEP_S:
        return None
    _last_sweep[0] = now
    return sweep()


@job(
    "annotate.jobs.sweep",
    retried=False,
    every_s=settings.HATLAB_JOB_SWEEP_S,
    beat_name="sweep-jobs",
    ignore_result=True,
)
def sweep_jobs() -> dict:
    """Re-queue jobs whose worker was lost and send jobs that did not reach the broker."""
    return sweep().as_dict()
