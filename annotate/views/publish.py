"""The researcher's crowd platform page of a study (``/studies/<uid>/crowd/``): the provider's settings
as a form built from its declarations, the cost computed here (with the fee rule, its source and date),
a preview of the task page with a sample item, publish, the publications with their counts, and the
actions (add places, extend, expire, pause / resume, approve / reject in bulk, bonus, reconcile,
message), each said in words and confirmed first, run once per form key and written to the audit log
shown on the page (the actions themselves: :mod:`annotate.crowd.publishing`, the log: :mod:`annotate.crowd.log`)."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotate.access import owned_or_404, researcher_required
from annotate.crowd.log import audit_log, describe, run_logged
from annotate.crowd.providers import get_provider
from annotate.crowd.publishing import ActionError, crowd_state, new_key, reviewable, unmet_preconditions
from annotate.crowd.settings_form import ProviderSettingsForm, fee_rule
from annotate.models import Study, Worker
from annotate.studies.plan import study_plan
from annotate.views.work import sample_page


def _study(request, uid) -> Study:
    return owned_or_404(Study.objects.all(), request.user, uid=uid)


def _form_data(request) -> dict:
    """The posted fields; ``submissions`` (checkboxes) as a list."""
    data = request.POST.dict()
    if "submissions" in request.POST:
        data["submissions"] = request.POST.getlist("submissions")
    return data


def _workers(study: Study):
    provider = get_provider(study.provider)
    return Worker.objects.filter(responses__study=study, provider=provider.name).distinct().order_by("id")


@researcher_required
def crowd_page(request, uid, settings_form: ProviderSettingsForm | None = None, status: int = 200):
    study = _study(request, uid)
    provider = get_provider(study.provider)
    state = crowd_state(study, estimate=request.GET.get("balance") == "1")
    return render(
        request,
        "annotate/crowd/publish.html",
        {
            "study": study,
            "state": state,
            "key": new_key(),
            "provider": provider,
            "target": provider.target(),
            "fees": fee_rule(study.provider),
            "settings_form": settings_form or ProviderSettingsForm(study),
            "reviewable": reviewable(study).select_related("worker")[:200],
            "workers": _workers(study),
            "log": audit_log(study),
            "plan": study_plan(study),
        },
        status=status,
    )


@researcher_required
@require_POST
def crowd_settings(request, uid):
    """Store the provider settings entered on the crowd page (errors shown at their fields)."""
    study = _study(request, uid)
    form = ProviderSettingsForm(study, request.POST)
    if not form.save():
        messages.error(request, "The settings were not saved: see the fields marked below.")
        return crowd_page(request, uid=uid, settings_form=form, status=400)
    messages.success(request, "Settings saved.")
    return redirect("crowd-page", uid=study.uid)


def _message(action: str, exc: ActionError) -> str:
    parts = []
    for field, problems in exc.errors.items():
        text = " ".join(problems)
        parts.append(text if field == "credentials" or exc.sentence else f"{field.replace('_', ' ')} {text}")
    return f"{action}: {'; '.join(parts)}"


@researcher_required
def crowd_action(request, uid, action: str):
    """A posted action: first the confirmation page saying what it will do, then (``confirmed``) the
    action, once per form key; publishing where it spends real money also needs ``live``."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    study = _study(request, uid)
    provider = get_provider(study.provider)
    data = _form_data(request)
    if data.get("worker"):
        worker = _workers(study).filter(pk=data["worker"]).first() if data["worker"].isdigit() else None
        data["worker_label"] = worker.pseudonym_for(study.owner_id) if worker else data["worker"]
    where, live = provider.target()
    needs_live = action == "publish" and live
    if data.get("confirmed") != "yes" or (needs_live and data.get("live") != "yes"):
        hidden = [(k, v) for k, v in data.items() if k not in ("confirmed", "live", "csrfmiddlewaretoken")]
        hidden = [
            (k, item)
            for k, v in hidden
            for item in (v if isinstance(v, list) else [v])
            if k != "worker_label"
        ]
        return render(
            request,
            "annotate/crowd/confirm.html",
            {
                "study": study,
                "action": action,
                "lines": describe(study, action, data),
                "hidden": hidden,
                "needs_live": needs_live,
                "where": where,
                "missing_live": data.get("confirmed") == "yes",
                "unmet": unmet_preconditions(study, provider) if action == "publish" else [],
            },
        )
    data.pop("worker_label", None)
    try:
        entry, ran = run_logged(study, action, data, user=request.user)
    except ActionError as exc:
        messages.error(request, _message(action, exc))
    else:
        if ran:
            done = entry.result_text
            messages.success(request, f"{action}: done{f' ({done})' if done else ''}")
        else:
            messages.info(request, f"{action}: this form was already sent; nothing was done again")
    return redirect("crowd-page", uid=study.uid)


@researcher_required
def crowd_preview(request, uid):
    """The task page exactly as a worker gets it, with a sample item, sending nothing; a banner says so
    and leads back to the page it was opened from (the study page, or the crowd page with
    ``?from=crowd``; only these two, so the link cannot be pointed elsewhere)."""
    study = _study(request, uid)
    if request.GET.get("from") == "crowd":
        back = (reverse("crowd-page", args=[study.uid]), "Back to the crowd page")
    else:
        back = (reverse("study-detail", args=[study.uid]), "Back to the study")
    response = sample_page(request, study, back=back)
    if response is None:
        raise Http404("the study's dataset has no documents to preview")
    return response
