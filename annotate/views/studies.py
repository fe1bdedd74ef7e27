"""Researcher pages: study list, the create form, a study's progress page, its actions and exports."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from rest_framework.exceptions import ValidationError

from annotate import exports, lifecycle
from annotate.access import owned_or_404, researcher_required, visible_to
from annotate.api.serializers import StudySerializer
from annotate.api.work import flatten_errors
from annotate.forms import InviteForm
from annotate.models import Study
from annotate.providers.local.adapter import invite_path, make_invite
from annotate.study_progress import study_progress
from annotate.tasks import default_kind, get_kind

ACTIONS = ("start", "pause", "finish")


@researcher_required
def study_list(request):
    studies = visible_to(Study.objects.select_related("dataset", "owner"), request.user).order_by("-created")
    return render(request, "annotate/studies/list.html", {"studies": studies})


class _Request:
    """The page's request as the API serializer's context (it reads ``user`` only)."""

    def __init__(self, user):
        self.user = user


@researcher_required
def study_create(request):
    initial = {"dataset": request.GET.get("dataset")} if request.GET.get("dataset", "").isdigit() else {}
    form = get_kind(default_kind()).create_form(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        serializer = StudySerializer(data=form.study_data(), context={"request": _Request(request.user)})
        if serializer.is_valid():
            study = serializer.save()
            messages.success(request, f"Study {study.name} created. Start it when you are ready.")
            return redirect("study-detail", uid=study.uid)
        for field, problems in flatten_errors(serializer.errors).items():
            target = field.split(".")[-1]
            form.add_error(target if target in form.fields else None, "; ".join(problems))
    return render(request, "annotate/studies/form.html", {"form": form})


@researcher_required
def study_detail(request, uid, links: list[str] | None = None, invite_form: InviteForm | None = None):
    study = owned_or_404(Study.objects.select_related("dataset", "owner"), request.user, uid=uid)
    kind = get_kind(study.kind)
    context = {
        "study": study,
        "kind": kind,
        "public_config": kind.public_config(study),
        "progress": study_progress(study),
        "entry_url": request.build_absolute_uri(reverse("work-entry", args=[study.uid])),
        "invite_form": invite_form or InviteForm(),
        "links": links or [],
        "exports": [
            (what, fmt, reverse("study-export", args=[study.uid, what, fmt]))
            for what in exports.WHAT
            for fmt in exports.FORMATS
        ],
    }
    return render(request, "annotate/studies/detail.html", context)


@researcher_required
@require_POST
def study_action(request, uid, action: str):
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
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
    if study.provider != "local":
        messages.error(request, "Invite links are for studies of the local provider.")
        return redirect("study-detail", uid=study.uid)
    if not form.is_valid():
        return study_detail(request, uid=uid, invite_form=form)
    links = [
        request.build_absolute_uri(invite_path(study, make_invite(study)))
        for _ in range(form.cleaned_data["count"])
    ]
    return study_detail(request, uid=uid, links=links, invite_form=form)


@researcher_required
def study_export(request, uid, what: str, fmt: str):
    """One export; ``?include_unverified=1`` adds the answers not (yet) verified, marked as such."""
    study = owned_or_404(Study.objects.all(), request.user, uid=uid)
    try:
        unverified = exports.include_unverified(request.GET.get(exports.INCLUDE_UNVERIFIED))
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(
        exports.stream(study, what, fmt, unverified), content_type=exports.content_type(fmt)
    )
    response["Content-Disposition"] = (
        f'attachment; filename="{exports.filename(study, what, fmt, unverified)}"'
    )
    return response
