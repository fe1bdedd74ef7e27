"""The forced-choice family's own page (Lertvittayakumjorn & Toni 2019): the form that creates a study of one
of the three tasks. Its results page is the family's results class
(:class:`annotate.kinds.forced_choice.results.ForcedChoiceResults`)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from rest_framework.exceptions import ValidationError

from annotate.access import researcher_required
from annotate.infra.field_errors import flatten_errors
from annotate.kinds.forced_choice.forms import KINDS, ForcedChoiceStudyForm, dry_run
from annotate.tasks.study_form import add_api_errors


@researcher_required
def new_study(request):
    """Create a draft study of one forced-choice task; "Check texts" reports how many texts qualify."""
    kind = request.GET.get("kind")
    initial = {"kind": kind} if kind in {k for k, _ in KINDS} else {}
    form = ForcedChoiceStudyForm(request.POST or None, user=request.user, initial=initial)
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
            add_api_errors(form, flatten_errors(exc.detail))
    return render(request, "forced_choice/form.html", {"form": form, "check": check})
