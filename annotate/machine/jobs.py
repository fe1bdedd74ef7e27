"""Celery jobs of the machine side: train a model run, explain it over its dataset.

Each job is a ``Job`` row with an idempotency key (``train:<run>``, ``explain:<run>:<digest of the
request>``); the task receives the row's id. Running one again stores the same rows (upserts on
unique constraints) and a finished job is a no-op; retries and failures: :mod:`annotate.jobs.base`.
The row is sent to the broker after it commits (:mod:`annotate.jobs.dispatch`); asking again for a
queued job that never reached the broker sends it again.

Jobs go to the ``gpu`` queue when the request asks for it or ``HATLAB_GPU_QUEUE`` is on, else to
``cpu``. Workers use ``settings.HATLAB_TORCH_THREADS`` torch threads (1 by default).
"""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.utils import timezone

from annotate.jobs.base import fenced, job, run_job
from annotate.jobs.dispatch import dispatch, unsent
from annotate.machine.explaining import params_digest, run_explanations
from annotate.machine.progress import RowProgress
from annotate.machine.runs import queue_for
from annotate.machine.training import run_training
from annotate.models import Job, ModelRun

TRAIN_KIND = "train_model"
EXPLAIN_KIND = "explain_model"


def training_key(model_run: ModelRun) -> str:
    return f"train:{model_run.pk}"


def explanation_key(model_run: ModelRun, params: dict) -> str:
    return f"explain:{model_run.pk}:{params_digest(params)}"


def _enqueue(task, job: Job, gpu: bool | None) -> None:
    dispatch(job, task, queue_for(gpu))


def _claim(key: str, kind: str, params: dict, user) -> tuple[Job, bool]:
    """The job row for ``key``, and whether it must be (re)sent: new, failed before, or queued but
    never handed to the broker."""
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
        return job, unsent(job) or (job.status == Job.Status.QUEUED and not job.task)


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


@job("annotate.machine.train_model")
def train_model(self, job_id: int) -> dict:
    """Train the job's model run and store its predictions with machine attention maps."""

    return run_job(job_id, training_work)


def training_work(job: Job) -> dict:
    """The training job's work for the claimed row ``job``: its attempt names the artifact's folder and
    fences the run's final writes (:func:`annotate.jobs.base.fenced`)."""
    run_id = job.params["model_run"]
    run = run_training(
        run_id,
        progress=RowProgress(model_run_id=run_id, job_id=job.pk, attempt=job.attempts),
        attempt=job.attempts,
        fence=partial(fenced, job.pk, job.attempts),
    )
    return {
        "model_run": run.pk,
        "artifact": run.artifact,
        "predictions": run.predictions.count(),
        "test": run.metrics.get("test"),
    }


@job("annotate.machine.explain_model")
def explain_model(self, job_id: int) -> dict:
    """Compute the job's explanation methods over its documents and store ``Explanation`` rows."""

    def work(job: Job) -> dict:
        return run_explanations(
            job.params["model_run"],
            job.params["request"],
            progress=RowProgress(job_id=job.pk, attempt=job.attempts),
            fence=partial(fenced, job.pk, job.attempts),
        )

    return run_job(job_id, work)
