"""The researcher's crowd platform page of a study (``/studies/<uid>/crowd/``): the cost before
publishing, publish, pause / resume, top up, expire / extend, reconcile now, message workers, and what
has been spent (the actions themselves: :mod:`annotate.publishing`)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect, render

from annotate.access import owned_or_404, researcher_required
from annotate.models import Study
from annotate.providers import get_provider
from annotate.publishing import ActionError, crowd_state, new_key, perform


def _study(request, uid) -> Study:
    return owned_or_404(Study.objects.all(), request.user, uid=uid)


@researcher_required
def crowd_page(request, uid):
    study = _study(request, uid)
    state = crowd_state(study, estimate=request.GET.get("estimate") == "1")
    return render(
        request,
        "annotate/crowd/publish.html",
        {"study": study, "state": state, "key": new_key(), "provider": get_provider(study.provider)},
    )


@researcher_required
def crowd_action(request, uid, action: str):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    study = _study(request, uid)
    try:
        result = perform(study, action, request.POST.dict())
    except ActionError as exc:
        for field, problems in exc.errors.items():
            messages.error(request, f"{action}: {field} {' '.join(problems)}")
    else:
        messages.success(request, f"{action}: done ({', '.join(f'{k}={v}' for k, v in result.items())})")
    return redirect("crowd-page", uid=study.uid)
