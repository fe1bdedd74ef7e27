"""Researcher pages that manage a study: edit or delete a draft, clone any study into a new draft, and
the confirmation that finishing a study asks for (:mod:`annotate.studies.service`, :mod:`annotate.studies.drafts`,
:mod:`annotate.studies.lifecycle`)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.exceptions import ValidationError

from annotate.access import owned_or_404, researcher_required
from annotate.infra.field_errors import flatten_errors
from annotate.models import Study
from annotate.studies import drafts, lifecycle
from annotate.studies import service as study_service
from annotate.studies.progress import study_progress
from annotate.tasks import get_kind
from annotate.tasks.study_form import add_api_errors
from annotate.views.studies import unaccepted_warnings


def _draft_or_redirect(request, uid):
    """The owner's study and ``None``, or ``None`` and a redirect saying why it is not a draft."""
    study = owned_or_404(Study.objects.select_related("dataset"), request.user, uid=uid)
    if study.status != Study.Status.DRAFT:
        messages.error(
            request,
            f"Only a draft can be changed; this study is {study.get_status_display().lower()}. "
            "Clone it to make a new draft with its settings.",
        )
        return None, redirect("study-detail", uid=study.uid)
    return study, None


@researcher_required
def study_edit(request, uid):
    """Every setting of a draft, on its kind's own form."""
    study, refused = _draft_or_redirect(request, uid)
    if refused is not None:
        return refused
    kind = get_kind(study.kind)
    form_class = kind.form_for_edit()
    if form_class is None:
        messages.error(request, "Drafts of this kind cannot be edited here.")
        return redirect("study-detail", uid=study.uid)
    form = form_class(request.POST or None, user=request.user, initial=form_class.initial_from(study))
    warnings: list[str] = []
    if request.method == "POST" and form.is_valid():
        warnings = unaccepted_warnings(request, form.study_data())
    if request.method == "POST" and form.is_valid() and not warnings:
        try:
            problem = form.check(request.user) if hasattr(form, "check") else None
            if problem is not None:
                form.add_error(None, problem)
            else:
                rebuilt = study_service.update_draft(request.user, study, form.study_data())
        except ValidationError as exc:  # the study rule's StudyInvalid, or the kind's check of its options
            add_api_errors(form, flatten_errors(exc.detail))
        except lifecycle.StudyStateError as exc:
            form.add_error(None, f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
        else:
            if problem is None:
                note = ""
                if rebuilt.golds_dropped:
                    note = (
                        f" {rebuilt.golds_dropped} gold answer(s) no longer fit the new settings and were "
                        "removed; mark them again on the golds page."
                    )
                messages.success(request, f"Study {study.name} saved.{note}")
                return redirect("study-detail", uid=study.uid)
    context = {"study": study, "kind": kind, "form": form, "warnings": warnings}
    return render(request, "annotate/studies/edit.html", context)


@researcher_required
def study_delete(request, uid):
    """GET: what deleting the draft removes; POST: delete it."""
    study, refused = _draft_or_redirect(request, uid)
    if refused is not None:
        return refused
    if request.method == "POST":
        try:
            drafts.delete_draft(study)
        except lifecycle.StudyStateError as exc:
            messages.error(request, f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
            return redirect("study-detail", uid=study.uid)
        messages.success(request, f"Draft {study.name} deleted. Its dataset stays.")
        return redirect("study-list")
    return render(
        request,
        "annotate/studies/confirm.html",
        {
            "study": study,
            "action": "delete",
            "title": f"Delete the draft {study.name}?",
            "points": [
                "The draft and its settings are deleted; this cannot be undone.",
                f"Its {study.items.count()} prepared item(s) and their gold answers go with it."
                if study.items.exists()
                else "It has no items yet.",
                f"The dataset {study.dataset.name} stays, with its documents." if study.dataset else "",
            ],
            "button": "Delete the draft",
        },
    )


@researcher_required
@require_POST
def study_clone(request, uid):
    """A new draft with the study's settings (any status), owned by whoever clones it."""
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    clone = study_service.clone_study(request.user, study)
    messages.success(
        request, f"Draft {clone.name} created with the settings of {study.name}. Edit it, then start it."
    )
    return redirect("study-detail", uid=clone.uid)


@researcher_required
def study_finish(request, uid):
    """GET: what finishing does, with the counts it touches; POST: finish (the action's own route)."""
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    if study.status not in (Study.Status.RUNNING, Study.Status.PAUSED):
        messages.error(request, f"A {study.get_status_display().lower()} study cannot be finished.")
        return redirect("study-detail", uid=study.uid)
    progress = study_progress(study)
    open_assignments, waiting = progress["open_assignments"], progress["provisional"]
    points = [
        "No item is handed out any more, and no answer is accepted after this.",
        f"{open_assignments} item(s) that workers hold now will not be accepted if they submit them."
        if open_assignments
        else "No worker holds an item now.",
        f"{waiting} answer(s) still waiting for their platform are reconciled afterwards; they count once confirmed."
        if waiting
        else "Every answer received so far is verified.",
        "Results, dashboards and exports stay available.",
        "Finishing cannot be undone: to collect more answers, clone the study into a new draft.",
    ]
    return render(
        request,
        "annotate/studies/confirm.html",
        {
            "study": study,
            "action": "finish",
            "title": f"Finish {study.name}?",
            "points": points,
            "button": "Finish the study",
        },
    )
