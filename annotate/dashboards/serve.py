"""The dashboard a request gets: from the cache when current, else computed in the request (a small
study) or by a background job with progress (a large one; its state is answered until it is done)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from annotate.dashboards.cache import (
    INLINE_RESPONSES,
    INLINE_UNTAGGED,
    SIMILARITY,
    cached,
    fingerprint,
    pos_row,
)
from annotate.dashboards.compute import compute_and_store
from annotate.dashboards.jobs import enqueue_dashboard
from annotate.jobs.sweeper import sweep_soon
from annotate.models import Item, Job, Response, Study


@dataclass(frozen=True)
class DashboardState:
    """``status`` is ``done`` (``result`` set) or the job's ``queued`` / ``running`` / ``failed``."""

    status: str
    result: dict | None = None
    job: Job | None = None


def inline_limit() -> int:
    return int(getattr(settings, "HATLAB_DASHBOARD_INLINE_RESPONSES", INLINE_RESPONSES))


def is_small(study: Study, name: str, params: dict) -> bool:
    """Whether recomputing fits in a request: few responses (× selections) and few untagged texts."""
    responses = Response.objects.filter(study=study).counted().count()
    if name == SIMILARITY:
        selections = max(1, len(params.get("selections", [])))
        if responses * selections > inline_limit():
            return False
        tagged = pos_row(study)
        known = set(tagged.result.get("tags", {})) if tagged else set()
        documents = set(
            Item.objects.filter(study=study, is_gold=False, document__isnull=False).values_list(
                "document_id", flat=True
            )
        )
        return len({str(d) for d in documents} - known) <= INLINE_UNTAGGED
    return responses <= inline_limit()


def get_dashboard(
    study: Study, name: str, params: dict, user=None, inline: bool | None = None
) -> DashboardState:
    """The dashboard from the cache when current; else computed now (``inline``, default: when the study
    is small) or by a background job (its state is returned until it is done)."""

    fp = fingerprint(study, name, params)
    result = cached(study, name, params, fp)
    if result is not None:
        return DashboardState("done", result)
    if inline is None:
        inline = is_small(study, name, params)
    if inline:
        return DashboardState("done", compute_and_store(study, name, params))
    sweep_soon()
    job = enqueue_dashboard(study, name, params, fp, user)
    job.refresh_from_db()
    if job.status == Job.Status.DONE:
        result = cached(study, name, params)
        if result is not None:  # e.g. computed in-process (eager Celery) just now
            return DashboardState("done", result, job)
        job = enqueue_dashboard(study, name, params, fp, user, rerun=True)
        job.refresh_from_db()
    return DashboardState(job.status, None, job)
