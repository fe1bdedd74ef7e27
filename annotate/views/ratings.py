"""Researcher pages of the sentence_rating (paper 001) and token_marking (paper 003) studies: results
with tables, a chart and CSV downloads. ``?run=<model run id>`` picks the model compared with the
crowd (sentence attention, or explanations with ``&method=<name>``); the newest suitable run is the
default."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from annotate.access import owned_or_404, researcher_required
from annotate.models import ModelRun, Study
from annotate.ratings.results import (
    MARKING_TABLES,
    RATING_TABLES,
    alignment_chart,
    attention_runs,
    csv_text,
    explanation_methods,
    explanation_runs,
    machine_chart,
    marking_results,
    marking_table,
    rating_results,
    rating_table,
)
from annotate.tasks import get_kind

KINDS = ("sentence_rating", "token_marking")


def rating_study(request, uid) -> Study:
    """The researcher's study ``uid`` when it is of one of :data:`KINDS`; 404 otherwise."""
    study = owned_or_404(Study.objects.select_related("dataset", "owner"), request.user, uid=uid)
    if study.kind not in KINDS:
        raise Http404("not a sentence_rating or token_marking study")
    return study


def _chosen_run(request, runs) -> ModelRun | None:
    """The run named by ``?run=`` among ``runs`` (``?run=none``: no model); the newest otherwise."""
    wanted = request.GET.get("run", "")
    if wanted == "none":
        return None
    if wanted:
        if not wanted.isdigit():
            raise Http404("run must be a model run id")
        run = runs.filter(pk=int(wanted)).first()
        if run is None:
            raise Http404("no such model run with results for this study's dataset")
        return run
    return runs.first()


def _compute(request, study: Study) -> dict:
    """Results plus the model choices shown above them."""
    if study.kind == "sentence_rating":
        runs = attention_runs(study)
        run = _chosen_run(request, runs)
        return {
            "results": rating_results(study, run),
            "runs": list(runs),
            "run": run,
            "methods": [],
            "method": None,
        }
    runs = explanation_runs(study)
    run = _chosen_run(request, runs)
    methods = explanation_methods(run) if run is not None else []
    method = request.GET.get("method") or (methods[0] if methods else None)
    if method is not None and method not in methods:
        raise Http404("the model run has no explanations of this method")
    return {
        "results": marking_results(study, run, method),
        "runs": list(runs),
        "run": run,
        "methods": methods,
        "method": method,
    }


def _query(context: dict) -> str:
    run = context["run"]
    query = f"?run={run.pk if run is not None else 'none'}"
    return query + (f"&method={context['method']}" if context["method"] else "")


@researcher_required
def results_page(request, uid):
    study = rating_study(request, uid)
    context = _compute(request, study)
    tables = RATING_TABLES if study.kind == "sentence_rating" else MARKING_TABLES
    query = _query(context)
    context.update(
        study=study,
        kind=get_kind(study.kind),
        downloads=[(t, reverse("ratings-csv", args=[study.uid, t]) + query) for t in tables],
    )
    if study.kind == "sentence_rating":
        context["chart"] = machine_chart(context["results"])
        return render(request, "annotate/ratings/sentence_rating.html", context)
    context["chart"] = alignment_chart(context["results"])
    return render(request, "annotate/ratings/token_marking.html", context)


@researcher_required
def results_csv(request, uid, table: str):
    study = rating_study(request, uid)
    tables = RATING_TABLES if study.kind == "sentence_rating" else MARKING_TABLES
    if table not in tables:
        raise Http404(f"no table {table!r} for a {study.kind} study")
    context = _compute(request, study)
    shape = rating_table if study.kind == "sentence_rating" else marking_table
    response = HttpResponse(csv_text(*shape(context["results"], table)), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{study.uid}-{table}.csv"'
    return response
