"""Prolific's public REST API (v1) on ``requests``: plain data in, plain data out.

Every request carries ``Authorization: Token <token>``. Money is sent in the workspace currency's minor
unit (pence / cents), except in a bonus CSV, which takes major units. Endpoints used:

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

Checked against Prolific's API reference (docs.prolific.com/api-reference: studies, submissions,
bonuses, participant groups) and the request shapes of Prolific's own command-line client
(github.com/prolific-oss/cli).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import urljoin

import requests

from annotate.crowd.providers.base.retry import (
    DEFAULT_BACKOFF,
    Backoff,
    ProviderConfigError,
    ProviderError,
    call_with_retry,
)

PLATFORM = "prolific"
MIN_REJECTION_MESSAGE = 100
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
        super().__init__(PLATFORM, operation, f"HTTP {status}: {body}", status=status)
        self.body = body
        self.retry_after = retry_after


class BonusOutcomeUnknown(ProviderError):
    """A request to pay a bonus got no clear answer, so Prolific may have paid it. Paying is not
    idempotent on Prolific: this bonus is never asked for again automatically."""

    def __init__(self, bonus_id: str, cause: object = ""):
        super().__init__(
            PLATFORM,
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
        timeout = kwargs.pop("timeout", self.timeout)

        def call() -> Any:
            response = self.session.request(method, url, timeout=timeout, **kwargs)
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
        return call_with_retry(
            PLATFORM, operation, call, classify_error, backoff=self.backoff, sleep=self.sleep
        )

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
            PLATFORM, "CreateStudy", attempt, classify_error, backoff=self.backoff, sleep=self.sleep
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

    def participant_session(self, submission_id: str, timeout: float = 5.0) -> dict:
        """One submission (a participant's session), asked once with a short timeout: the entry page
        waits for it, so a slow Prolific must not hold the participant up."""
        return self.request(
            "GET", f"submissions/{submission_id}/", "GetSubmission", retry=False, timeout=timeout
        )

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
