"""Researcher pages: study list, the create form, a study's progress page with how annotators reach it
(the open link, or the invite manager: create, list, copy, download, revoke), its actions and exports."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from rest_framework.exceptions import ValidationError

from annotate.access import owned_or_404, researcher_required, visible_to
from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.crowd.providers.local.adapter import (
    invite_path,
    invite_state,
    make_invite,
    revoke_invite,
    used_invites,
)
from annotate.exports import tables as exports
from annotate.exports.rationales import RATIONALE_FORMATS, offers_rationales
from annotate.infra.csvfile import csv_text
from annotate.infra.field_errors import flatten_errors
from annotate.models import Invite, Study
from annotate.quality.redundancy import redundancy_summary
from annotate.studies import lifecycle
from annotate.studies import service as study_service
from annotate.studies.plan import settings_warnings, study_plan
from annotate.studies.progress import study_progress
from annotate.tasks import TASK_KINDS, default_kind, get_kind
from annotate.tasks.study_form import add_api_errors
from annotate.views.forms import InviteForm

ACTIONS = ("start", "pause", "finish")


def creatable_kinds() -> list[dict]:
    """Every kind a researcher can create a study of from the pages: its name, label and create page."""
    found = []
    first = default_kind()
    for name in sorted(TASK_KINDS, key=lambda n: n != first):
        kind = get_kind(name)
        if kind.create_form is not None:
            url = f"{reverse('study-create')}?kind={name}"
        elif kind.create_url_name:
            url = f"{reverse(kind.create_url_name)}?kind={name}"
        else:
            continue
        found.append({"name": name, "label": TASK_KINDS.meta(name).get("label") or kind.title, "url": url})
    return found


@researcher_required
def study_list(request):
    studies = visible_to(Study.objects.select_related("dataset", "owner"), request.user).order_by("-created")
    return render(request, "annotate/studies/list.html", {"studies": studies, "kinds": creatable_kinds()})


def _form_kind(request) -> str | None:
    """The kind the create page is for: ``?kind=`` (or the posted ``kind``) when it has a create form."""
    name = request.POST.get("kind") or request.GET.get("kind") or default_kind()
    return name if name in TASK_KINDS and get_kind(name).create_form is not None else None


@researcher_required
def study_create(request):
    name = _form_kind(request)
    if name is None:
        return HttpResponseBadRequest(
            "kind: no study of this kind can be created here; pick one of the kinds on the studies page.",
            content_type="text/plain; charset=utf-8",
        )
    kind = get_kind(name)
    initial = {"dataset": request.GET.get("dataset")} if request.GET.get("dataset", "").isdigit() else {}
    form = kind.create_form(request.POST or None, user=request.user, initial=initial)
    warnings: list[str] = []
    if request.method == "POST" and form.is_valid():
        warnings = unaccepted_warnings(request, form.study_data())
    if request.method == "POST" and form.is_valid() and not warnings:
        try:
            study = study_service.create_study(request.user, form.study_data())
        except study_service.StudyInvalid as exc:
            add_api_errors(form, exc.fields)
        else:
            messages.success(request, f"Study {study.name} created. Start it when you are ready.")
            return redirect("study-detail", uid=study.uid)
    context = {
        "form": form,
        "kind": kind,
        "kind_name": name,
        "label": TASK_KINDS.meta(name).get("label"),
        "warnings": warnings,
    }
    return render(request, "annotate/studies/form.html", context)


#: The field a study form posts when the researcher saves the settings with the warnings shown.
ACCEPT_WARNINGS = "accept_warnings"


def unaccepted_warnings(request, data: dict) -> list[str]:
    """The plan's warnings on a study form's settings (:func:`annotate.studies.plan.settings_warnings`),
    unless the researcher chose to save with them (:data:`ACCEPT_WARNINGS`)."""
    if request.POST.get(ACCEPT_WARNINGS) == "yes":
        return []
    return settings_warnings(request.user, data)


def invite_rows(request, study: Study) -> list[dict]:
    """The study's stored invites, newest first, with their link and state."""
    used = used_invites(study)
    return [
        {
            "pk": invite.pk,
            "invitee": invite.invitee,
            "link": request.build_absolute_uri(invite_path(study, invite.token)),
            "state": invite_state(invite, used),
            "created": invite.created,
            "revoked_at": invite.revoked_at,
        }
        for invite in Invite.objects.filter(study=study).select_related("study").order_by("-id")
    ]


