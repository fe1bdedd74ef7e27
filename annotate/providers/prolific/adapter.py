"""Prolific through its public REST API (v1), on ``requests``.

Base URL ``settings.PROLIFIC_API_URL`` (default ``https://api.prolific.com/api/v1/``); every request
carries ``Authorization: Token <PROLIFIC_API_TOKEN>`` (the token only from the environment). Money is
sent in the workspace currency's minor unit (pence / cents), except in a bonus CSV, which takes major
units. Endpoints used:

=======  ==========================================  ==================================================
GET      ``workspaces/``                             the workspaces the token may use (the first is ours
                                                     unless ``workspace_id`` is configured)
GET      ``workspaces/{id}/balance/``                ``available_balance`` and ``currency_code``
GET      ``studies/``                                before each attempt to create one, find a study
                                                     we created before a lost reply (by internal name)
POST     ``studies/``                                create a draft study (``external_study_url`` with
                                                     ``PROLIFIC_PID`` / ``STUDY_ID`` / ``SESSION_ID``,
                                                     ``completion_codes``, reward, places, times, filters)
GET      ``studies/{id}/``                           a study
PATCH    ``studies/{id}/``                           raise ``total_available_places`` (top up)
POST     ``studies/{id}/transition/``                ``{"action": "PUBLISH" | "PAUSE" | "START" | "STOP"}``
GET      ``studies/{id}/submissions/``               the study's submissions, page by ``_links.next``
GET      ``submissions/{id}/``                       one submission (to confirm a repeated review)
POST     ``submissions/{id}/transition/``            ``{"action": "APPROVE"}`` or ``{"action": "REJECT",
                                                     "message", "rejection_category"}`` (idempotent: a
                                                     repeated request is ignored)
POST     ``submissions/bonus-payments/``             set up bonuses: ``{"study_id", "csv_bonuses"}``
                                                     (amounts in major units); answers ``id``,
                                                     ``amount``, ``fees``, ``total_amount`` in minor units
POST     ``bulk-bonus-payments/{id}/pay/``           pay the bonuses set up: NOT idempotent, every
                                                     request pays again, so it is sent once, never
                                                     retried
GET      ``participant-groups/?workspace_id=``       our allow- and block-list groups
POST     ``participant-groups/``                     create one ``{"workspace_id", "name"}``
POST     ``participant-groups/{id}/participants/``   add ``{"participant_ids": [...]}``
DELETE   ``participant-groups/{id}/participants/``   remove ``{"participant_ids": [...]}``
POST     ``messages/``                               ``{"recipient_id", "study_id", "body"}``
=======  ==========================================  ==================================================

Gold trust is mirrored by two participant groups: workers excluded by their trust go on the block-list
group (``participant_group_blocklist`` filter on every study we publish), trusted workers on the
allow-list group, which a study may require (``only_trusted``). Prolific re-opens the place of a
returned or timed-out submission itself; reconciliation releases that participant's open assignments
on our side so their items go back to the pool.

The fee is not published in the API: the estimate uses ``fee_rate`` (default 1/3 of rewards, Prolific's
published platform fee) plus ``vat_rate`` on the fee, both settable per study.

Checked against Prolific's API reference (docs.prolific.com/api-reference: studies, submissions,
bonuses, participant groups) and the request shapes of Prolific's own command-line client
(github.com/prolific-oss/cli).
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from urllib.parse import urljoin

import requests
from django.conf import settings
from django.urls import reverse
from django.utils.dateparse import parse_datetime

from annotate.providers import register
from annotate.providers.base import (
    ACTIVE,
    APPROVED,
    REJECTED,
    RETURNED,
    SUBMITTED,
    TIMED_OUT,
    Balance,
    CostEstimate,
    CrowdProvider,
    SubmissionRecord,
    completion_study_uid,
)
from annotate.providers.retry import (
    DEFAULT_BACKOFF,
    Backoff,
    ProviderConfigError,
    ProviderError,
    call_with_retry,
)

NAME = "prolific"
COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
URL_PARAMETERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
BLOCKLIST_GROUP = "hatlab blocklist"
ALLOWLIST_GROUP = "hatlab trusted"
ID_PATTERN = re.compile(r"^[A-Za-z0-9]{1,64}$")
KEY_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,20}$")
SESSION_KEY = "hatlab_prolific"
PAY_REQUESTED = "pay-requested:"
MIN_REJECTION_MESSAGE = 100
CENT = Decimal("0.01")
STATUS = {
    "ACTIVE": ACTIVE,
    "RESERVED": ACTIVE,
    "AWAITING REVIEW": SUBMITTED,
    "APPROVED": APPROVED,
    "PARTIALLY APPROVED": APPROVED,
    "REJECTED": REJECTED,
    "RETURNED": RETURNED,
    "SCREENED OUT": RETURNED,
    "TIMED-OUT": TIMED_OUT,
}
REJECTION_CATEGORIES = frozenset(
    {
        "TOO_QUICKLY",
        "TOO_SLOWLY",
        "FAILED_INSTRUCTIONS",
        "INCOMP_LONGITUDINAL",
        "FAILED_CHECK",
        "LOW_EFFORT",
        "MALINGERING",
        "NO_CODE",
        "BAD_CODE",
        "NO_DATA",
        "UNSUPP_DEVICE",
        "OTHER",
    }
)


class ProlificAPIError(ProviderError):
    """An HTTP error answer from Prolific; ``retry_after`` is its Retry-After hint in seconds."""

    def __init__(self, operation: str, status: int, body: Any, retry_after: float = 0.0):
        super().__init__(NAME, operation, f"HTTP {status}: {body}", status=status)
        self.body = body
        self.retry_after = retry_after


class BonusOutcomeUnknown(ProviderError):
    """A request to pay a bonus got no clear answer, so Prolific may have paid it. Paying is not
    idempotent on Prolific: this bonus is never asked for again automatically."""

    def __init__(self, bonus_id: str, cause: object = ""):
        super().__init__(
            NAME,
            "PayBonus",
            f"bulk bonus {bonus_id}: the request to pay it got no clear answer ({cause}), so Prolific may "
            "have paid it; check the workspace's payments on Prolific before paying this bonus again",
        )
        self.bonus_id = bonus_id


def classify_error(exc: BaseException) -> float | None:
    """Transient: 429 (waiting at least Retry-After), 5xx, connection failures and timeouts."""
    if isinstance(exc, requests.ConnectionError | requests.Timeout):
        return 0.0
    if isinstance(exc, ProlificAPIError) and (exc.status == 429 or exc.status >= 500):
        return exc.retry_after
    return None


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0


def minor_units(amount: Decimal) -> int:
    """An amount in pounds / dollars as whole pence / cents."""
    return int((amount * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _money(value: Any, name: str, minimum: Decimal = CENT) -> Decimal:
    try:
        amount = Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)
    except (InvalidOperation, ValueError):
        raise ProviderConfigError(name, f"not an amount: {value!r}") from None
    if amount < minimum:
        raise ProviderConfigError(name, f"must be at least {minimum}")
    return amount


def _int(config: dict, name: str, default: int | None, low: int, high: int) -> int | None:
    value = config.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProviderConfigError(name, f"must be a whole number between {low} and {high}")
    return value


@dataclass(frozen=True)
class ProlificConfig:
    """A study's Prolific settings (``Study.provider_config``), validated."""

    name: str
    description: str
    reward: Decimal
    places: int
    estimated_minutes: int
    max_minutes: int | None = None
    currency: str = "GBP"
    devices: tuple[str, ...] = ("desktop",)
    workspace_id: str = ""
    project_id: str = ""
    only_trusted: bool = False
    fee_rate: Decimal = Decimal("0.3333")
    vat_rate: Decimal = Decimal("0")

    @classmethod
    def from_dict(cls, config: dict) -> ProlificConfig:
        if not isinstance(config, dict):
            raise ProviderConfigError("provider_config", "must be an object")
        for key in ("name", "description"):
            if not isinstance(config.get(key), str) or not config[key].strip():
                raise ProviderConfigError(key, "is required")
        devices = config.get("devices", ["desktop"])
        if (
            not isinstance(devices, list)
            or not devices
            or not set(devices) <= {"desktop", "tablet", "mobile"}
        ):
            raise ProviderConfigError("devices", "must be a non-empty list of desktop / tablet / mobile")
        currency = config.get("currency", "GBP")
        if currency not in {"GBP", "USD"}:
            raise ProviderConfigError("currency", "must be GBP or USD")
        for key in ("workspace_id", "project_id"):
            if not isinstance(config.get(key, ""), str):
                raise ProviderConfigError(key, "must be a string")
        if not isinstance(config.get("only_trusted", False), bool):
            raise ProviderConfigError("only_trusted", "must be true or false")
        places = _int(config, "places", None, 1, 100000)
        if places is None:
            raise ProviderConfigError("places", "is required")
        estimated = _int(config, "estimated_minutes", None, 1, 1440)
        if estimated is None:
            raise ProviderConfigError("estimated_minutes", "is required")
        maximum = _int(config, "max_minutes", None, 2, 10080)
        if maximum is not None and maximum < estimated:
            raise ProviderConfigError("max_minutes", "must not be less than estimated_minutes")
        return cls(
            name=config["name"].strip()[:255],
            description=config["description"].strip(),
            reward=_money(config.get("reward", ""), "reward"),
            places=places,
            estimated_minutes=estimated,
            max_minutes=maximum,
            currency=currency,
            devices=tuple(devices),
            workspace_id=config.get("workspace_id", ""),
            project_id=config.get("project_id", ""),
            only_trusted=config.get("only_trusted", False),
            fee_rate=_rate(config, "fee_rate", "0.3333"),
            vat_rate=_rate(config, "vat_rate", "0"),
        )

    def fee(self, amount: Decimal) -> Decimal:
        fee = amount * self.fee_rate
        return (fee * (1 + self.vat_rate)).quantize(CENT, rounding=ROUND_HALF_UP)


