"""The researcher's results page of a token-marking study (the NLI importance-alignment paper §4): expert
oracles, agreement over words, the ΔA chart and CSV downloads. ``?run=<model run id>&method=<name>``
picks the explanations compared with the oracles (``?run=none``: no model); the newest run with
explanations and its integrated-gradients method are the default."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse

from annotate.access import researcher_required, visible_to
from annotate.kinds.token_marking.config import KIND
from annotate.kinds.token_marking.results import (
    TABLES,
    alignment_chart,
    explanation_methods,
    explanation_runs,
    marking_results,
    marking_table,
)
from annotate.models import Study
from annotate.tasks import get_kind
from annotate.tasks.results import chosen_run, csv_text, download, owned_study_or_404


def marking_study(request, uid) -> Study:
    """The researcher's token-marking study ``uid``; 404 otherwise."""
    return owned_study_or_404(request.user, uid, {KIND}, "a token-marking study")


def _compute(request, study: Study) -> dict:
    """Results plus the model and method choices shown above them."""
    runs = visible_to(explanation_runs(study), request.user)
    run = chosen_run(request, runs)
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
    study = marking_study(request, uid)
    context = _compute(request, study)
    query = _query(context)
    context.update(
        study=study,
        kind=get_kind(study.kind),
        chart=alignment_chart(context["results"]),
        downloads=[(t, reverse("token-marking-csv", args=[study.uid, t]) + query) for t in TABLES],
    )
    return render(request, "token_marking/results.html", context)


@researcher_required
def results_csv(request, uid, table: str):
    study = marking_study(request, uid)
    if table not in TABLES:
        raise Http404(f"no table {table!r} for a token-marking study")
    results = _compute(request, study)["results"]
    return download(study, table, csv_text(*marking_table(results, table)))
