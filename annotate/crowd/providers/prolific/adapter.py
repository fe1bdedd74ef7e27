"""Prolific as a crowd provider: one Prolific study per publication batch.

Workers arrive with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID`` in the URL and leave through
Prolific's completion URL with the study's completion code, which reconciliation checks on every
submission. The calls go through :class:`~annotate.crowd.providers.prolific.client.ProlificClient` on
``settings.PROLIFIC_API_URL`` with the token ``settings.PROLIFIC_API_TOKEN`` (only from the environment).

Gold trust is mirrored by two participant groups: workers excluded by their trust go on the block-list
group (``participant_group_blocklist`` filter on every study we publish), trusted workers on the
allow-list group, which a study may require (``only_trusted``). Prolific re-opens the place of a
returned or timed-out submission itself; reconciliation releases that participant's open assignments
on our side so their items go back to the pool.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any

import requests
from django.conf import settings
from django.utils.dateparse import parse_datetime

from annotate.crowd.providers import PROVIDERS
from annotate.crowd.providers.base import (
    ACTIVE,
    APPROVED,
    REJECTED,
    RETURNED,
    SUBMITTED,
    TIMED_OUT,
    Balance,
    CostEstimate,
    Entry,
    PlatformProvider,
    Precondition,
    SubmissionRecord,
    bind_entry,
    completion_study_uid,
    entry_url,
)
from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.crowd.providers.base.settings import CENT, ID_PATTERN, checked_key, minor_units
from annotate.crowd.providers.prolific.client import (
    PLATFORM,
    BonusOutcomeUnknown,
    ProlificAPIError,
    ProlificClient,
)
from annotate.crowd.providers.prolific.settings import DEFAULT_CURRENCY, ProlificConfig, platform_fee
from annotate.models import EntryBinding, Publication, Worker

NAME = PLATFORM
COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
URL_PARAMETERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
BLOCKLIST_GROUP = "hatlab blocklist"
ALLOWLIST_GROUP = "hatlab trusted"
PAY_REQUESTED = "pay-requested:"
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


def study_url(study) -> str:
    """The entry page with Prolific's URL parameters, as ``external_study_url`` wants it."""
    return f"{entry_url(study)}?{URL_PARAMETERS}"


