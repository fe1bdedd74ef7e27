"""Running a study on a crowd platform, for its researcher: the cost before publishing (the platform's
fees included, against the account balance), publish, pause / resume, top up, expire / extend,
reconcile now, message workers, and what has been spent. What the page
(:mod:`annotate.views.publish`) and the JSON API (:mod:`annotate.api.crowd`) share: the study's platform
state and the actions. Credentials come only from the environment.

Every action answers bad input with a 400 naming the field; a platform failure is a 502 naming the
provider; a publish or top-up carries a one-time key (the form's nonce), so a double click or a retried
request publishes once.
"""

from __future__ import annotations

import secrets
from typing import Any

from annotate import lifecycle
from annotate.jobs.crowd import enqueue_reconcile, reconcile_key
from annotate.models import Job, PlatformSubmission, Publication, Study, Worker
from annotate.providers import get_provider
from annotate.providers.base import ProviderUnsupported
from annotate.providers.base.retry import ProviderConfigError, platform_errors
from annotate.providers.reconcile import spend, unsubmitted_workers
from annotate.quality.gold_mixing import prepare_gold_items
from annotate.unconfirmed import unconfirmed_workers

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
    """The study's platform state: publications, submissions by state, the workers the platform never
    confirmed, spend, the last reconciliation and, when asked, the cost estimate with the balance (a platform call)."""
    provider = get_provider(study.provider)
    states = dict.fromkeys(PlatformSubmission.State.values, 0)
    for row in PlatformSubmission.objects.filter(study=study).values_list("state", flat=True):
        states[row] += 1
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
        "unconfirmed": unconfirmed_workers(study),
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
        return {"queued": enqueue_reconcile(study)}
    subject, message = _text(data, "subject", 200), _text(data, "message", 4000)
    workers = Worker.objects.filter(responses__study=study, provider=provider.name).distinct()
    failed = provider.notify(study, list(workers), subject, message)
    return {"notified": workers.count() - len(failed), "failed": failed}
