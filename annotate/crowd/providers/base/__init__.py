"""The crowd-provider contract, and what the platform providers share.

A provider knows how a person arriving at a study's entry page (``/w/<study_uid>/``) is recognised
(:meth:`CrowdProvider.identify`), whether the platform vouches for them (:meth:`CrowdProvider.verify_entry`:
their answers count at once, wait for the platform's confirmation, or they are refused) and how they
are handed back when they have finished (:meth:`CrowdProvider.completion`). Platform providers (MTurk, Prolific) add publishing, syncing,
approving, rejecting, bonuses and blocking on top of this contract.

Providers are stateless singletons held in :data:`annotate.crowd.providers.PROVIDERS`; everything they need
comes from the request, the study (``study.provider_config``) and the settings. :class:`PlatformProvider`
holds what the MTurk and Prolific adapters have in common: the API client built on first use, the study's
validated settings, the session context of a worker who arrived from the platform, and the
:class:`~annotate.models.Publication` rows. Reading settings and the money arithmetic they share are in
:mod:`annotate.crowd.providers.base.settings`, retries in :mod:`annotate.crowd.providers.base.retry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar, Generic, TypeVar

from django.conf import settings as django_settings  # the submodule base/settings.py takes "settings"
from django.db.models import QuerySet
from django.urls import reverse

from annotate.crowd.providers.base.retry import ProviderConfigError, ProviderError
from annotate.crowd.providers.base.settings import settings_object
from annotate.models import EntryBinding, Publication

C = TypeVar("C")  # a platform's API client
S = TypeVar("S")  # a platform's validated study settings


class ProviderUnsupported(ProviderError):
    """The provider has no such operation (the local crowd has no platform to publish on or pay through)."""


# The form field in which a finished page hands the platform a copy of its answers (JSON: {"study",
# "submissions": [{"assignment", "submission_key", "answer", "timings", "signals"}]}), so that
# reconciliation can recover an answer our server never stored.
ANSWER_COPY_FIELD = "hatlab"

# Platform submission states, normalised across providers.
ACTIVE = "active"
SUBMITTED = "submitted"
APPROVED = "approved"
REJECTED = "rejected"
RETURNED = "returned"
TIMED_OUT = "timed_out"


@dataclass(frozen=True)
class CostEstimate:
    """What publishing ``places`` places at ``reward`` each costs, the platform's fees included."""

    places: int
    reward: Decimal
    rewards: Decimal
    fees: Decimal
    currency: str
    balance: Decimal | None = None

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees

    @property
    def affordable(self) -> bool | None:
        return None if self.balance is None else self.balance >= self.total

    def as_dict(self) -> dict[str, Any]:
        return {
            "places": self.places,
            "reward": str(self.reward),
            "rewards": str(self.rewards),
            "fees": str(self.fees),
            "total": str(self.total),
            "currency": self.currency,
            "balance": None if self.balance is None else str(self.balance),
            "affordable": self.affordable,
        }


@dataclass(frozen=True)
class Precondition:
    """One thing publishing needs, said before the confirm step: ``ok`` (``None``: cannot be told here),
    and when it is not met, ``sentence``: what to do, naming the setting; ``field`` names it for the API."""

    name: str
    ok: bool | None
    sentence: str = ""
    field: str = "provider"


@dataclass(frozen=True)
class Balance:
    available: Decimal
    currency: str


@dataclass(frozen=True)
class SubmissionRecord:
    """The platform's view of one unit of work: an MTurk assignment or a Prolific submission.
    ``status`` is one of the normalised states above; ``answer`` is the platform's copy of the answer
    fields, when the platform keeps one (MTurk's answer XML); ``problem`` is what the provider itself
    found wrong with it (e.g. a wrong completion code), flagged by reconciliation."""

    publication_id: int
    external_id: str
    worker_external_id: str
    status: str
    raw_status: str = ""
    started_at: datetime | None = None
    submitted_at: datetime | None = None
    answer: dict[str, Any] = field(default_factory=dict)
    problem: str = ""


@dataclass(frozen=True)
class Entry:
    """A provider's word on a person arriving at the entry page: ``refused`` (a plain reason shown to
    them, with HTTP 403), asked to ``start`` first (a page whose button POSTs back: nothing is bound or
    created before that), or admitted on the platform's unit of work ``ref`` (stored on the assignments
    they get), their answers ``verified`` at once or provisional until reconciliation confirms them."""

    ref: str = ""
    verified: bool = True
    refused: str = ""
    start: bool = False

    @classmethod
    def refuse(cls, reason: str) -> Entry:
        return cls(refused=reason)


