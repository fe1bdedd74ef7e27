"""Dashboard pages of a study (owner and admins): the study dashboard, human vs machine with its
picker of model runs × methods, and one text's maps over its words. The pages are shells: the
browser fetches the figures from the dashboards API and draws them (``frontend/src/dashboard.ts``)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.shortcuts import render
from django.urls import reverse
from rest_framework.exceptions import ValidationError

from annotate.access import researcher_required
from annotate.corpus.lexicon import lexicon_dir
from annotate.dashboards.gather import ATTENTION, TARGETS
from annotate.dashboards.params import (
    clean_selections,
    clean_target,
    item_for,
    options_for,
    study_for,
)
from annotate.dashboards.similarity import MAX_SELECTIONS
from annotate.infra.field_errors import flatten_errors
from annotate.studies.progress import study_progress


@researcher_required
def study_dashboard(request, uid):
    study = study_for(request.user, uid)
    context = {
        "study": study,
        "progress": study_progress(study),
        "api_url": reverse("api-dashboard-study", args=[study.uid]),
    }
    return render(request, "annotate/dashboards/study.html", context)


@researcher_required
def similarity_dashboard(request, uid):
    study = study_for(request.user, uid)
    options = options_for(request.user, study)
    chosen = request.GET.getlist("select")
    errors: list[str] = []
    api_url = ""
    target = request.GET.get("target") or TARGETS[0]
    if chosen:
        try:
            selections = clean_selections(request.user, study, chosen)
            target = clean_target(request.GET.get("target"))
        except ValidationError as exc:
            errors = [m for ms in flatten_errors(exc.detail).values() for m in ms]
        else:
            query = urlencode([("select", s.key) for s in selections] + [("target", target)])
            api_url = f"{reverse('api-dashboard-similarity', args=[study.uid])}?{query}"
    context = {
        "study": study,
        "options": options,
        "chosen": set(chosen),
        "target": target,
        "targets": TARGETS,
        "attention": ATTENTION,
        "errors": errors,
        "api_url": api_url,
        "max_selections": MAX_SELECTIONS,
        "has_lexicon": lexicon_dir(study.owner_id) is not None,
    }
    return render(request, "annotate/dashboards/similarity.html", context, status=400 if errors else 200)


@researcher_required
def text_dashboard(request, uid, item: int):
    study = study_for(request.user, uid)
    item_row = item_for(study, item)
    errors: list[str] = []
    query = ""
    try:
        selections = clean_selections(request.user, study, request.GET.getlist("select"), required=False)
        target = clean_target(request.GET.get("target"))
    except ValidationError as exc:
        errors = [m for ms in flatten_errors(exc.detail).values() for m in ms]
    else:
        query = urlencode([("select", s.key) for s in selections] + [("target", target)])
    context = {
        "study": study,
        "item": item_row,
        "document": item_row.document,
        "errors": errors,
        "query": query,
        "api_url": ""
        if errors
        else f"{reverse('api-dashboard-text', args=[study.uid, item_row.pk])}?{query}",
        "page_url": reverse("study-dashboard-text", args=[study.uid, item_row.pk]),
        "similarity_url": f"{reverse('study-dashboard-similarity', args=[study.uid])}?{query}"
        if query
        else "",
    }
    return render(request, "annotate/dashboards/text.html", context, status=400 if errors else 200)
