"""The researcher's results page of a sentence-rating study (Pappas & Popescu-Belis 2016 §4): tables,
the Figure 4 chart and CSV downloads. ``?run=<model run id>`` picks the model whose sentence attention
is compared with the crowd (``?run=none``: no model); the newest run with attention is the default."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse

from annotate.access import researcher_required, visible_to
from annotate.models import Study
from annotate.tasks import get_kind
from annotate.tasks.results import chosen_run, csv_text, download, owned_study_or_404
from annotate.tasks.sentence_rating import KIND
from annotate.tasks.sentence_rating.results import (
    TABLES,
    attention_runs,
    machine_chart,
    rating_results,
    rating_table,
)


def rating_study(request, uid) -> Study:
    """The researcher's sentence-rating study ``uid``; 404 otherwise."""
    return owned_study_or_404(request.user, uid, {KIND}, "a sentence-rating study")


def _compute(request, study: Study) -> dict:
    """Results plus the model choices shown above them."""
    runs = visible_to(attention_runs(study), request.user)
    run = chosen_run(request, runs)
    return {
        "results": rating_results(study, run),
        "runs": list(runs),
        "run": run,
        "methods": [],
        "method": None,
    }


@researcher_required
def results_page(request, uid):
    study = rating_study(request, uid)
    context = _compute(request, study)
    query = f"?run={context['run'].pk if context['run'] is not None else 'none'}"
    context.update(
        study=study,
        kind=get_kind(study.kind),
        chart=machine_chart(context["results"]),
        downloads=[(t, reverse("sentence-rating-csv", args=[study.uid, t]) + query) for t in TABLES],
    )
    return render(request, "sentence_rating/results.html", context)


@researcher_required
def results_csv(request, uid, table: str):
    study = rating_study(request, uid)
    if table not in TABLES:
        raise Http404(f"no table {table!r} for a sentence-rating study")
    results = _compute(request, study)["results"]
    return download(study, table, csv_text(*rating_table(results, table)))