def bind_entry(study, provider: str, ref: str, holder: str, scope: str = "") -> str:
    """Bind the platform's unit ``ref`` to the first ``holder`` who uses it, coming from ``scope``;
    returns why this use is refused ("" when it is the holder's own, from the same scope and study)."""
    binding, _ = EntryBinding.objects.get_or_create(
        provider=provider, ref=ref, defaults={"study": study, "holder": holder, "scope": scope}
    )
    if binding.study_id != study.pk or binding.scope != scope:
        return "This link does not belong to this study."
    if binding.holder != holder:
        return "This link was already used by someone else. Please open the study from your own account."
    return ""


def completion_study_uid(request, assignment_or_worker) -> str | None:
    """The study a completion is for: the assignment's, else the one the URL names (``study_uid``, as in
    the entry, done and annotator API routes); ``None`` when neither says."""
    study = getattr(assignment_or_worker, "study", None)
    if study is not None:
        return str(study.uid)
    match = getattr(request, "resolver_match", None)
    uid = match.kwargs.get("study_uid") if match is not None else None
    return None if uid is None else str(uid)


class CrowdProvider:
    """One source of annotators.

    Subclasses set :attr:`name` (the key stored in ``Study.provider`` and ``Worker.provider``) and
    :attr:`title`, and override :meth:`identify` and, where the platform needs it,
    :meth:`completion`.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""

    def identify(self, request, study) -> str | None:
        """The worker's external id for this request, or ``None`` when the request does not identify
        anyone (an MTurk preview, a missing or expired invite). Never trust an id the platform has
        not vouched for."""
        return None

    def verify_entry(self, request, study, external_id: str) -> Entry:
        """Whether the person :meth:`identify` named ``external_id`` may start, on which platform unit,
        and whether their answers count at once. By default they do, with no unit."""
        return Entry(ref=self.assignment_ref(request, study))

    def confirmation_window_s(self, study) -> int:
        """How long the platform may take to confirm a provisional answer: the time a worker may spend
        on one unit of work. Past it (and ``HATLAB_PROVISIONAL_GRACE_S``) an unconfirmed answer is set
        aside and its slot handed out again. Without a platform every answer is verified at entry."""
        return 0

    def worker_defaults(self, request, study, external_id: str) -> dict[str, Any]:
        """Extra fields of a :class:`~annotate.models.Worker` created for ``external_id``."""
        return {}

    def completion(self, request, assignment_or_worker) -> dict[str, Any]:
        """What the completion page shows or does when a worker has finished.

        Keys understood by the done page: ``message`` (text shown), ``code`` (a completion code the
        worker copies), ``redirect_url`` (a URL the browser is sent to), ``form`` (``{"action": url,
        "fields": {name: value}}``, a form posted back to the platform, as MTurk's externalSubmit).
        """
        return {"message": "Thank you, you have finished all available items of this study."}

    def completes_unconfirmed(self, request, study, seat) -> bool:
        """Whether a worker admitted unconfirmed (``seat.verified`` false: the platform could not vouch for
        them at entry) may be given :meth:`completion` once their share is done. Yes by default: a
        provider whose completion is a secret shared by every worker (Prolific's code) asks the platform
        again here and says no while it cannot confirm them."""
        return True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    def may_create_worker(self, request) -> bool:
        """Whether this entry request may bring a new worker identity (the new-worker throttle counts only
        those): every request, unless the provider creates none on a mere look at its link."""
        return True

    def is_preview(self, request, study) -> bool:
        """Whether this request is a platform's preview of the task (MTurk before a worker accepts the
        HIT): the entry page then shows the task read-only, with no worker and no assignment."""
        return False

    def assignment_ref(self, request, study) -> str:
        """The platform's id for the unit of work this session is doing (MTurk's assignmentId), stored
        in ``Assignment.provider_assignment_id`` so reconciliation can match our answers to it."""
        return ""

    def claimed_ref(self, request) -> str:
        """The platform unit the entry URL names, unchecked (MTurk's assignmentId, Prolific's session):
        with :meth:`identify`, what tells an identity new to this browser from the one it holds."""
        return ""

    # --- platform operations ----------------------------------------------------------------------
    # Publishing, syncing, reviewing, paying and blocking, implemented by the platform providers
    # (annotate.crowd.providers.mturk, annotate.crowd.providers.prolific). Every call that moves money or creates
    # work is idempotent: it is keyed by a token recorded in annotate.models.providers before the call.

    platform: ClassVar[bool] = False
    currency: ClassVar[str] = "USD"

    def validate_config(self, config: Any) -> dict[str, Any]:
        """``study.provider_config`` checked for this provider; ``ProviderConfigError`` names the field."""
        return {} if config is None else dict(settings_object(config))

    def _unsupported(self, operation: str) -> ProviderUnsupported:
        return ProviderUnsupported(self.name, operation, "this provider has no crowd platform")

    def estimate_cost(self, study) -> CostEstimate:
        """Rewards and platform fees of publishing the study as configured, with the balance."""
        raise self._unsupported("estimate_cost")

    def local_estimate(self, study) -> CostEstimate:
        """Rewards and platform fees of publishing the study as configured, computed here from its
        settings and the fee rule: no platform call, no credentials (``balance`` is ``None``)."""
        raise self._unsupported("local_estimate")

    def plan_estimate(self, study, places: int, reward: Decimal) -> CostEstimate:
        """What ``places`` places at ``reward`` each would cost on this platform with its fee rule (the
        study's own fee settings when it is set up for the platform): no platform call."""
        raise self._unsupported("plan_estimate")

    def study_reward(self, study) -> Decimal | None:
        """The reward per place the study's settings give on this platform; ``None`` when the study is not
        set up for it."""
        return None

    def study_places(self, study) -> int | None:
        """The places one publication of the study makes on this platform; ``None`` when the study is not
        set up for it."""
        return None

    def publish_preconditions(self, study) -> list[Precondition]:
        """What publishing the study needs that can be checked here, before anything changes: settings,
        credentials, a public address the platform accepts. No platform call."""
        return []

    def target(self) -> tuple[str, bool]:
        """Where publishing goes, in words, and whether it reaches real people and spends real money
        (the publish page then asks for an explicit confirmation)."""
        return "", False

    def explain_error(self, exc: BaseException) -> str | None:
        """A sentence naming the setting to fix when ``exc`` says the platform's credentials are
        missing or were refused; ``None`` for any other error."""
        return None

    # --- access without a platform ---------------------------------------------------------------------
    invites: ClassVar[bool] = False

    def open_enrollment(self, study) -> bool:
        """Whether anyone with the study's plain link may take part (else: invites, or the platform)."""
        return False

    def balance(self) -> Balance:
        raise self._unsupported("balance")

    def publish(self, study, batch_key: str) -> list:
        """Publish the study; repeating a call with the same ``batch_key`` publishes nothing new.
        Returns the :class:`~annotate.models.Publication` rows of the batch."""
        raise self._unsupported("publish")

    def pause(self, study) -> None:
        raise self._unsupported("pause")

    def resume(self, study) -> None:
        raise self._unsupported("resume")

    def top_up(self, study, places: int, key: str) -> None:
        """Open ``places`` more places; repeating a call with the same ``key`` adds nothing."""
        raise self._unsupported("top_up")

    def expire(self, study) -> None:
        raise self._unsupported("expire")

    def extend(self, study, seconds: int) -> None:
        raise self._unsupported("extend")

    def fee(self, study, amount: Decimal, kind: str, places_per_unit: int = 1) -> Decimal:
        """The platform's fee on paying ``amount`` as a ``kind`` ("reward" or "bonus")."""
        return Decimal("0.00")

    def fetch_submissions(self, study) -> Iterator[SubmissionRecord]:
        """Every unit of work the platform holds for the study (none without a platform)."""
        return iter(())

    def approve(self, submission, feedback: str = "") -> bool:
        """Approve a :class:`~annotate.models.PlatformSubmission`; ``False`` when it already was."""
        raise self._unsupported("approve")

    def reject(self, submission, feedback: str) -> bool:
        raise self._unsupported("reject")

    def send_bonus(self, payment) -> str:
        """Pay a :class:`~annotate.models.Payment` bonus once; returns the platform's reference."""
        raise self._unsupported("send_bonus")

    def mirror_trust(self, study, worker, trust: float | None, excluded: bool, mode: str) -> bool:
        """Mirror a worker's gold trust on the platform (qualification score, allow- / block-list, or a
        platform block, per ``mode``). ``True`` when the platform now keeps the worker out. Without a
        platform there is nothing to mirror: the worker row's status is what keeps them out."""
        return False

    def unblock(self, study, worker, reason: str) -> None:
        """Undo :meth:`mirror_trust`'s exclusion of ``worker`` on the platform."""

    def notify(self, study, workers: Iterable, subject: str, message: str) -> list[str]:
        """Message workers through the platform; returns the external ids that could not be reached."""
        raise self._unsupported("notify")


def entry_url(study) -> str:
    """The public URL of the study's entry page, where a platform sends its workers."""
    return django_settings.HATLAB_PUBLIC_URL.rstrip("/") + reverse("work-entry", args=[study.uid])


class PlatformProvider(CrowdProvider, ABC, Generic[C, S]):
    """A provider backed by a crowd platform's API: subclasses build their client
    (:meth:`make_client`) and read their study settings (:meth:`parse_settings`)."""

    platform = True

    def __init__(self) -> None:
        self._client: C | None = None
        #: Whether the client was given (:meth:`use_client`) rather than built from the settings.
        self.client_given = False

    @abstractmethod
    def make_client(self) -> C:
        """The platform client configured from the Django settings."""

    @abstractmethod
    def parse_settings(self, config: Any) -> S:
        """``study.provider_config`` validated as this platform's settings."""

    @property
    def client(self) -> C:
        if self._client is None:
            self._client = self.make_client()
        return self._client

    def use_client(self, client: C | None) -> None:
        """Use ``client`` instead of one built from the settings (``None`` goes back to the settings)."""
        self._client = client
        self.client_given = client is not None

    def settings_of(self, study) -> S:
        return self.parse_settings(study.provider_config)

    def validate_config(self, config: Any) -> dict[str, Any]:
        self.parse_settings(config)
        return dict(config)

    def own_settings(self, study) -> S | None:
        """The study's settings on this platform when it is set up for it and they are valid, else ``None``."""
        if study.provider != self.name:
            return None
        try:
            return self.settings_of(study)
        except ProviderConfigError:
            return None

    def study_reward(self, study) -> Decimal | None:
        config = self.own_settings(study)
        return None if config is None else config.reward  # type: ignore[attr-defined]

    def study_places(self, study) -> int | None:
        config = self.own_settings(study)
        return None if config is None else config.places  # type: ignore[attr-defined]

    def publish_preconditions(self, study) -> list[Precondition]:
        """The study's settings are valid, and the platform's credentials are there."""
        try:
            self.settings_of(study)
        except ProviderConfigError as exc:
            settings_ok = Precondition(
                "Settings", False, f"Fill in the settings above: {exc.field} {exc.message}.", exc.field
            )
        else:
            settings_ok = Precondition("Settings", True)
        return [settings_ok, self.credentials_precondition()]

    def credentials_precondition(self) -> Precondition:
        """Whether the platform's credentials are set here (a client given with :meth:`use_client` has them)."""
        return Precondition("Credentials", True)

    # --- the worker's platform context, kept in their session per study ----------------------------
    @property
    def session_key(self) -> str:
        return f"hatlab_{self.name}"

    def remember(self, request, study, context: dict[str, str]) -> None:
        """Keep the platform's ids of this visit (assignment, session, where to hand back) for ``study``."""
        contexts = dict(request.session.get(self.session_key, {}))
        contexts[str(study.uid)] = context
        request.session[self.session_key] = contexts

    def context(self, request, study_uid: str | None) -> dict[str, str]:
        """What :meth:`remember` kept for ``study_uid``; without a study, the only one kept, if one."""
        contexts = request.session.get(self.session_key, {}) if hasattr(request, "session") else {}
        if study_uid is not None:
            return contexts.get(study_uid, {})
        return next(iter(contexts.values())) if len(contexts) == 1 else {}

    # --- what we published ------------------------------------------------------------------------
    def publications(self, study, *statuses: str) -> QuerySet[Publication]:
        """The study's publications on this platform that the platform knows (optionally by status)."""
        rows = Publication.objects.filter(study=study, provider=self.name).exclude(external_id="")
        return rows.filter(status__in=statuses) if statuses else rows

    def fetch_submissions(self, study) -> Iterator[SubmissionRecord]:
        for publication in self.publications(study):
            yield from self.records(publication)

    @abstractmethod
    def records(self, publication: Publication) -> Iterator[SubmissionRecord]:
        """The platform's units of work under one publication (a HIT's assignments, a study's
        submissions), normalised."""

    def published(self, study, external_id: str) -> bool:
        """Whether ``external_id`` (a HIT, a Prolific study) is one we published for ``study``."""
        return self.publications(study).filter(external_id=external_id).exists()