def _rate(config: dict, name: str, default: str) -> Decimal:
    try:
        rate = Decimal(str(config.get(name, default)))
    except (InvalidOperation, ValueError):
        raise ProviderConfigError(name, "must be a number between 0 and 1") from None
    if not Decimal(0) <= rate <= Decimal(1):
        raise ProviderConfigError(name, "must be a number between 0 and 1")
    return rate


class ProlificClient:
    """The Prolific API calls hatlab makes, each through ``call_with_retry``."""

    def __init__(
        self,
        token: str,
        base_url: str,
        *,
        session: requests.Session | None = None,
        timeout: float = 30.0,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not token:
            raise ProviderConfigError("PROLIFIC_API_TOKEN", "is not set in the environment")
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.session = session or requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})
        self.timeout = timeout
        self.backoff = backoff
        self.sleep = sleep

    def request(self, method: str, path: str, operation: str, *, retry: bool = True, **kwargs: Any) -> Any:
        """One API call; with ``retry`` (the default) transient failures are retried with backoff."""
        url = path if path.startswith("http") else urljoin(self.base_url, path)

        def call() -> Any:
            response = self.session.request(method, url, timeout=self.timeout, **kwargs)
            if response.status_code >= 400:
                try:
                    body: Any = response.json()
                except ValueError:
                    body = response.text[:500]
                raise ProlificAPIError(
                    operation, response.status_code, body, _retry_after(response.headers.get("Retry-After"))
                )
            if response.status_code == 204 or not response.content:
                return {}
            return response.json()

        if not retry:
            return call()
        return call_with_retry(NAME, operation, call, classify_error, backoff=self.backoff, sleep=self.sleep)

    def _pages(
        self, path: str, operation: str, params: dict | None = None, *, retry: bool = True
    ) -> Iterator[dict]:
        page: str | None = path
        while page:
            reply = self.request("GET", page, operation, retry=retry, params=params if page == path else None)
            yield from reply.get("results", [])
            page = ((reply.get("_links") or {}).get("next") or {}).get("href")

    # --- workspaces -------------------------------------------------------------------------------------
    def workspace_id(self, configured: str = "") -> str:
        if configured:
            return configured
        for workspace in self._pages("workspaces/", "ListWorkspaces"):
            return workspace["id"]
        raise ProviderConfigError("workspace_id", "the Prolific token has no workspace")

    def balance(self, workspace_id: str) -> tuple[Decimal, str]:
        reply = self.request("GET", f"workspaces/{workspace_id}/balance/", "GetBalance")
        return Decimal(int(reply["available_balance"])) / 100, str(reply.get("currency_code", "GBP"))

    # --- studies ----------------------------------------------------------------------------------------
    def create_study(self, body: dict) -> dict:
        """Create a draft study once: every attempt first looks for a study with the body's
        ``internal_name``, so a retry after a lost reply finds the study instead of making another."""

        def attempt() -> dict:
            for study in self._pages("studies/", "ListStudies", retry=False):
                if study.get("internal_name") == body["internal_name"]:
                    return study
            return self.request("POST", "studies/", "CreateStudy", retry=False, json=body)

        return call_with_retry(
            NAME, "CreateStudy", attempt, classify_error, backoff=self.backoff, sleep=self.sleep
        )

    def get_study(self, study_id: str) -> dict:
        return self.request("GET", f"studies/{study_id}/", "GetStudy")

    def update_study(self, study_id: str, changes: dict) -> dict:
        return self.request("PATCH", f"studies/{study_id}/", "UpdateStudy", json=changes)

    def transition_study(self, study_id: str, action: str) -> dict:
        return self.request(
            "POST", f"studies/{study_id}/transition/", f"Study{action.title()}", json={"action": action}
        )

    def submissions(self, study_id: str) -> Iterator[dict]:
        yield from self._pages(f"studies/{study_id}/submissions/", "ListSubmissions")

    def get_submission(self, submission_id: str) -> dict:
        return self.request("GET", f"submissions/{submission_id}/", "GetSubmission")

    def approve(self, submission_id: str) -> bool:
        """Approve; ``False`` when the submission was approved before. The transition is idempotent
        on Prolific (a repeat is ignored), so a retry after a lost reply is safe."""
        return self._transition(submission_id, "ApproveSubmission", {"action": "APPROVE"}, "APPROVED")

    def reject(self, submission_id: str, message: str, category: str = "FAILED_CHECK") -> bool:
        """Reject with a message of at least 100 characters and a ``rejection_category`` (Prolific's
        rules); ``False`` when the submission was rejected before."""
        if category not in REJECTION_CATEGORIES:
            raise ProviderConfigError("rejection_category", f"must be one of {sorted(REJECTION_CATEGORIES)}")
        body = {"action": "REJECT", "message": rejection_message(message), "rejection_category": category}
        return self._transition(submission_id, "RejectSubmission", body, "REJECTED")

    def _transition(self, submission_id: str, operation: str, body: dict, target: str) -> bool:
        if self.get_submission(submission_id).get("status") == target:
            return False
        self.request("POST", f"submissions/{submission_id}/transition/", operation, json=body)
        return True

    # --- bonuses ----------------------------------------------------------------------------------------
    def set_up_bonus(self, study_id: str, participant_id: str, amount: Decimal) -> dict:
        """Set up (not pay) a bonus; the CSV takes the amount in major units. Retried freely: a set-up
        whose reply was lost is never paid and costs nothing."""
        return self.request(
            "POST",
            "submissions/bonus-payments/",
            "SetUpBonus",
            json={"study_id": study_id, "csv_bonuses": f"{participant_id},{amount:.2f}\n"},
        )

    def pay_bonus(self, bonus_id: str) -> None:
        """Pay bonuses set up before, with one request and no retry: Prolific pays again on every
        request to this endpoint. A refusal (4xx) means nothing was paid; any other failure leaves
        the outcome unknown (see :class:`BonusOutcomeUnknown`)."""
        self.request("POST", f"bulk-bonus-payments/{bonus_id}/pay/", "PayBonus", retry=False)

    # --- participant groups, messages -------------------------------------------------------------------
    def group_id(self, workspace_id: str, name: str) -> str:
        """The id of the workspace's participant group ``name``, created when missing."""
        for group in self._pages(
            "participant-groups/", "ListParticipantGroups", {"workspace_id": workspace_id}
        ):
            if group.get("name") == name:
                return group["id"]
        reply = self.request(
            "POST",
            "participant-groups/",
            "CreateParticipantGroup",
            json={"workspace_id": workspace_id, "name": name},
        )
        return reply["id"]

    def add_to_group(self, group_id: str, participant_ids: list[str]) -> None:
        self.request(
            "POST",
            f"participant-groups/{group_id}/participants/",
            "AddToGroup",
            json={"participant_ids": participant_ids},
        )

    def remove_from_group(self, group_id: str, participant_ids: list[str]) -> None:
        self.request(
            "DELETE",
            f"participant-groups/{group_id}/participants/",
            "RemoveFromGroup",
            json={"participant_ids": participant_ids},
        )

    def message(self, participant_id: str, study_id: str, body: str) -> None:
        self.request(
            "POST",
            "messages/",
            "SendMessage",
            json={"recipient_id": participant_id, "study_id": study_id, "body": body},
        )


