"""What every Celery job of the app shares: its options, the database errors worth a retry, the
registry of jobs, and the bookkeeping on a job's ``Job`` row.

A job acknowledges late and is rejected back to the queue when its worker dies, so a restarted worker
picks it up; it must therefore be idempotent. Transient database errors are retried with exponential
backoff and jitter; any other error marks the job failed with its message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import current_app, shared_task
from django.db import InterfaceError, OperationalError
from django.utils import timezone

from annotate.machine.runs import set_torch_threads
from annotate.models import Job
from explain_engine.api import DuplicateName, Registry

log = logging.getLogger(__name__)

# Errors that a later attempt can get past: a dropped or restarting database connection.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
RETRIED = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 5,
}

JOBS: Registry = Registry("job")


def job(
    name: str, *, retried: bool = True, every_s: float | None = None, beat_name: str = "", **options: Any
) -> Callable:
    """Declare a Celery task named ``name`` and register it in :data:`JOBS`.

    ``retried`` jobs take :data:`RETRIED` (they are bound: the task receives ``self`` first);
    ``every_s`` also runs the job on the beat schedule at that period, under ``beat_name``.
    ``options`` go to Celery as they are.
    """
    if (every_s is None) != (not beat_name):
        raise ValueError("a scheduled job needs both every_s and beat_name")

    def declare(func: Callable) -> Any:
        if name in JOBS:  # before Celery sees it: a second task under a name would replace the first
            raise DuplicateName(f"{JOBS.noun} {name!r} is already registered")
        task = shared_task(name=name, **{**(RETRIED if retried else {}), **options})(func)
        JOBS.add(name, task, retried=retried, every_s=every_s)
        if every_s is not None:
            current_app.conf.beat_schedule = {
                **(current_app.conf.beat_schedule or {}),
                beat_name: {"task": name, "schedule": every_s},
            }
        return task

    return declare


def set_job(job_id: int, **fields: Any) -> None:
    Job.objects.filter(pk=job_id).update(updated=timezone.now(), **fields)


def run_job(job_id: int, work: Callable[[Job], dict]) -> dict:
    """Run ``work(job)`` for the job row ``job_id`` with the bookkeeping every job shares: a missing row
    is logged, a finished job is a no-op (it returns its result), the row says running / done / failed,
    and a transient error puts it back to queued and is raised for Celery to retry."""
    job_row = Job.objects.filter(pk=job_id).first()
    if job_row is None:
        log.warning("job %s no longer exists", job_id)
        return {"missing_job": job_id}
    if job_row.status == Job.Status.DONE:
        return job_row.result
    set_torch_threads()
    set_job(job_row.pk, status=Job.Status.RUNNING, message="running")
    try:
        result = work(job_row)
    except TRANSIENT_ERRORS as exc:
        log.warning("job %s hit a transient database error, retrying: %s", job_row.pk, exc)
        try:
            set_job(job_row.pk, status=Job.Status.QUEUED, message=f"retrying after: {exc}"[:2000])
        except TRANSIENT_ERRORS:
            log.warning("could not record the retry of job %s", job_row.pk)
        raise
    except Exception as exc:
        log.exception("job %s failed", job_row.pk)
        set_job(job_row.pk, status=Job.Status.FAILED, message=f"{type(exc).__name__}: {exc}"[:2000])
        return {"error": f"{type(exc).__name__}: {exc}"}
    set_job(job_row.pk, status=Job.Status.DONE, progress=1.0, result=result, message="done")
    return result
