"""Celery jobs of the machine side: train a model run (issue 3), explain it over its dataset (issue 4).

Each job is a ``Job`` row with an idempotency key (``train:<run>``, ``explain:<run>:<digest of the
request>``); the task receives the row's id. Tasks acknowledge late and are rejected back to the
queue when their worker dies, so a restarted worker picks them up; running one again stores the
same rows (upserts on unique constraints) and a finished job is a no-op. Database hiccups are
retried with exponential backoff; any other error marks the job failed with its message.

Jobs go to the ``gpu`` queue when the request asks for it or ``HATLAB_GPU_QUEUE`` is on, else to
``cpu``. Workers use ``settings.HATLAB_TORCH_THREADS`` torch threads (1 by default).
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from annotate.machine.explaining import params_digest, run_explanations
from annotate.machine.progress import RowProgress
from annotate.machine.runs import queue_for, set_torch_threads
from annotate.machine.training import run_training
from annotate.models import Job, ModelRun

log = logging.getLogger(__name__)

TRAIN_KIND = "train_model"
EXPLAIN_KIND = "explain_model"
TRANSIENT_ERRORS = (OperationalError, InterfaceError)
_TASK_OPTIONS = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": TRANSIENT_ERRORS,
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 5,
}


def training_key(model_run: ModelRun) -> str:
    return f"train:{model_run.pk}"


def explanation_key(model_run: ModelRun, params: dict) -> str:
    return f"explain:{model_run.pk}:{params_digest(params)}"


def _enqueue(task, job: Job, gpu: bool | None) -> None:
    queue = queue_for(gpu)
    transaction.on_commit(lambda: task.apply_async(args=[job.pk], queue=queue))


def _claim(key: str, kind: str, params: dict, user) -> tuple[Job, bool]:
    """The job row for ``key``, and whether it must be (re)queued: new, or failed before."""
    with transaction.atomic():
        job, created = Job.objects.select_for_update().get_or_create(
            key=key, defaults={"kind": kind, "params": params, "created_by": user}
        )
        if created:
            return job, True
        if job.status == Job.Status.FAILED:
            job.status, job.progress, job.message, job.params = Job.Status.QUEUED, 0.0, "", params
            job.save(update_fields=["status", "progress", "message", "params", "updated"])
            return job, True
        return job, False


def enqueue_training(model_run: ModelRun, user=None, gpu: bool | None = None) -> Job:
    """Queue the training job of ``model_run`` (after the current transaction commits).

    A run already trained, or whose job is queued or running, is not queued again; a failed one is.
    """
    job, needed = _claim(
        training_key(model_run), TRAIN_KIND, {"model_run": model_run.pk, "gpu": bool(gpu)}, user
    )
    if model_run.status == ModelRun.Status.DONE:
        if job.status != Job.Status.DONE:
            Job.objects.filter(pk=job.pk).update(
                status=Job.Status.DONE,
                progress=1.0,
                result={"model_run": model_run.pk},
                updated=timezone.now(),
            )
            job.refresh_from_db()
        return job
    if needed:
        if model_run.status == ModelRun.Status.FAILED:
            ModelRun.objects.filter(pk=model_run.pk).update(
                status=ModelRun.Status.QUEUED, progress=0.0, message=""
            )
        _enqueue(train_model, job, gpu)
    return job


def enqueue_explanations(model_run: ModelRun, params: dict, user=None, gpu: bool | None = None) -> Job:
    """Queue an explanation job for ``model_run`` with cleaned ``params``
    (:func:`annotate.machine.explaining.clean_explanation_params`). The same request twice is one job."""
    job, needed = _claim(
        explanation_key(model_run, params),
        EXPLAIN_KIND,
        {"model_run": model_run.pk, "gpu": bool(gpu), "request": params},
        user,
    )
    if needed:
        _enqueue(explain_model, job, gpu)
    return job


def _set_job(job_id: int, **fields) -> None:
    Job.objects.filter(pk=job_id).update(updated=timezone.now(), **fields)


def _run_job(job_id: int, work) -> dict:
    """Run ``work(job)`` for the job row ``job_id`` with the bookkeeping every job shares."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        log.warning("job %s no longer exists", job_id)
        return {"missing_job": job_id}
    if job.status == Job.Status.DONE:
        return job.result
    set_torch_threads()
    _set_job(job.pk, status=Job.Status.RUNNING, message="running")
    try:
        result = work(job)
    except TRANSIENT_ERRORS as exc:
        log.warning("job %s hit a transient database error, retrying: %s", job.pk, exc)
        try:
            _set_job(job.pk, status=Job.Status.QUEUED, message=f"retrying after: {exc}"[:2000])
        except TRANSIENT_ERRORS:
            log.warning("could not record the retry of job %s", job.pk)
        raise
    except Exception as exc:
        log.exception("job %s failed", job.pk)
        _set_job(job.pk, status=Job.Status.FAILED, message=f"{type(exc).__name__}: {exc}"[:2000])
        return {"error": f"{type(exc).__name__}: {exc}"}
    _set_job(job.pk, status=Job.Status.DONE, progress=1.0, result=result, message="done")
    return result


@shared_task(name="annotate.machine.train_model", **_TASK_OPTIONS)
def train_model(self, job_id: int) -> dict:
    """Train the job's model run and store its predictions with machine attention maps."""

    def work(job: Job) -> dict:
        run_id = job.params["model_run"]
        run = run_training(run_id, progress=RowProgress(model_run_id=run_id, job_id=job.pk))
        return {
            "model_run": run.pk,
            "artifact": run.artifact,
            "predictions": run.predictions.count(),
            "test": run.metrics.get("test"),
        }

    return _run_job(job_id, work)


@shared_task(name="annotate.machine.explain_model", **_TASK_OPTIONS)
def explain_model(self, job_id: int) -> dict:
    """Compute the job's explanation methods over its documents and store ``Explanation`` rows."""

    def work(job: Job) -> dict:
        return run_explanations(
            job.params["model_run"], job.params["request"], progress=RowProgress(job_id=job.pk)
        )

    return _run_job(job_id, work)
