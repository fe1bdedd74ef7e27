"""What every Celery job of the app shares: its options, the database errors worth a retry, the
registry of jobs, and the bookkeeping on a job's ``Job`` row.

A job acknowledges late and is rejected back to the queue when its worker dies, so a restarted worker
picks it up; it must therefore be idempotent. Transient database errors are retried with exponential
backoff and jitter; any other error marks the job failed with its message.

A worker first claims the job's row (one row lock): a finished job is not run again, and a job that
another worker is running (its heartbeat is fresh) is not run twice, so a message sent twice runs once.
While it runs, a :class:`~annotate.jobs.heartbeat.Heartbeat` thread stamps the row every
``HATLAB_JOB_HEARTBEAT_S`` seconds; :mod:`annotate.jobs.sweeper` re-queues a job whose stamps stop.

A worker that only stalled (frozen, swapped out, cut off from the database) resumes after its job was
re-queued and claimed again: its final writes are *fenced* (Kleppmann, *Designing Data-Intensive
Applications*, 2017, ch. 8, "Fencing tokens"). Each claim increments ``Job.attempts``, which is the run's
token; :func:`fenced` opens the transaction of a final write only while the row is still running under
that token, else raises :class:`Superseded`, and the superseded run writes nothing.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from celery import current_app, current_task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from annotate.jobs.dispatch import event
from annotate.jobs.heartbeat import Heartbeat
from annotate.models import Job
from explain_engine.api import DuplicateName, Registry


def set_torch_threads() -> int:
    """``torch.set_num_threads(settings.HATLAB_TORCH_THREADS)`` (1 unless configured); returns it."""
    import torch  # here, not at the top: the web process imports this module and never needs torch

    threads = max(1, int(getattr(settings, "HATLAB_TORCH_THREADS", 1) or 1))
    torch.set_num_threads(threads)
    return threads


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


class Superseded(Exception):
    """This run of a job lost its row to a later attempt (it was re-queued and claimed again)."""


@contextmanager
def fenced(job_id: int, attempt: int) -> Iterator[Job]:
    """A transaction holding job ``job_id``'s row locked, entered only while the row is still running
    under ``attempt`` (its ``attempts`` when this run claimed it); else :class:`Superseded` is raised and
    nothing is written. A run's final writes go inside it."""
    with transaction.atomic():
        row = Job.objects.select_for_update().filter(pk=job_id).first()
        if row is None or row.attempts != attempt or row.status != Job.Status.RUNNING:
            now = "gone" if row is None else f"{row.status}, attempt {row.attempts}"
            raise Superseded(f"job {job_id}: attempt {attempt} was superseded (now {now})")
        yield row


def set_job(job_id: int, **fields: Any) -> None:
    Job.objects.filter(pk=job_id).update(updated=timezone.now(), **fields)


def worker_name() -> str:
    """The Celery worker running the current task (``name@host``), else this host and process."""
    request = getattr(current_task, "request", None)
    return getattr(request, "hostname", None) or f"{socket.gethostname()}:{os.getpid()}"


def _eager() -> bool:
    request = getattr(current_task, "request", None)
    return request is None or bool(getattr(request, "is_eager", True))


def claim(job_id: int) -> tuple[Job | None, dict | None]:
    """Take job ``job_id`` for this worker: ``(job, None)`` to run it, or ``(None, answer)`` when it
    is missing, finished (its result) or running elsewhere with a fresh heartbeat."""
    now = timezone.now()
    fresh = now - timedelta(seconds=settings.HATLAB_JOB_LOST_AFTER_S)
    with transaction.atomic():
        job_row = Job.objects.select_for_update().filter(pk=job_id).first()
        if job_row is None:
            log.warning("job %s no longer exists", job_id)
            return None, {"missing_job": job_id}
        if job_row.status == Job.Status.DONE:
            return None, job_row.result
        if job_row.status == Job.Status.RUNNING and job_row.heartbeat and job_row.heartbeat >= fresh:
            log.info("job %s is running on %s; this copy is dropped", job_id, job_row.worker)
            return None, {"running_elsewhere": job_id, "worker": job_row.worker}
        worker = worker_name()
        job_row.status, job_row.message, job_row.heartbeat = Job.Status.RUNNING, "running", now
        job_row.worker, job_row.attempts = worker, job_row.attempts + 1
        job_row.events = event(job_row, f"started by {worker}", now)
        job_row.save(
            update_fields=["status", "message", "heartbeat", "worker", "attempts", "events", "updated"]
        )
    return job_row, None


def run_job(job_id: int, work: Callable[[Job], dict]) -> dict:
    """Run ``work(job)`` for the job row ``job_id`` with the bookkeeping every job shares: the row is
    claimed first (a missing row is logged, a finished job returns its result, one running elsewhere
    is left to that worker), a heartbeat is kept while it runs (not for an eager, in-process run), the
    row says running / done / failed, and a transient error puts it back to queued and is raised for
    Celery to retry. The row is marked done only while this run still owns it (:func:`fenced`); a run
    superseded by a later attempt drops its result."""
    job_row, answer = claim(job_id)
    if job_row is None:
        assert answer is not None
        return answer
    set_torch_threads()
    beat = Heartbeat(
        job_row.pk,
        job_row.worker,
        settings.HATLAB_JOB_HEARTBEAT_S,
        enabled=not _eager(),
        attempt=job_row.attempts,
    )
    try:
        with beat:
            result = work(job_row)
        with fenced(job_row.pk, job_row.attempts):
            set_job(
                job_row.pk,
                status=Job.Status.DONE,
                heartbeat=None,
                progress=1.0,
                result=result,
                message="done",
            )
    except Superseded as exc:
        log.warning("%s; its result is dropped", exc)
        return {"superseded": job_row.pk, "attempt": job_row.attempts}
    except TRANSIENT_ERRORS as exc:
        log.warning("job %s hit a transient database error, retrying: %s", job_row.pk, exc)
        try:
            Job.objects.filter(pk=job_row.pk, attempts=job_row.attempts).update(
                updated=timezone.now(),
                status=Job.Status.QUEUED,
                heartbeat=None,
                message=f"retrying after: {exc}"[:2000],
            )
        except TRANSIENT_ERRORS:
            log.warning("could not record the retry of job %s", job_row.pk)
        raise
    except Exception as exc:
        log.exception("job %s failed", job_row.pk)
        Job.objects.filter(pk=job_row.pk, attempts=job_row.attempts).update(
            updated=timezone.now(),
            status=Job.Status.FAILED,
            heartbeat=None,
            message=f"{type(exc).__name__}: {exc}"[:2000],
        )
        return {"error": f"{type(exc).__name__}: {exc}"}
    return result
