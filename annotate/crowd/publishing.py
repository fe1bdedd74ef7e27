"""Running a study on a crowd platform, for its researcher: the cost before publishing (computed here
from the settings and the platform's fee rule; the account balance when the platform can be asked),
publish, pause / resume, top up, expire / extend, approve or reject in bulk, bonus, reconcile now,
message workers, and what has been spent. What the page
(:mod:`annotate.views.publish`) and the JSON API (:mod:`annotate.api.crowd`) share: the study's platform
state and the actions. Credentials come only from the environment.

Every action answers bad input with a 400 naming the field; a platform failure is a 502 naming the
provider; a publish or top-up carries a one-time key (the form's nonce), so a double click or a retried
request publishes once.
"""

from __future__ import annotations

import secrets
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotate.crowd.jobs import enqueue_reconcile, reconcile_key
from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base import (
    ACTIVE,
    APPROVED,
    REJECTED,
    SUBMITTED,
    Precondition,
    ProviderUnsupported,
)
from annotate.crowd.providers.base.retry import ProviderConfigError, platform_errors
from annotate.crowd.providers.base.settings import cents
from annotate.crowd.providers.reconcile import review_submission, send_bonus, spend, unsubmitted_workers
from annotate.crowd.unconfirmed import unconfirmed_workers
from annotate.models import EntryBinding, Job, PlatformSubmission, Publication, Study, Worker
from annotate.quality.gold_mixing import prepare_gold_items
from annotate.quality.redundancy import cost_range
from annotate.studies import lifecycle

ACTIONS = (
    "publish",
    "pause",
    "resume",
    "top-up",
    "expire",
    "extend",
    "approve",
    "reject",
    "bonus",
    "reconcile",
    "notify",
)


class ActionError(Exception):
    """An action refused: ``status`` (400, 409, 502) and ``{field: [message]}``; ``sentence``: the message
    says it all, field included (pages show it as it is)."""

    def __init__(self, status_code: int, field: str, message: str, *, sentence: bool = False):
        super().__init__(message)
        self.status_code, self.errors, self.sentence = status_code, {field: [message]}, sentence


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
    """The study's platform state: publications with their counts, submissions by state, the workers the
    platform never confirmed, spend, the last reconciliation and the cost estimate (computed here), with
    the account balance when ``estimate`` asks for it (a platform call)."""
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
        "publications": publication_rows(study),
        "submissions": states,
        "unsubmitted_workers": len(unsubmitted_workers(study)),
        "unconfirmed": unconfirmed_workers(study),
        "spend": spend(study),
        "reconciled": None
        if job is None
        else {"status": job.status, "result": job.result, "at": job.updated},
    }
    if provider.platform:
        state.update(estimate_state(study, provider, ask_balance=estimate))
        state["preconditions"] = precondition_rows(study, provider, state)
    return state


def precondition_rows(study: Study, provider, state: dict[str, Any]) -> list[dict[str, Any]]:
    """What publishing needs, each with ``ok`` (``None``: not known) and what to do: the provider's checks
    (:meth:`~annotate.crowd.providers.base.CrowdProvider.publish_preconditions`) and the balance, when the
    platform was asked for it."""
    checks = list(provider.publish_preconditions(study))
    cost = state.get("estimate") or {}
    if cost.get("affordable") is not None:
        enough = bool(cost["affordable"])
        checks.append(
            Precondition(
                "Balance",
                enough,
                ""
                if enough
                else f"The account holds {cost['balance']} {cost['currency']} and publishing costs "
                f"{cost['total']} {cost['currency']}: add funds on the platform, or publish fewer places.",
            )
        )
    elif state.get("balance_error"):
        checks.append(Precondition("Balance", None, state["balance_error"]))
    else:
        checks.append(
            Precondition(
                "Balance",
                None,
                "Not asked yet: “Check the balance” at the top of the page asks the platform.",
            )
        )
    return [{"name": c.name, "ok": c.ok, "sentence": c.sentence, "field": c.field} for c in checks]


