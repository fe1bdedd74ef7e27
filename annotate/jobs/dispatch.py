"""Sending a job row to the broker, so that a broker outage delays a job and never drops it.

The ``Job`` row is the outbox (the transactional-outbox pattern, Richardson, *Microservices Patterns*,
2018, ch. 3): :func:`dispatch` writes the Celery task and queue on the row in the caller's transaction
and sends it once that transaction commits; :func:`send` records when the broker took it (``sent``),
or, when the broker cannot be reached, leaves ``sent`` empty with :data:`QUEUE_DOWN_NOTE` as the
job's message. Whatever was not sent is sent again by :mod:`annotate.jobs.sweeper`.

One researcher's jobs cannot hold the shared queues for everyone: at most ``HATLAB_JOBS_PER_OWNER`` jobs
of one owner are in the broker or running at a time (per-owner concurrency). A job past that is held on
its row, unsent, with :data:`OWNER_WAIT_NOTE` as its message, and the sweep sends it (oldest first) once
one of the owner's jobs has finished; another researcher's job is sent at once, so it waits behind at
most ``HATLAB_JOBS_PER_OWNER`` jobs of each other researcher, never behind all of them.

A job may therefore reach a worker twice (a resend, and the broker's own redelivery after a worker
died): every message of a job carries the task id ``hatlab-job-<pk>``, and the worker's claim of the
row (:func:`annotate.jobs.base.run_job`) runs it once.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from annotate.jobs import in_process
from annotate.models import Job

log = logging.getLogger(__name__)

QUEUE_DOWN_NOTE = "the job queue is unreachable; the job will start when it is back"
# What sending to an unreachable broker raises (kombu wraps most of them in its OperationalError).
BROKER_ERRORS: tuple[type[Exception], ...] = (
    BrokerOperationalError,
    RedisConnectionError,
    RedisTimeoutError,
    OSError,
)
EVENTS_KEPT = 20
OWNER_WAIT_NOTE = "waiting for the owner's earlier jobs: at most {limit} run at a time per researcher"


def task_id(job_id: int) -> str:
    """The Celery task id of every message of job ``job_id``."""
    return f"hatlab-job-{job_id}"


def event(job: Job, text: str, at: datetime | None = None) -> list[dict]:
    """``job.events`` with ``text`` added (the last :data:`EVENTS_KEPT` are kept)."""
    at = at or timezone.now()
    return [*job.events, {"at": at.isoformat(timespec="seconds"), "event": text}][-EVENTS_KEPT:]


def dispatch(job: Job, task, queue: str) -> None:
    """Make ``job`` (queued) run ``task`` on ``queue``: recorded on its row now, sent after the current
    transaction commits (at once in autocommit). A failed send leaves it to the sweeper."""
    job.task, job.queue, job.sent = task.name, queue, None
    Job.objects.filter(pk=job.pk).update(task=task.name, queue=queue, sent=None, updated=timezone.now())
    transaction.on_commit(lambda: send(job.pk), robust=True)


def owner_is_full(job: Job) -> bool:
    """Whether ``job``'s owner already has ``HATLAB_JOBS_PER_OWNER`` other jobs in the broker or running
    (jobs of no owner, and in-process jobs, are never held)."""
    if job.created_by_id is None or current_app.conf.task_always_eager:
        return False
    in_flight = (
        Job.objects.filter(created_by_id=job.created_by_id)
        .exclude(pk=job.pk)
        .filter(Q(status=Job.Status.RUNNING) | Q(status=Job.Status.QUEUED, sent__isnull=False))
    )
    limit = settings.HATLAB_JOBS_PER_OWNER
    return in_flight[:limit].count() >= limit


def hold(job: Job) -> None:
    """Keep ``job`` unsent until its owner has room (the sweep sends it then)."""
    Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED).update(message=held_note(), sent=None)


def send(job_id: int) -> bool:
    """Hand the queued job ``job_id`` to the broker; returns whether it was sent. A job whose owner has
    no room is held (:func:`owner_is_full`). Sending is not retried here (no request waits on a broker
    that is down): the row keeps the job."""
    job = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).exclude(task="").first()
    if job is None:
        return False
    if owner_is_full(job):
        hold(job)
        return False
    task = current_app.tasks[job.task]
    try:
        if current_app.conf.task_always_eager and settings.HATLAB_JOBS_IN_THREAD:
            in_process.submit(task.name, job.pk, task_id(job.pk))
        elif current_app.conf.task_always_eager:
            task.apply_async(args=[job.pk], queue=job.queue or None, task_id=task_id(job.pk))
        else:
            with current_app.connection_for_write() as conn:
                # one quick retry, not kombu's default of retrying for seconds: a request waits on this
                conn.ensure_connection(max_retries=1, interval_start=0.2, interval_step=0.2)
                task.apply_async(
                    args=[job.pk],
                    queue=job.queue or None,
                    task_id=task_id(job.pk),
                    connection=conn,
                    retry=False,
                )
    except BROKER_ERRORS as exc:
        log.warning("job %s could not be sent (%s); it stays queued", job.pk, exc)
        Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED).update(message=QUEUE_DOWN_NOTE, sent=None)
        return False
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(sent=now)
    Job.objects.filter(
        pk=job.pk, status=Job.Status.QUEUED, message__in=[QUEUE_DOWN_NOTE, held_note()]
    ).update(message="")
    return True


def held_note() -> str:
    return OWNER_WAIT_NOTE.format(limit=settings.HATLAB_JOBS_PER_OWNER)


def unsent(job: Job) -> bool:
    """Whether a queued job is waiting to be handed to the broker: its send failed, or it was dispatched
    more than ``HATLAB_JOB_SEND_GRACE_S`` ago and is still not sent (a job dispatched just now is about
    to be sent when its transaction commits)."""
    if job.status != Job.Status.QUEUED or not job.task or job.sent is not None:
        return False
    grace = timedelta(seconds=settings.HATLAB_JOB_SEND_GRACE_S)
    return job.message == QUEUE_DOWN_NOTE or job.updated < timezone.now() - grace