def rejection_message(message: str) -> str:
    """``message`` lengthened to Prolific's 100-character minimum with a standard explanation."""
    message = message.strip()
    if len(message) >= MIN_REJECTION_MESSAGE:
        return message
    standard = (
        "This study contained hidden check questions with known answers, and too many of them were "
        "answered incorrectly."
    )
    return f"{message} {standard}".strip()


def study_url(study) -> str:
    """The entry page with Prolific's URL parameters, as ``external_study_url`` wants it."""
    base = settings.HATLAB_PUBLIC_URL.rstrip("/") + reverse("work-entry", args=[study.uid])
    return f"{base}?{URL_PARAMETERS}"


@register
class ProlificProvider(CrowdProvider):
    """Studies published as one Prolific study each (see the module docstring)."""

    name = NAME
    title = "Prolific"
    platform = True
    currency = "GBP"

    def __init__(self) -> None:
        self._client: ProlificClient | None = None

    @property
    def client(self) -> ProlificClient:
        if self._client is None:
            self._client = ProlificClient(settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL)
        return self._client

    def use_client(self, client: ProlificClient | None) -> None:
        """Use ``client`` instead of one built from the settings (``None`` goes back to the settings)."""
        self._client = client

    def validate_config(self, config: Any) -> dict[str, Any]:
        ProlificConfig.from_dict(config)
        return dict(config)

    # --- a worker arrives and leaves ----------------------------------------------------------------
    def identify(self, request, study) -> str | None:
        """``PROLIFIC_PID`` for a ``STUDY_ID`` we published for this study; the ``SESSION_ID`` is kept."""
        from annotate.models import Publication

        pid = request.GET.get("PROLIFIC_PID", "")
        study_id = request.GET.get("STUDY_ID", "")
        session_id = request.GET.get("SESSION_ID", "")
        if not all(ID_PATTERN.match(v) for v in (pid, study_id, session_id)):
            return None
        if not Publication.objects.filter(study=study, provider=self.name, external_id=study_id).exists():
            return None
        contexts = dict(request.session.get(SESSION_KEY, {}))
        contexts[str(study.uid)] = {"session_id": session_id, "study_id": study_id}
        request.session[SESSION_KEY] = contexts
        return pid

    def assignment_ref(self, request, study) -> str:
        return request.session.get(SESSION_KEY, {}).get(str(study.uid), {}).get("session_id", "")

    def completion(self, request, assignment_or_worker) -> dict[str, Any]:
        """The completion code, and the redirect to Prolific that records it."""
        from annotate.models import Publication

        contexts = request.session.get(SESSION_KEY, {})
        study_uid = completion_study_uid(request, assignment_or_worker)
        if study_uid is not None:
            context = contexts.get(study_uid, {})
        else:
            context = next(iter(contexts.values())) if len(contexts) == 1 else {}
        publication = Publication.objects.filter(
            provider=self.name, external_id=context.get("study_id", "")
        ).first()
        code = (publication.details.get("completion_code") if publication else "") or ""
        if not code:
            return {"message": "Thank you! Return to Prolific to finish."}
        return {
            "message": "Thank you! You are being returned to Prolific.",
            "code": code,
            "redirect_url": COMPLETE_URL.format(code=code),
        }

    # --- publishing -------------------------------------------------------------------------------------
    def fee(self, study, amount: Decimal, kind: str, places_per_unit: int = 1) -> Decimal:
        return ProlificConfig.from_dict(study.provider_config).fee(amount)

    def balance(self, workspace_id: str = "") -> Balance:
        available, currency = self.client.balance(self.client.workspace_id(workspace_id))
        return Balance(available, currency)

    def estimate_cost(self, study) -> CostEstimate:
        config = ProlificConfig.from_dict(study.provider_config)
        rewards = config.reward * config.places
        balance = self.balance(config.workspace_id)
        return CostEstimate(
            places=config.places,
            reward=config.reward,
            rewards=rewards,
            fees=config.fee(rewards),
            currency=config.currency,
            balance=balance.available if balance.currency == config.currency else None,
        )

    def study_body(
        self, study, config: ProlificConfig, internal_name: str, code: str, workspace_id: str
    ) -> dict:
        """The ``POST studies/`` body."""
        filters = [
            {
                "filter_id": "participant_group_blocklist",
                "selected_values": [self.client.group_id(workspace_id, BLOCKLIST_GROUP)],
            }
        ]
        if config.only_trusted:
            filters.append(
                {
                    "filter_id": "participant_group_allowlist",
                    "selected_values": [self.client.group_id(workspace_id, ALLOWLIST_GROUP)],
                }
            )
        body: dict[str, Any] = {
            "name": config.name,
            "internal_name": internal_name,
            "description": config.description,
            "external_study_url": study_url(study),
            "prolific_id_option": "url_parameters",
            "completion_codes": [
                {"code": code, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}
            ],
            "total_available_places": config.places,
            "estimated_completion_time": config.estimated_minutes,
            "reward": minor_units(config.reward),
            "device_compatibility": list(config.devices),
            "peripheral_requirements": [],
            "filters": filters,
        }
        if config.max_minutes is not None:
            body["maximum_allowed_time"] = config.max_minutes
        if config.project_id:
            body["project"] = config.project_id
        return body

    def publish(self, study, batch_key: str) -> list:
        """One Prolific study per batch: created as a draft (or found again by its internal name after
        a lost reply), then published."""
        from annotate.models import Publication

        if not KEY_PATTERN.match(batch_key):
            raise ProviderConfigError("batch_key", "must be 1-20 letters, digits, '-' or '_'")
        config = ProlificConfig.from_dict(study.provider_config)
        token = f"{study.uid.hex}-{batch_key}"
        publication, _ = Publication.objects.get_or_create(
            request_token=token,
            defaults={
                "study": study,
                "provider": self.name,
                "places": config.places,
                "reward": config.reward,
                "currency": config.currency,
                "details": {"batch": batch_key, "completion_code": secrets.token_hex(4).upper()},
            },
        )
        if publication.status in (
            Publication.Status.OPEN,
            Publication.Status.PAUSED,
            Publication.Status.EXPIRED,
        ):
            return [publication]
        internal_name = f"hatlab {token}"
        workspace_id = self.client.workspace_id(config.workspace_id)
        if not publication.external_id:
            created = self.client.create_study(
                self.study_body(
                    study, config, internal_name, publication.details["completion_code"], workspace_id
                )
            )
            publication.external_id = created["id"]
            publication.details = {**publication.details, "workspace_id": workspace_id}
            publication.save(update_fields=["external_id", "details", "updated"])
        if self.client.get_study(publication.external_id).get("status") == "UNPUBLISHED":
            self.client.transition_study(publication.external_id, "PUBLISH")
        publication.status = Publication.Status.OPEN
        publication.save(update_fields=["status", "updated"])
        return [publication]

    def _publications(self, study, *statuses: str):
        from annotate.models import Publication

        return Publication.objects.filter(study=study, provider=self.name, status__in=statuses).exclude(
            external_id=""
        )

    def pause(self, study) -> None:
        from annotate.models import Publication

        for publication in self._publications(study, Publication.Status.OPEN):
            self.client.transition_study(publication.external_id, "PAUSE")
            publication.status = Publication.Status.PAUSED
            publication.save(update_fields=["status", "updated"])

    def resume(self, study) -> None:
        from annotate.models import Publication

        for publication in self._publications(study, Publication.Status.PAUSED):
            self.client.transition_study(publication.external_id, "START")
            publication.status = Publication.Status.OPEN
            publication.save(update_fields=["status", "updated"])

    def expire(self, study) -> None:
        from annotate.models import Publication

        for publication in self._publications(study, Publication.Status.OPEN, Publication.Status.PAUSED):
            self.client.transition_study(publication.external_id, "STOP")
            publication.status = Publication.Status.EXPIRED
            publication.save(update_fields=["status", "updated"])

    def top_up(self, study, places: int, key: str) -> None:
        """Raise the open study's places by ``places``, once per ``key``."""
        from annotate.models import Publication

        if not KEY_PATTERN.match(key):
            raise ProviderConfigError("key", "must be 1-20 letters, digits, '-' or '_'")
        if places < 1:
            raise ProviderConfigError("places", "must be at least 1")
        publication = (
            self._publications(study, Publication.Status.OPEN, Publication.Status.PAUSED)
            .order_by("-id")
            .first()
        )
        if publication is None:
            raise ProviderConfigError("places", "the study has no open Prolific study to top up")
        if key in publication.details.get("top_ups", {}):
            return
        total = publication.places + places
        self.client.update_study(publication.external_id, {"total_available_places": total})
        publication.places = total
        publication.details = {
            **publication.details,
            "top_ups": {**publication.details.get("top_ups", {}), key: places},
        }
        publication.save(update_fields=["places", "details", "updated"])

    # --- sync and review --------------------------------------------------------------------------------
    def fetch_submissions(self, study) -> Iterator[SubmissionRecord]:
        from annotate.models import Publication

        for publication in Publication.objects.filter(study=study, provider=self.name).exclude(
            external_id=""
        ):
            code = publication.details.get("completion_code", "")
            for item in self.client.submissions(publication.external_id):
                raw = str(item.get("status", ""))
                status = STATUS.get(raw, raw.lower())
                entered = str(item.get("study_code") or "")
                problem = ""
                if status == SUBMITTED and code and entered != code:
                    problem = f"completion code {entered or 'missing'!r} does not match the study's"
                yield SubmissionRecord(
                    publication_id=publication.pk,
                    external_id=item["id"],
                    worker_external_id=item["participant_id"],
                    status=status,
                    raw_status=raw,
                    started_at=parse_datetime(item["started_at"]) if item.get("started_at") else None,
                    submitted_at=parse_datetime(item["completed_at"]) if item.get("completed_at") else None,
                    answer={"study_code": entered} if entered else {},
                    problem=problem,
                )

    def approve(self, submission, feedback: str = "") -> bool:
        return self.client.approve(submission.external_id)

    def reject(self, submission, feedback: str) -> bool:
        return self.client.reject(submission.external_id, feedback)

    def send_bonus(self, payment) -> str:
        """Set up the bonus (its id is saved on the payment at once), then ask Prolific once to pay it.

        Prolific pays a bonus again on every request to pay it, so the payment is marked
        (:data:`PAY_REQUESTED`) before the request and the request is never repeated by itself: after
        a refusal (4xx: nothing paid) the mark is taken off and the payment may be tried again; after
        an unclear failure (5xx, timeout, lost connection) the mark stays and every later attempt
        raises :class:`BonusOutcomeUnknown` instead of risking a second payment."""
        from annotate.models import Publication

        if payment.external_ref.startswith(PAY_REQUESTED):
            raise BonusOutcomeUnknown(payment.external_ref.removeprefix(PAY_REQUESTED), "an earlier attempt")

        publication = (
            Publication.objects.filter(study=payment.study, provider=self.name)
            .exclude(external_id="")
            .order_by("-id")
            .first()
        )
        if publication is None:
            raise ProviderConfigError("study", "the study was never published on Prolific")
        if not payment.external_ref:
            reply = self.client.set_up_bonus(
                publication.external_id, payment.worker.external_id, payment.amount
            )
            payment.external_ref = str(reply["id"])
            if "fees" in reply:
                payment.fee = (Decimal(str(reply["fees"])) / 100).quantize(CENT)
            payment.save(update_fields=["external_ref", "fee"])
        bonus_id = payment.external_ref
        payment.external_ref = PAY_REQUESTED + bonus_id
        payment.save(update_fields=["external_ref"])
        try:
            self.client.pay_bonus(bonus_id)
        except ProlificAPIError as exc:
            if not 400 <= exc.status < 500:
                raise BonusOutcomeUnknown(bonus_id, exc) from exc
            payment.external_ref = bonus_id  # refused: nothing was paid
            payment.save(update_fields=["external_ref"])
            raise
        except requests.RequestException as exc:
            raise BonusOutcomeUnknown(bonus_id, exc) from exc
        return bonus_id

    # --- trust, blocks, messages ------------------------------------------------------------------------
    def _workspace(self, study) -> str:
        return self.client.workspace_id(ProlificConfig.from_dict(study.provider_config).workspace_id)

    def mirror_trust(self, study, worker, trust: float | None, excluded: bool, mode: str) -> bool:
        """Excluded workers go on the block-list group, trusted ones on the allow-list group."""
        if mode not in ("qualification", "platform"):
            return False
        workspace = self._workspace(study)
        blocklist = self.client.group_id(workspace, BLOCKLIST_GROUP)
        allowlist = self.client.group_id(workspace, ALLOWLIST_GROUP)
        if excluded:
            self.client.add_to_group(blocklist, [worker.external_id])
            self.client.remove_from_group(allowlist, [worker.external_id])
            return True
        self.client.add_to_group(allowlist, [worker.external_id])
        return False

    def unblock(self, study, worker, reason: str) -> None:
        self.client.remove_from_group(
            self.client.group_id(self._workspace(study), BLOCKLIST_GROUP), [worker.external_id]
        )

    def notify(self, study, workers: Iterable, subject: str, message: str) -> list[str]:
        from annotate.models import Publication

        publication = (
            Publication.objects.filter(study=study, provider=self.name).exclude(external_id="").first()
        )
        if publication is None:
            raise ProviderConfigError("study", "the study was never published on Prolific")
        failed: list[str] = []
        for worker in workers:
            if worker.provider != self.name:
                continue
            try:
                self.client.message(worker.external_id, publication.external_id, f"{subject}\n\n{message}")
            except ProlificAPIError:
                failed.append(worker.external_id)
        return failed
