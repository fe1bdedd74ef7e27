"""Celery jobs of the crowd side: reconcile each study with its platform, keep trust and gold reviews
current, on a schedule and on demand.

``reconcile_study_job`` is idempotent (every platform action it takes is keyed in the database, see
:mod:`annotate.crowd.providers.reconcile`), acknowledges late and is retried with backoff when the database
hiccups; platform errors do not fail it: they are recorded in the job's result and the next run picks
the work up again. Its ``Job`` row (key ``crowd.reconcile:<study uid>``) shows the last run's summary.
"""

from __future__ import annotations

import logging

from django.db.models import Q
from django.utils import timezone

from annotate.crowd.blocks import apply_quality
from annotate.crowd.providers.reconcile import reconcile_study
from annotate.crowd.release import release_unneeded
from annotate.infra import shared_cache
from annotate.jobs.base import job
from annotate.jobs.dispatch import BROKER_ERRORS
from annotate.models import Job, Response, Study
from annotate.quality.gold_review import review_golds

log = logging.getLogger(__name__)

RECONCILE_KIND = "crowd.reconcile"
RECONCILE_EVERY_S = 300.0
CONFIRM_AFTER_S = 60
ACTIVE = (Study.Status.RUNNING, Study.Status.PAUSED)


def reconcile_key(study: Study) -> str:
    return f"{RECONCILE_KIND}:{study.uid}"


def run_reconcile(study: Study) -> dict:
    """One full pass over ``study``: platform submissions, trust and blocks, gold reviews. Returns the
    summary stored on the study's reconcile ``Job`` row."""
    job, _ = Job.objects.get_or_create(key=reconcile_key(study), defaults={"kind": RECONCILE_KIND,
                                                                           "params": {"study": study.pk}})  # fmt: skip
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, progress=0.0, message="")
    submissions = reconcile_study(study)
    Job.objects.filter(pk=job.pk).update(progress=0.5)
    quality = apply_quality(study)
    flagged = sum(r.flagged for r in review_golds(study))
    errors = submissions.errors + quality.errors
    released = 0
    try:  # after quality: an exclusion may have reopened items
        released = release_unneeded(study)
    except Exception as exc:  # a platform error: recorded, the next run tries again
        errors = [*errors, f"closing the places no longer needed: {exc}"]
    result = {
        "submissions": submissions.as_dict(),
        "quality": quality.as_dict(),
        "flagged_golds": flagged,
        "released_publications": released,
        "finished": timezone.now().isoformat(),
    }
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.DONE,
        progress=1.0,
        result=result,
        message=f"{len(errors)} platform error(s); the next run retries them" if errors else "",
    )
    return result


@job("annotate.crowd.reconcile_study", ignore_result=True)
def reconcile_study_job(self, study_id: int) -> None:
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        log.info("study %s is gone; nothing to reconcile", study_id)
        return
    run_reconcile(study)


@job(
    "annotate.crowd.reconcile_all",
    retried=False,
    every_s=RECONCILE_EVERY_S,
    beat_name="reconcile-crowd-studies",
    ignore_result=True,
)
def reconcile_all() -> int:
    """Queue a reconciliation of every running or paused study, and of every finished one that still has
    answers waiting for their platform's confirmation; returns how many were queued."""
    waiting = Response.objects.filter(verification=Response.Verification.PROVISIONAL).values("study_id")
    ids = list(Study.objects.filter(Q(status__in=ACTIVE) | Q(pk__in=waiting)).values_list("pk", flat=True))
    for study_id in ids:
        reconcile_study_job.delay(study_id)
    return len(ids)


def enqueue_reconcile(study: Study) -> bool:
    """Queue a reconciliation now; when the broker cannot be reached, run it in this process instead.
    Returns whether it was queued."""
    try:
        reconcile_study_job.delay(study.pk)
    except BROKER_ERRORS as exc:
        log.warning("could not queue reconciliation of study %s (%s); running it now", study.pk, exc)
        run_reconcile(study)
        return False
    return True


def reconcile_soon(study: Study, countdown: int = CONFIRM_AFTER_S) -> bool:
    """Queue a reconciliation of ``study`` in ``countdown`` seconds, once per study in that time: a worker
    who just finished hands their unit back to the platform, and the run after that verifies their
    provisional answers. When the broker cannot be reached nothing is queued (the schedule catches up).
    Returns whether a run was queued."""
    # a cache that is down or hangs cannot say whether a run is queued: none is (the schedule catches up),
    # and the page that asked answers at once (annotate.infra.shared_cache)
    if not shared_cache.add(f"hatlab-reconcile-soon:{study.pk}", 1, countdown):
        return False
    try:
        reconcile_study_job.apply_async((study.pk,), countdown=countdown)
    except BROKER_ERRORS as exc:
        log.warning(
            "could not queue reconciliation of study %s (%s); the schedule will run it", study.pk, exc
        )
        return False
    return True
