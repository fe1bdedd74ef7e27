"""Running a study on a crowd platform, for its researcher: the cost before publishing (the platform's
fees included, against the account balance), publish, pause / resume, top up, expire / extend,
reconcile now, message workers, and what has been spent. One page (``/studies/<uid>/crowd/``) and the
same as a JSON API (``/api/crowd/studies/<uid>/``). Credentials come only from the environment.

Every action answers bad input with a 400 naming the field; a platform failure is a 502 naming the
provider; a publish or top-up carries a one-time key (the form's nonce), so a double click or a retried
request publishes once.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib import messages
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect, render
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import lifecycle
from annotate.api.permissions import IsResearcher
from annotate.models import Job, PlatformSubmission, Publication, Study, Worker
from annotate.providers import get_provider
from annotate.providers.base import ProviderUnsupported
from annotate.providers.base.retry import ProviderConfigError, platform_errors
from annotate.providers.reconcile import spend, unsubmitted_workers
from annotate.quality.gold_mixing import prepare_gold_items
from annotate.views.access import owned_or_404, researcher_required

ACTIONS = ("publish", "pause", "resume", "top-up", "expire", "extend", "reconcile", "notify")


class ActionError(Exception):
    """An action refused: ``status`` (400, 409, 502) and ``{field: [message]}``."""

    def __init__(self, status_code: int, field: str, message: str):
        super().__init__(message)
        self.status_code, self.errors = status_code, {field: [message]}


def new_key() -> str:
    """A one-time key for a publish or top-up form (at most 20 characters, as the providers require)."""
    return secrets.token_hex(8)


def _int(data: dict, name: str, low: int, high: int) -> int:
    raw = data.get(name)
    try:
        value = int(str(raw).strip())
    except (TypeError, ValueError):
        raise ActionError(400, name, "must be a whole number") from None
    if not low <= value <= high:
        raise ActionError(400, name, f"must be between {low} and {high}")
    return value


def _text(data: dict, name: str, max_len: int) -> str:
    value = str(data.get(name) or "").strip()
    if not value:
        raise ActionError(400, name, "is required")
    if len(value) > max_len:
        raise ActionError(400, name, f"must be at most {max_len} characters")
    return value


def crowd_state(study: Study, *, estimate: bool = False) -> dict[str, Any]:
    """The study's platform state: publications, submissions by state, spend, the last reconciliation
    and, when asked, the cost estimate with the balance (a platform call)."""
    provider = get_provider(study.provider)
    states = dict.fromkeys(PlatformSubmission.State.values, 0)
    for row in PlatformSubmission.objects.filter(study=study).values_list("state", flat=True):
        states[row] += 1
    from annotate.jobs.crowd import reconcile_key  # the jobs package imports the machine side: slow

    job = Job.objects.filter(key=reconcile_key(study)).first()
    state: dict[str, Any] = {
        "study": str(study.uid),
        "status": study.status,
        "provider": provider.name,
        "platform": provider.platform,
        "publications": [
            {
                "id": p.pk,
                "external_id": p.external_id,
                "status": p.status,
                "places": p.places,
                "reward": str(p.reward),
                "currency": p.currency,
                "expires_at": p.expires_at.isoformat() if p.expires_at else None,
            }
            for p in Publication.objects.filter(study=study).order_by("id")
        ],
        "submissions": states,
        "unsubmitted_workers": len(unsubmitted_workers(study)),
        "spend": spend(study),
        "reconciled": None
        if job is None
        else {"status": job.status, "result": job.result, "at": job.updated},
    }
    if estimate and provider.platform:
        try:
            state["estimate"] = provider.estimate_cost(study).as_dict()
        except ProviderConfigError as exc:
            state["estimate_error"] = {exc.field: [exc.message]}
        except platform_errors() as exc:
            state["estimate_error"] = {"provider": [str(exc)]}
    return state


def perform(study: Study, action: str, data: dict) -> dict[str, Any]:
    """Run one action on the study's platform; raises :class:`ActionError`."""
    provider = get_provider(study.provider)
    if action not in ACTIONS:
        raise ActionError(400, "action", f"must be one of {', '.join(ACTIONS)}")
    if action != "reconcile" and not provider.platform:
        raise ActionError(
            400, "provider", f"the {provider.name} provider has no crowd platform to {action} on"
        )
    try:
        return _perform(study, provider, action, data)
    except ProviderConfigError as exc:
        raise ActionError(400, exc.field, exc.message) from None
    except ProviderUnsupported as exc:
        raise ActionError(400, "action", str(exc)) from None
    except lifecycle.StudyStateError as exc:
        raise ActionError(409, "study", str(exc)) from None
    except platform_errors() as exc:
        raise ActionError(502, "provider", f"{provider.title or provider.name}: {exc}") from None


def _perform(study: Study, provider, action: str, data: dict) -> dict[str, Any]:
    if action == "publish":
        key = _text(data, "key", 20)
        if study.status == Study.Status.FINISHED:
            raise ActionError(409, "study", "the study is finished; nothing more can be published")
        provider.validate_config(study.provider_config)
        if study.status in (Study.Status.DRAFT, Study.Status.PAUSED):
            lifecycle.apply(study, "start")
        prepare_gold_items(study)
        publications = provider.publish(study, key)
        return {"published": [p.external_id for p in publications]}
    if action == "pause":
        provider.pause(study)
        if study.status == Study.Status.RUNNING:
            lifecycle.apply(study, "pause")
        return {"status": study.status}
    if action == "resume":
        if study.status == Study.Status.PAUSED:
            lifecycle.apply(study, "start")
        provider.resume(study)
        return {"status": study.status}
    if action == "top-up":
        places = _int(data, "places", 1, 100000)
        provider.top_up(study, places, _text(data, "key", 20))
        return {"places": places}
    if action == "expire":
        provider.expire(study)
        return {"expired": True}
    if action == "extend":
        seconds = _int(data, "seconds", 60, 31536000)
        provider.extend(study, seconds)
        return {"extended_by_s": seconds}
    if action == "reconcile":
        from annotate.jobs.crowd import enqueue_reconcile

        return {"queued": enqueue_reconcile(study)}
    subject, message = _text(data, "subject", 200), _text(data, "message", 4000)
    workers = Worker.objects.filter(responses__study=study, provider=provider.name).distinct()
    failed = provider.notify(study, list(workers), subject, message)
    return {"notified": workers.count() - len(failed), "failed": failed}


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


class CrowdStudyAPI(APIView):
    """A study's platform state (``?estimate=1`` adds the cost estimate and the balance)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(responses={200: dict}, description="Publications, submissions by state, spend.")
    def get(self, request, uid):
        study = _study(request, uid)
        return Response(crowd_state(study, estimate=request.query_params.get("estimate") == "1"))


class CrowdActionAPI(APIView):
    """``POST /api/crowd/studies/<uid>/<action>/`` with the action's fields as JSON: ``publish``
    (``key``), ``pause``, ``resume``, ``top-up`` (``places``, ``key``), ``expire``, ``extend``
    (``seconds``), ``reconcile``, ``notify`` (``subject``, ``message``)."""

    permission_classes = [IsAuthenticated, IsResearcher]

    @extend_schema(request=dict, responses={200: dict, 400: dict, 409: dict, 502: dict})
    def post(self, request, uid, action: str):
        study = _study(request, uid)
        data = request.data if isinstance(request.data, dict) else {}
        try:
            result = perform(study, action, data)
        except ActionError as exc:
            return Response({"errors": exc.errors}, status=exc.status_code)
        return Response({"action": action, **result, "state": crowd_state(study)}, status=status.HTTP_200_OK)
