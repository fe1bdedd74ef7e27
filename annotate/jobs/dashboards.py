"""The Celery job that recomputes a dashboard of a large study, with progress.

One ``Job`` row per dashboard, parameters and data fingerprint (key
``dashboard:<study>:<name>:<params digest>:<fingerprint>``), so asking again while it runs finds the
same job, and new data makes a new one. The task acknowledges late and is re-delivered when its worker
dies; running it twice stores the same cache row. Database hiccups are retried with backoff; any other
error marks the job failed with its message (the next request for the dashboard queues it again).
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from annotate.dashboards.cache import compute_and_store, digest
from annotate.machine.progress import RowProgress
from annotate.machine.runs import set_torch_threads
from annotate.models import Job, Study

log = logging.getLogger(__name__)

DASHBOARD_KIND = "dashboard"
QUEUE = "cpu"
TRANSIENT_ERRORS = (OperationalError, InterfaceError)


def dashboard_key(study: Study, name: str, params: dict, fingerprint: str) -> str:
    return f"dashboard:{study.pk}:{name}:{digest(params)[:24]}:{fingerprint[:24]}"


def enqueue_dashboard(
    study: Study, name: str, params: dict, fingerprint: str, user=None, rerun: bool = False
) -> Job:
    """The job computing dashboard ``name`` of ``study`` from the data of ``fingerprint``; queued (after
    the current transaction commits) when new or failed before (or done, with ``rerun``: its cached
    result is gone), else returned as it is."""
    key = dashboard_key(study, name, params, fingerprint)
    owner = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        job, created = Job.objects.select_for_update().get_or_create(
            key=key,
            defaults={
                "kind": DASHBOARD_KIND,
                "params": {"study": study.pk, "name": name, "params": params, "fingerprint": fingerprint},
                "created_by": owner,
            },
        )
        queue = created
        if job.status == Job.Status.FAILED or (rerun and job.status == Job.Status.DONE):
            job.status, job.progress, job.message = Job.Status.QUEUED, 0.0, ""
            job.save(update_fields=["status", "progress", "message", "updated"])
            queue = True
    if queue:
        transaction.on_commit(lambda: compute_dashboard.apply_async(args=[job.pk], queue=QUEUE))
    return job


def _set_job(job_id: int, **fields) -> None:
    Job.objects.filter(pk=job_id).update(updated=timezone.now(), **fields)


@shared_task(
    name="annotate.dashboards.compute_dashboard",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=5,
)
def compute_dashboard(self, job_id: int) -> dict:
    """Compute the job's dashboard, report progress on the job row, and cache the result."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        log.warning("dashboard job %s no longer exists", job_id)
        return {"missing_job": job_id}
    if job.status == Job.Status.DONE:
        return job.result
    study = Study.objects.filter(pk=job.params["study"]).first()
    if study is None:
        _set_job(job.pk, status=Job.Status.FAILED, message="the study no longer exists")
        return {"error": "the study no longer exists"}
    set_torch_threads()
    _set_job(job.pk, status=Job.Status.RUNNING, message="running")
    try:
        result = compute_and_store(
            study, job.params["name"], job.params["params"], RowProgress(job_id=job.pk)
        )
    except TRANSIENT_ERRORS as exc:
        log.warning("dashboard job %s hit a transient database error, retrying: %s", job.pk, exc)
        _set_job(job.pk, status=Job.Status.QUEUED, message=f"retrying after: {exc}"[:2000])
        raise
    except Exception as exc:
        log.exception("dashboard job %s failed", job.pk)
        _set_job(job.pk, status=Job.Status.FAILED, message=f"{type(exc).__name__}: {exc}"[:2000])
        return {"error": f"{type(exc).__name__}: {exc}"}
    summary = {"study": study.pk, "name": job.params["name"], "fingerprint": result["fingerprint"]}
    _set_job(job.pk, status=Job.Status.DONE, progress=1.0, message="done", result=summary)
    return summary