class ProlificProvider(PlatformProvider[ProlificClient, ProlificConfig]):
    """Studies published as one Prolific study each (see the module docstring)."""

    name = NAME
    title = "Prolific"
    currency = "GBP"

    def make_client(self) -> ProlificClient:
        return ProlificClient(settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL)

    def parse_settings(self, config: Any) -> ProlificConfig:
        return ProlificConfig.from_dict(config)

    # --- a worker arrives and leaves ----------------------------------------------------------------
    def identify(self, request, study) -> str | None:
        """``PROLIFIC_PID`` from the URL (with ``STUDY_ID`` and ``SESSION_ID``); anyone can type such a
        URL: :meth:`verify_entry` decides what the id is worth."""
        pid = request.GET.get("PROLIFIC_PID", "")
        study_id = request.GET.get("STUDY_ID", "")
        session_id = request.GET.get("SESSION_ID", "")
        if not all(ID_PATTERN.match(v) for v in (pid, study_id, session_id)):
            return None
        return pid

    def verify_entry(self, request, study, external_id: str) -> Entry:
        """Ask Prolific about the session (``SESSION_ID`` is the submission's id): an active submission
        of this participant in the Prolific study we published is verified at once; a session Prolific
        does not know, someone else's, another study's or one no longer active is refused. When Prolific
        cannot be asked (down, slow, no token), the participant starts with provisional answers, and the
        session is bound to the first ``PROLIFIC_PID`` that uses it; reconciliation verifies them when
        Prolific lists the session under the same participant."""
        study_id = request.GET["STUDY_ID"]
        session_id = request.GET["SESSION_ID"]
        if not self.published(study, study_id):
            return Entry.refuse("This Prolific study is not part of this study.")
        try:
            found = self.client.participant_session(session_id)
        except ProlificAPIError as exc:
            if exc.status == 404:
                return Entry.refuse("Prolific has no such session. Please open the study from Prolific.")
            found = None
        except (requests.RequestException, ProviderConfigError):
            found = None
        if found is not None:
            participant = found.get("participant") or found.get("participant_id")
            if participant != external_id or found.get("study_id") != study_id:
                return Entry.refuse("This Prolific session belongs to someone else.")
            if STATUS.get(str(found.get("status", ""))) != ACTIVE:
                return Entry.refuse("This Prolific session is no longer active.")
            # Prolific vouches for this participant: the session is theirs, whoever tried it before.
            EntryBinding.objects.update_or_create(
                provider=self.name, ref=session_id,
                defaults={"study": study, "holder": external_id, "scope": study_id},
            )  # fmt: skip
        else:
            refused = bind_entry(study, self.name, session_id, external_id, study_id)
            if refused:
                return Entry.refuse(refused)
        self.remember(request, study, {"session_id": session_id, "study_id": study_id})
        return Entry(ref=session_id, verified=found is not None)

    def completes_unconfirmed(self, request, study, seat) -> bool:
        """Prolific's completion code is the study's, the same for every participant: a participant admitted
        while Prolific could not be asked gets it only once Prolific confirms now that the session
        (``seat.ref``) is an active one of theirs in the Prolific study they came from."""
        study_id = self.context(request, str(study.uid)).get("study_id", "")
        external_id = Worker.objects.filter(pk=seat.worker_id).values_list("external_id", flat=True).first()
        if not seat.ref or not study_id or external_id is None:
            return False
        try:
            found = self.client.participant_session(seat.ref)
        except (ProlificAPIError, requests.RequestException, ProviderConfigError):
            return False
        participant = found.get("participant") or found.get("participant_id")
        return (
            participant == external_id
            and found.get("study_id") == study_id
            and STATUS.get(str(found.get("status", ""))) == ACTIVE
        )

    def confirmation_window_s(self, study) -> int:
        """The study's maximum allowed time; without one, three times the estimate and ten minutes
        (Prolific times a submission out by a limit it derives from the estimate)."""
        config = self.settings_of(study)
        return 60 * (config.max_minutes or 3 * config.estimated_minutes + 10)

    def claimed_ref(self, request) -> str:
        return request.GET.get("SESSION_ID", "")

    def assignment_ref(self, request, study) -> str:
        return self.context(request, str(study.uid)).get("session_id", "")

    def completion(self, request, assignment_or_worker) -> dict[str, Any]:
        """The completion code, and the redirect to Prolific that records it.

        Prolific declares completion codes per study (``completion_codes`` of the study body: a code, its
        type and the actions it triggers), not per participant, so every participant of a publication
        gets the same code: the done page shows it only to a worker who has finished their share
        (:mod:`annotate.crowd.completion`), and reconciliation checks each submission's code and session."""
        context = self.context(request, completion_study_uid(request, assignment_or_worker))
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
        return self.settings_of(study).fee(amount)

    def balance(self, workspace_id: str = "") -> Balance:
        available, currency = self.client.balance(self.client.workspace_id(workspace_id))
        return Balance(available, currency)

    def local_estimate(self, study) -> CostEstimate:
        config = self.settings_of(study)
        return self.estimate_for(config.places, config.reward, config)

    @staticmethod
    def estimate_for(places: int, reward: Decimal, config: ProlificConfig | None) -> CostEstimate:
        """``places`` places at ``reward`` each, with the fee and VAT rates of ``config`` (Prolific's
        published rate and the default currency without one)."""
        rewards = reward * places
        fees = config.fee(rewards) if config else platform_fee(rewards)
        currency = config.currency if config else DEFAULT_CURRENCY
        return CostEstimate(places=places, reward=reward, rewards=rewards, fees=fees, currency=currency)

    def plan_estimate(self, study, places: int, reward: Decimal) -> CostEstimate:
        return self.estimate_for(places, reward, self.own_settings(study))

    def credentials_precondition(self) -> Precondition:
        if self.client_given or settings.PROLIFIC_API_TOKEN:
            return Precondition("Credentials", True)
        return Precondition(
            "Credentials",
            False,
            "Set PROLIFIC_API_TOKEN in the server's environment to reach Prolific.",
            "credentials",
        )

    def estimate_cost(self, study) -> CostEstimate:
        estimate = self.local_estimate(study)
        balance = self.balance(self.settings_of(study).workspace_id)
        return replace(estimate, balance=balance.available if balance.currency == estimate.currency else None)

    def target(self) -> tuple[str, bool]:
        return "Prolific: real participants are paid real money", True

    def explain_error(self, exc: BaseException) -> str | None:
        """No token, or a token Prolific refused, as a sentence."""
        if isinstance(exc, ProviderConfigError) and exc.field == "PROLIFIC_API_TOKEN":
            return "Set PROLIFIC_API_TOKEN in the server's environment to reach Prolific."
        if isinstance(exc, ProlificAPIError) and exc.status == 401:
            return (
                "Prolific refused the token in PROLIFIC_API_TOKEN: check it, or make a new API token in "
                "Prolific's settings."
            )
        return None

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
        checked_key(batch_key, "batch_key")
        config = self.settings_of(study)
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

    def pause(self, study) -> None:
        for publication in self.publications(study, Publication.Status.OPEN):
            self.client.transition_study(publication.external_id, "PAUSE")
            publication.status = Publication.Status.PAUSED
            publication.save(update_fields=["status", "updated"])

    def resume(self, study) -> None:
        for publication in self.publications(study, Publication.Status.PAUSED):
            self.client.transition_study(publication.external_id, "START")
            publication.status = Publication.Status.OPEN
            publication.save(update_fields=["status", "updated"])

    def expire(self, study) -> None:
        for publication in self.publications(study, Publication.Status.OPEN, Publication.Status.PAUSED):
            self.client.transition_study(publication.external_id, "STOP")
            publication.status = Publication.Status.EXPIRED
            publication.save(update_fields=["status", "updated"])

    def top_up(self, study, places: int, key: str) -> None:
        """Raise the open study's places by ``places``, once per ``key``."""
        checked_key(key, "key")
        if places < 1:
            raise ProviderConfigError("places", "must be at least 1")
        publication = (
            self.publications(study, Publication.Status.OPEN, Publication.Status.PAUSED)
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
    def records(self, publication: Publication) -> Iterator[SubmissionRecord]:
        """Prolific's submissions, each checked against the study's completion code."""
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
        if payment.external_ref.startswith(PAY_REQUESTED):
            raise BonusOutcomeUnknown(payment.external_ref.removeprefix(PAY_REQUESTED), "an earlier attempt")

        publication = self.publications(payment.study).order_by("-id").first()
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
        return self.client.workspace_id(self.settings_of(study).workspace_id)

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
        publication = self.publications(study).first()
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


PROVIDERS.add(NAME, ProlificProvider(), settings=ProlificConfig, bonuses=True, blocks=True)