def estimate_state(study: Study, provider, *, ask_balance: bool) -> dict[str, Any]:
    """``estimate`` computed here from the settings and the fee rule (``estimate_error`` names the
    setting that keeps it from being computed); with ``ask_balance``, the account balance too, when the
    platform can be asked (``balance_error``: why not, a sentence naming the setting to fix)."""
    try:
        estimate = provider.local_estimate(study)
    except ProviderConfigError as exc:
        return {"estimate_error": {exc.field: [exc.message]}}
    state: dict[str, Any] = {"estimate": estimate.as_dict()}
    per_answer = float(estimate.total) / estimate.places if estimate.places else 0.0
    adaptive = cost_range(study, per_answer)  # an adaptive study: min .. max, the expected cost, the saving
    if adaptive is not None:
        state["adaptive_cost"] = adaptive | {"currency": estimate.currency}
    if not ask_balance:
        return state
    try:
        state["estimate"] = provider.estimate_cost(study).as_dict()
    except platform_errors() as exc:
        state["balance_error"] = explain(provider, exc)
    return state


def explain(provider, exc: BaseException) -> str:
    """The provider's sentence for a credentials problem, else the platform's error in its name."""
    sentence = provider.explain_error(exc)
    if sentence:
        return sentence
    if isinstance(exc, ProviderConfigError):
        return f"{exc.field} {exc.message}"
    return f"{provider.title or provider.name} answered with an error: {exc}"


def publication_rows(study: Study) -> list[dict[str, Any]]:
    """Each publication with the platform's ids and its counts as hatlab last saw them: ``available``
    (places nobody holds), ``in_progress`` (started, not yet submitted), ``submitted`` (waiting for a
    decision), ``approved`` and ``rejected``."""
    rows = []
    for p in Publication.objects.filter(study=study).order_by("id"):
        subs = PlatformSubmission.objects.filter(publication=p)
        counts = {
            "submitted": subs.filter(platform_status=SUBMITTED, decision="").count(),
            "approved": subs.filter(Q(platform_status=APPROVED) | Q(decision="approve")).count(),
            "rejected": subs.filter(Q(platform_status=REJECTED) | Q(decision="reject")).count(),
        }
        known = set(subs.values_list("external_id", flat=True))
        started = (
            EntryBinding.objects.filter(study=study, provider=p.provider, scope=p.external_id)
            .exclude(ref__in=known)
            .count()
            if p.external_id
            else 0
        )
        counts["in_progress"] = started + subs.filter(platform_status=ACTIVE).count()
        taken = counts["in_progress"] + counts["submitted"] + counts["approved"] + counts["rejected"]
        counts["available"] = max(0, p.places - taken) if p.status == Publication.Status.OPEN else 0
        rows.append(
            {
                "id": p.pk,
                "external_id": p.external_id,
                "group_id": p.group_id,
                "completion_code": p.details.get("completion_code", ""),
                "status": p.status,
                "places": p.places,
                "reward": str(p.reward),
                "currency": p.currency,
                "expires_at": p.expires_at.isoformat() if p.expires_at else None,
                "expires": timezone.localtime(p.expires_at).strftime("%Y-%m-%d %H:%M %Z")
                if p.expires_at
                else "",
                **counts,
            }
        )
    return rows


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
    except ProviderUnsupported as exc:
        raise ActionError(400, "action", str(exc)) from None
    except lifecycle.StudyStateError as exc:
        raise ActionError(409, "study", str(exc)) from None
    except platform_errors() as exc:
        sentence = provider.explain_error(exc)
        if sentence:
            raise ActionError(
                400 if isinstance(exc, ProviderConfigError) else 502, "credentials", sentence
            ) from None
        if isinstance(exc, ProviderConfigError):
            raise ActionError(400, exc.field, exc.message) from None
        raise ActionError(502, "provider", f"{provider.title or provider.name}: {exc}") from None


def _perform(study: Study, provider, action: str, data: dict) -> dict[str, Any]:
    if action == "publish":
        return publish(study, provider, _text(data, "key", 20))
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
    if action in ("approve", "reject"):
        return review(study, action, data)
    if action == "bonus":
        return bonus(study, data)
    if action == "reconcile":
        return {"queued": enqueue_reconcile(study)}
    subject, message = _text(data, "subject", 200), _text(data, "message", 4000)
    workers = Worker.objects.filter(responses__study=study, provider=provider.name).distinct()
    failed = provider.notify(study, list(workers), subject, message)
    return {"notified": workers.count() - len(failed), "failed": failed}