def access_of(request, study: Study) -> dict:
    """How annotators reach the study: the open link (open enrollment), invites, or the platform."""
    provider = get_provider(study.provider)
    try:
        open_link = provider.open_enrollment(study)
    except ProviderConfigError:
        open_link = False
    return {
        "open": open_link,
        "invites": provider.invites and not open_link,
        "platform": provider.platform,
        "provider_title": provider.title or provider.name,
    }


def answer_labels(public_config: dict) -> list[str]:
    """The answers a worker picks from, in words (a rating scale's levels by their text, never a repr)."""
    return [
        f"{label.get('value')} {label.get('text')}".strip() if isinstance(label, dict) else str(label)
        for label in public_config.get("labels") or []
    ]


@researcher_required
def study_detail(request, uid, links: list[str] | None = None, invite_form: InviteForm | None = None):
    study = owned_or_404(Study.objects.select_related("dataset", "owner"), request.user, uid=uid)
    kind = get_kind(study.kind)
    access = access_of(request, study)
    context = {
        "study": study,
        "kind": kind,
        "public_config": kind.public_config(study),
        "answer_labels": answer_labels(kind.public_config(study)),
        "progress": study_progress(study),
        "redundancy": redundancy_summary(study),
        "plan": study_plan(study),
        "entry_url": request.build_absolute_uri(reverse("work-entry", args=[study.uid])),
        "access": access,
        "invite_form": invite_form or InviteForm(),
        "invites": invite_rows(request, study) if get_provider(study.provider).invites else [],
        "links": links or [],
        "exports": [
            export
            | {
                "links": [
                    (fmt, reverse("study-export", args=[study.uid, export["name"], fmt]))
                    for fmt in exports.FORMATS
                ]
            }
            for export in exports.offered(study)
        ],
        "rationale_links": [
            (fmt, reverse("study-rationales", args=[study.uid, fmt])) for fmt in RATIONALE_FORMATS
        ]
        if offers_rationales(study)
        else [],
        "imported_from": (study.provider_config or {}).get("imported_from") if study.dataset_id else None,
    }
    return render(request, "annotate/studies/detail.html", context)


@researcher_required
@require_POST
def study_action(request, uid, action: str):
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    if action == "finish" and request.POST.get("confirmed") != "1":
        return redirect("study-finish", uid=study.uid)  # finishing cannot be undone: say what it does first
    try:
        created = lifecycle.apply(study, action)
    except lifecycle.StudyStateError as exc:
        messages.error(request, str(exc))
    except ValidationError as exc:
        messages.error(request, "; ".join(m for ms in flatten_errors(exc.detail).values() for m in ms))
    else:
        note = f" ({created} items created)" if created else ""
        messages.success(request, f"Study {study.get_status_display().lower()}{note}.")
    return redirect("study-detail", uid=study.uid)


@researcher_required
@require_POST
def study_invites(request, uid):
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    form = InviteForm(request.POST)
    if not get_provider(study.provider).invites:
        messages.error(request, "This study's annotators come through its platform, not invite links.")
        return redirect("study-detail", uid=study.uid)
    if not form.is_valid():
        return study_detail(request, uid=uid, invite_form=form)
    count = form.cleaned_data["count"]
    for _ in range(count):
        make_invite(study, created_by=request.user)
    messages.success(request, f"{count} invite link{'s' if count != 1 else ''} created: see the list below.")
    return redirect(reverse("study-detail", args=[study.uid]) + "#invites")


@researcher_required
def study_invites_csv(request, uid):
    """Every stored invite of the study: link, state, dates."""
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    rows = (
        (
            row["invitee"],
            row["link"],
            row["state"],
            row["created"].isoformat(),
            row["revoked_at"].isoformat() if row["revoked_at"] else "",
        )
        for row in invite_rows(request, study)
    )
    text = csv_text(["invitee", "link", "state", "created", "revoked"], rows, lineterminator="\r\n")
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="invites-{study.uid}.csv"'
    return response


@researcher_required
@require_POST
def study_invite_revoke(request, uid, pk: int):
    """Revoke one invite: the entry page refuses it from now on (answers already given stay)."""
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    invite = get_object_or_404(Invite, pk=pk, study=study)
    if revoke_invite(invite):
        messages.success(request, f"Invite {invite.invitee} revoked: its link no longer opens the study.")
    else:
        messages.info(request, f"Invite {invite.invitee} was already revoked.")
    return redirect(reverse("study-detail", args=[study.uid]) + "#invites")
