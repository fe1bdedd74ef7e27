"""Computing a dashboard now and keeping it in the cache, in a request or in a background job."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.urls import NoReverseMatch, reverse

from annotate.dashboards.cache import DASHBOARDS, SIMILARITY, STUDY, fingerprint, selections_of, store
from annotate.dashboards.similarity import similarity_dashboard
from annotate.dashboards.study import study_dashboard
from annotate.machine.progress import Progress, no_progress
from annotate.models import Study


def compute_and_store(study: Study, name: str, params: dict, progress: Progress = no_progress) -> dict:
    """Compute dashboard ``name`` now and cache it under the fingerprint taken before reading the data
    (so data that arrives meanwhile makes the row stale rather than silently included)."""
    fp = fingerprint(study, name, params)
    result = _computer(name)(study, params, progress)
    result["fingerprint"] = fp
    store(study, name, params, fp, result)
    return result


def _computer(name: str) -> Callable[..., dict]:
    if name == STUDY:
        return lambda study, params, progress: study_dashboard(study, progress)
    if name == SIMILARITY:
        return lambda study, params, progress: similarity_dashboard(
            study, params, progress, text_url=_text_url(study, params)
        )
    raise ValueError(f"unknown dashboard {name!r}; use one of {DASHBOARDS}")


def _text_url(study: Study, params: dict) -> Callable[[int], str] | None:
    """Links from the texts table to the drill-down page, when the page's route is installed."""
    query = urlencode(
        [("select", s.key) for s in selections_of(params)] + [("target", params.get("target", "predicted"))]
    )
    try:
        reverse("study-dashboard-text", args=[study.uid, 1])
    except NoReverseMatch:
        return None
    return lambda item: f"{reverse('study-dashboard-text', args=[study.uid, item])}?{query}"