def unmet_preconditions(study: Study, provider) -> list[Precondition]:
    """The publishing preconditions the study does not meet (see :meth:`publish_preconditions`)."""
    return [check for check in provider.publish_preconditions(study) if check.ok is False]


def publish(study: Study, provider, key: str) -> dict[str, Any]:
    """Publish the study, all or nothing: the preconditions are checked before anything changes, and a
    publication the platform refuses leaves the study as it was (a draft stays a draft, with its Edit and
    Delete). Only when part of the batch already reached the platform is that part kept (with the study
    started), so that what was made there is never forgotten here; the error is raised all the same."""
    if study.status == Study.Status.FINISHED:
        raise ActionError(409, "study", "the study is finished; nothing more can be published")
    unmet = unmet_preconditions(study, provider)
    if unmet:
        raise ActionError(400, unmet[0].field, " ".join(c.sentence for c in unmet), sentence=True)
    before, failure = study.status, None
    try:
        with transaction.atomic():
            if study.status in (Study.Status.DRAFT, Study.Status.PAUSED):
                lifecycle.apply(study, "start")
            prepare_gold_items(study)
            try:
                publications = provider.publish(study, key)
            except Exception as exc:
                if not _batch_on_platform(study, key):
                    raise
                failure = exc
    except Exception:
        study.status = before
        raise
    if failure is not None:
        raise failure
    return {"published": [p.external_id for p in publications]}


def _batch_on_platform(study: Study, key: str) -> bool:
    """Whether a publication of the batch ``key`` already has the platform's id."""
    return Publication.objects.filter(study=study, details__batch=key).exclude(external_id="").exists()


def reviewable(study: Study):
    """The study's submissions the platform holds as submitted and nobody has decided yet."""
    return PlatformSubmission.objects.filter(study=study, platform_status=SUBMITTED, decision="").order_by(
        "id"
    )


def review(study: Study, decision: str, data: dict) -> dict[str, Any]:
    """Approve or reject the chosen undecided submissions (``submissions``: their ids; all of them when
    absent), each once (:func:`~annotate.crowd.providers.reconcile.review_submission`); a rejection needs a
    ``feedback`` the workers read."""
    feedback = str(data.get("feedback") or "").strip()
    if decision == "reject" and not feedback:
        raise ActionError(400, "feedback", "is required: workers are told why their work was rejected")
    if len(feedback) > 1024:
        raise ActionError(400, "feedback", "must be at most 1024 characters")
    rows = reviewable(study)
    chosen = data.get("submissions")
    if chosen not in (None, "", []):
        ids = chosen if isinstance(chosen, list) else [chosen]
        try:
            wanted = {int(str(i)) for i in ids}
        except ValueError:
            raise ActionError(400, "submissions", "must be submission ids") from None
        rows = rows.filter(pk__in=wanted)
    done = sum(review_submission(row, decision, feedback) for row in rows)
    return {"decided": done}


def bonus(study: Study, data: dict) -> dict[str, Any]:
    """Pay one worker of the study a bonus, once per form key."""
    try:
        worker_id = int(str(data.get("worker", "")).strip())
    except ValueError:
        raise ActionError(400, "worker", "choose a worker of this study") from None
    worker = Worker.objects.filter(pk=worker_id, responses__study=study).distinct().first()
    if worker is None:
        raise ActionError(400, "worker", "choose a worker of this study")
    try:
        paid = Decimal(str(data.get("amount", "")).strip())
    except InvalidOperation:
        raise ActionError(400, "amount", "must be an amount such as 0.50") from None
    if not paid.is_finite() or paid <= 0 or paid > 100:
        raise ActionError(400, "amount", "must be more than 0 and at most 100")
    reason = _text(data, "reason", 1000)
    key = _text(data, "key", 40)
    payment = send_bonus(study, worker, cents(paid), reason, f"bonus-{study.pk}-{key}")
    return {"bonus": str(payment.amount), "worker": worker.pseudonym_for(study.owner_id)}
