"""The researcher's results page of a sentence-rating study (Pappas & Popescu-Belis 2016 §4): tables,
the Figure 4 chart and CSV downloads. ``?run=<model run id>`` picks the model whose sentence attention
is compared with the crowd (``?run=none``: no model); the newest run with attention is the default.
``?kappa=`` names the κ of the agreement table (``cohen_absolute``, the default, or
``distance_agreement``, the figure Pappas & Popescu-Belis 2016 Table 1 reports as we read it); any other
value is a 400 naming the field."""

from __future__ import annotations

from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse

from annotate.access import researcher_required, visible_to
from annotate.kinds.sentence_rating.config import KIND
from annotate.kinds.sentence_rating.results import (
    TABLES,
    attention_runs,
    machine_chart,
    rating_results,
    rating_table,
)
from annotate.models import Study
from annotate.tasks import get_kind
from annotate.tasks.results import chosen_run, csv_text, download, owned_study_or_404
from explain_engine.api import DEFAULT_KAPPA, KAPPA_KINDS


def rating_study(request, uid) -> Study:
    """The researcher's sentence-rating study ``uid``; 404 otherwise."""
    return owned_study_or_404(request.user, uid, {KIND}, "a sentence-rating study")


class BadQuery(ValueError):
    """A query parameter with a value the page does not offer."""


def chosen_kappa(request) -> str:
    kappa = request.GET.get("kappa", DEFAULT_KAPPA)
    if kappa not in KAPPA_KINDS:
        raise BadQuery(f"kappa must be one of {', '.join(KAPPA_KINDS)}")
    return kappa


def _compute(request, study: Study) -> dict:
    """Results plus the model and κ choices shown above them."""
    kappa = chosen_kappa(request)
    runs = visible_to(attention_runs(study), request.user)
    run = chosen_run(request, runs)
    return {
        "results": rating_results(study, run, kappa=kappa),
        "runs": list(runs),
        "run": run,
        "methods": [],
        "method": None,
        "kappa": kappa,
        "kappa_kinds": KAPPA_KINDS,
    }


@researcher_required
def results_page(request, uid):
    study = rating_study(request, uid)
    try:
        context = _compute(request, study)
    except BadQuery as exc:
        return HttpResponseBadRequest(str(exc))
    query = f"?run={context['run'].pk if context['run'] is not None else 'none'}&kappa={context['kappa']}"
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
    try:
        results = _compute(request, study)["results"]
    except BadQuery as exc:
        return HttpResponseBadRequest(str(exc))
    return download(study, table, csv_text(*rating_table(results, table)))
