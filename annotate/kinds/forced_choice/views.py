"""Researcher pages of the forced-choice evaluation (Lertvittayakumjorn & Toni 2019): the results of a study (Table 4,
Figure 3, Fleiss κ) with CSV downloads, and the form that creates a study of one of the three tasks."""

from __future__ import annotations

import math

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from rest_framework.exceptions import ValidationError

from annotate.access import researcher_required
from annotate.infra.field_errors import flatten_errors
from annotate.kinds.forced_choice.forms import KINDS, EvaluationStudyForm, dry_run
from annotate.kinds.forced_choice.kind import FAMILY
from annotate.kinds.forced_choice.results import (
    TABLES,
    csv_text,
    distribution_chart,
    evaluation_results,
    means_chart,
)
from annotate.models import Study
from annotate.tasks import TASK_KINDS, get_kind
from annotate.tasks.results import download, owned_study_or_404
from explain_engine.api import TESTS


def forced_choice_study(request, uid) -> Study:
    """The researcher's study ``uid`` when it is a forced-choice study; 404 otherwise."""
    return owned_study_or_404(request.user, uid, TASK_KINDS.where(family=FAMILY), "a forced-choice study")


def _test_and_alpha(request) -> tuple[str, float]:
    """The significance test and level asked for in the query (the defaults when absent or bad)."""
    test = request.GET.get("test", "wilcoxon")
    try:
        alpha = float(request.GET.get("alpha", "0.05"))
    except ValueError:
        alpha = 0.05
    return (test if test in TESTS else "wilcoxon"), (
        alpha if 0 < alpha < 1 and math.isfinite(alpha) else 0.05
    )


@researcher_required
def results_page(request, uid):
    study = forced_choice_study(request, uid)
    test, alpha = _test_and_alpha(request)
    results = evaluation_results(study, test=test, alpha=alpha)
    query = f"?test={test}&alpha={alpha:g}"
    context = {
        "study": study,
        "kind": get_kind(study.kind),
        "results": results,
        "tests": TESTS,
        "means_chart": means_chart(results),
        "distribution_chart": distribution_chart(results),
        "downloads": [(t, reverse("evaluation-csv", args=[study.uid, t]) + query) for t in TABLES],
        "split_titles": ["all texts", "correctly predicted ✓", "misclassified ✗"],
    }
    return render(request, "forced_choice/results.html", context)


@researcher_required
def results_csv(request, uid, table: str):
    study = forced_choice_study(request, uid)
    if table not in TABLES:
        raise Http404(f"no table {table!r}")
    test, alpha = _test_and_alpha(request)
    return download(study, table, csv_text(evaluation_results(study, test=test, alpha=alpha), table))


@researcher_required
def new_study(request):
    """Create a draft study of one forced-choice task; "Check texts" reports how many texts qualify."""
    kind = request.GET.get("kind")
    initial = {"kind": kind} if kind in {k for k, _ in KINDS} else {}
    form = EvaluationStudyForm(request.POST or None, user=request.user, initial=initial)
    check = None
    if request.method == "POST" and form.is_valid():
        try:
            if "check" in request.POST:
                check = dry_run(form, request.user)
            elif (problem := form.check(request.user)) is not None:
                form.add_error(None, problem)  # "Check texts" first: a study that cannot start is not made
            else:
                study = form.save(request.user)
                messages.success(request, f"Study {study.name} created. Start it to generate its questions.")
                return redirect("study-detail", uid=study.uid)
        except ValidationError as exc:
            for field, problems in flatten_errors(exc.detail).items():
                target = field.split(".")[-1]
                form.add_error(target if target in form.fields else None, "; ".join(problems))
    return render(request, "forced_choice/form.html", {"form": form, "check": check})
