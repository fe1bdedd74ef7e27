"""The crowd page's actions as the researcher takes them: each said in words before it is confirmed,
run once per form key, and written to the study's audit log (:class:`~annotate.models.CrowdAction`).

A form carries a one-time key. The first request with it records the action as running, runs it
(:func:`annotate.crowd.publishing.perform`) and records the outcome; the same form sent again (a double
click, a reload, a retried request) finds the row and does nothing more, unless the first attempt was
refused or failed, when it may be tried again.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.crowd.publishing import ActionError, perform, reviewable
from annotate.models import CrowdAction, Study

# Form fields that are not the action's own parameters (and never go to the log).
NOT_LOGGED = frozenset({"csrfmiddlewaretoken", "confirmed", "live", "key"})


def describe(study: Study, action: str, data: dict) -> list[str]:
    """What ``action`` will do, in sentences, for the confirmation step."""
    provider = get_provider(study.provider)
    where = provider.target()[0] or provider.title or provider.name
    if action == "publish":
        lines = [f"Publish the study on {where}."]
        try:
            estimate = provider.local_estimate(study)
        except ProviderConfigError:  # the publish itself reports the bad setting, naming it
            return lines
        lines.append(
            f"{estimate.places} places at {estimate.reward} {estimate.currency} each: "
            f"{estimate.rewards} in rewards and {estimate.fees} in platform fees, "
            f"{estimate.total} {estimate.currency} in all."
        )
        return lines
    if action == "top-up":
        return [f"Open {data.get('places', '?')} more places in the open publications on {where}."]
    if action == "extend":
        return [f"Keep the open publications listed {data.get('seconds', '?')} seconds longer."]
    if action == "expire":
        return [
            "Close every open or paused publication now: no one new can start; "
            "those already working can still submit."
        ]
    if action == "pause":
        return ["Stop new workers from starting (paused publications can be resumed)."]
    if action == "resume":
        return ["Let new workers start again on the paused publications."]
    if action in ("approve", "reject"):
        rows = reviewable(study)
        chosen = data.get("submissions")
        if chosen:
            rows = rows.filter(
                pk__in=[c for c in (chosen if isinstance(chosen, list) else [chosen]) if c.isdigit()]
            )
        verb = "Approve" if action == "approve" else "Reject"
        lines = [f"{verb} {rows.count()} submitted piece(s) of work that nobody has decided yet."]
        if data.get("feedback"):
            lines.append(f"Workers are told: “{data['feedback']}”")
        if action == "approve":
            lines.append("Approving pays each worker the reward, plus the platform's fee.")
        return lines
    if action == "bonus":
        return [f"Pay a bonus of {data.get('amount', '?')} to worker {data.get('worker_label') or data.get('worker', '?')}, "
                f"with the reason: “{data.get('reason', '')}”"]  # fmt: skip
    if action == "notify":
        return [f"Send the message “{data.get('subject', '')}” to every worker of the study."]
    return ["Ask the platform for its submissions now and match them with the answers stored here."]


def params_of(data: dict) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in NOT_LOGGED}


def run_logged(study: Study, action: str, data: dict, user=None) -> tuple[CrowdAction, bool]:
    """Run ``action`` once per ``data["key"]`` and log it; returns the log row and whether this call
    ran it (``False``: the same key had already run or is running). A refused or failed action is
    logged with its reason and :class:`ActionError` raised again."""
    key = str(data.get("key") or "").strip()
    if not key or len(key) > 64:
        raise ActionError(400, "key", "the form has no one-time key; reload the page and try again")
    try:
        with transaction.atomic():
            entry = CrowdAction.objects.create(
                study=study, user=user, action=action, key=key, params=params_of(data)
            )
    except IntegrityError:
        entry = CrowdAction.objects.get(study=study, key=key)
        if entry.action != action:
            raise ActionError(400, "key", "this form's key was already used for another action") from None
        retry = entry.outcome in (CrowdAction.Outcome.REFUSED, CrowdAction.Outcome.FAILED)
        if not retry:
            return entry, False
        updated = CrowdAction.objects.filter(pk=entry.pk, outcome=entry.outcome).update(
            outcome=CrowdAction.Outcome.RUNNING, user=user, params=params_of(data), finished=None
        )
        if not updated:  # another request took the retry
            entry.refresh_from_db()
            return entry, False
        entry.refresh_from_db()
    try:
        result = perform(study, action, data)
    except ActionError as exc:
        entry.outcome = CrowdAction.Outcome.FAILED if exc.status_code >= 500 else CrowdAction.Outcome.REFUSED
        entry.message = "; ".join(f"{f}: {' '.join(m)}" for f, m in exc.errors.items())
        entry.finished = timezone.now()
        entry.save(update_fields=["outcome", "message", "finished"])
        raise
    entry.outcome = CrowdAction.Outcome.DONE
    entry.result = {
        k: v if isinstance(v, str | int | float | bool | list | None) else str(v) for k, v in result.items()
    }
    entry.message = ""
    entry.finished = timezone.now()
    entry.save(update_fields=["outcome", "result", "message", "finished"])
    return entry, True


def audit_log(study: Study, limit: int = 100) -> list[CrowdAction]:
    return list(CrowdAction.objects.filter(study=study).select_related("user")[:limit])
