"""The Celery job that recomputes a dashboard of a large study, with progress.

One ``Job`` row per dashboard, parameters and data fingerprint (key
``dashboard:<study>:<name>:<params digest>:<fingerprint>``), so asking again while it runs finds the
same job, and new data makes a new one. Running it twice stores the same cache row; a failed job is
queued again by the next request for the dashboard, and one that never reached the broker is sent again
(retries and failures: :mod:`annotate.jobs.base`; sending: :mod:`annotate.jobs.dispatch`).
"""

from __future__ import annotations

from django.db import transaction

from annotate.dashboards.cache import digest
from annotate.dashboards.compute import compute_and_store
from annotate.jobs.base import job, run_job
from annotate.jobs.dispatch import dispatch, unsent
from annotate.machine.progress import RowProgress
from annotate.models import Job, Study

DASHBOARD_KIND = "dashboard"
QUEUE = "cpu"


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
        queue = created or unsent(job) or (job.status == Job.Status.QUEUED and not job.task)
        if job.status == Job.Status.FAILED or (rerun and job.status == Job.Status.DONE):
            job.status, job.progress, job.message = Job.Status.QUEUED, 0.0, ""
            job.save(update_fields=["status", "progress", "message", "updated"])
            queue = True
        if queue:
            dispatch(job, compute_dashboard, QUEUE)
    return job


class StudyGone(LookupError):
    """The job's study was deleted after the job was queued."""


@job("annotate.dashboards.compute_dashboard")
def compute_dashboard(self, job_id: int) -> dict:
    """Compute the job's dashboard, report progress on the job row, and cache the result."""

    def work(job: Job) -> dict:
        study = Study.objects.filter(pk=job.params["study"]).first()
        if study is None:
            raise StudyGone("the study no longer exists")
        result = compute_and_store(
            study, job.params["name"], job.params["params"], RowProgress(job_id=job.pk)
        )
        return {"study": study.pk, "name": job.params["name"], "fingerprint": result["fingerprint"]}

    return run_job(job_id, work)
