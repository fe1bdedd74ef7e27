"""Amazon Mechanical Turk through boto3.

Amazon closed MTurk to new requesters on 30 July 2026; existing accounts keep working, so this provider
stays, beside Prolific and the local crowd, and no flow depends on it alone.

How a study runs on MTurk
  * One HIT type per publication batch: title, description, keywords, reward, assignment duration,
    auto-approval delay and the qualification requirements (approval rate, number approved, locale, and
    the account's *gold trust* qualification, which mirrors our gold-question trust: auto-granted at 100,
    lowered to a worker's trust x 100 once they have answered enough golds, and required to be at least
    the study's threshold x 100).
  * ``hits`` HITs of that type, each with ``MaxAssignments`` and an ExternalQuestion that frames our HTTPS
    task URL (MTurk adds ``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo``). The page shows a
    read-only preview while ``assignmentId`` is ``ASSIGNMENT_ID_NOT_AVAILABLE`` and, once the worker is
    done, posts a form to ``{turkSubmitTo}/mturk/externalSubmit`` with the ``assignmentId`` and a
    ``hatlab`` field holding a copy of the answers, so reconciliation can recover any we never stored.
  * Approve / reject with feedback, bonuses with a UniqueRequestToken, notifications, expiry and
    extension, extra assignments, worker blocks, the account balance.

Endpoints come from ``settings.MTURK_SANDBOX``; credentials only from boto3's environment chain
(``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` or ``AWS_PROFILE``). boto3's own retries are switched
off so that every attempt goes through ``annotate.providers.retry`` (one policy, every attempt logged).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any
from xml.sax.saxutils import escape

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionError, ConnectTimeoutError, ReadTimeoutError
from defusedxml import ElementTree
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from annotate.providers import register
from annotate.providers.base import (
    ANSWER_COPY_FIELD,
    APPROVED,
    REJECTED,
    SUBMITTED,
    Balance,
    CostEstimate,
    CrowdProvider,
    SubmissionRecord,
    completion_study_uid,
)
from annotate.providers.retry import DEFAULT_BACKOFF, Backoff, ProviderConfigError, call_with_retry

NAME = "mturk"
SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
LIVE_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
SANDBOX_WORKER_SITE = "https://workersandbox.mturk.com"
LIVE_WORKER_SITE = "https://www.mturk.com"
PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
ANSWER_FIELD = ANSWER_COPY_FIELD

# MTurk's system qualification types.
QUAL_PERCENT_APPROVED = "000000000000000000L0"
QUAL_NUMBER_APPROVED = "00000000000000000040"
QUAL_LOCALE = "00000000000000000071"

# Requester fees (MTurk pricing): 20 % of rewards and bonuses, 20 % more on HITs with 10 or more
# assignments, never less than one cent per assignment or bonus.
FEE_RATE = Decimal("0.20")
LARGE_HIT_EXTRA_RATE = Decimal("0.20")
LARGE_HIT_ASSIGNMENTS = 10
MIN_FEE = Decimal("0.01")
CENT = Decimal("0.01")

EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
TRANSIENT_CODES = frozenset(
    {
        "ServiceFault",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalFailure",
        "InternalError",
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
    }
)


def classify_error(exc: BaseException) -> float | None:
    """Transient (retry, 0 s hint) for throttling, MTurk's ServiceFault, 5xx and connection failures;
    ``None`` (permanent) for everything else, e.g. a RequestError on bad parameters."""
    if isinstance(exc, ConnectionError | ConnectTimeoutError | ReadTimeoutError):
        return 0.0
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        message = str(error.get("Message", "")).lower()
        if error.get("Code") in TRANSIENT_CODES or status == 429 or status >= 500:
            return 0.0
        if "rate exceeded" in message or "throttl" in message:
            return 0.0
    return None


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def make_client(sandbox: bool, region: str = "us-east-1"):
    """A boto3 MTurk client on the sandbox or live endpoint, without boto3's own retries."""
    return boto3.client(
        "mturk",
        region_name=region,
        endpoint_url=SANDBOX_ENDPOINT if sandbox else LIVE_ENDPOINT,
        config=Config(
            retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=10, read_timeout=30
        ),
    )


def worker_site(sandbox: bool) -> str:
    return SANDBOX_WORKER_SITE if sandbox else LIVE_WORKER_SITE


def external_question(url: str, frame_height: int) -> str:
    """The ExternalQuestion XML that frames ``url`` (which must be HTTPS) in the worker's page."""
    if not url.startswith("https://"):
        raise ProviderConfigError("task_url", "MTurk only frames HTTPS task URLs; set HATLAB_PUBLIC_URL")
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
        f"<ExternalURL>{escape(url)}</ExternalURL>"
        f"<FrameHeight>{int(frame_height)}</FrameHeight>"
        "</ExternalQuestion>"
    )


def parse_answer_xml(xml: str) -> dict[str, str | list[str]]:
    """The fields of MTurk's QuestionFormAnswers document: ``{QuestionIdentifier: value}``. An
    ExternalQuestion's form fields arrive as FreeText; multiple selections as a list."""
    root = ElementTree.fromstring(xml)
    answers: dict[str, str | list[str]] = {}
    for answer in root:
        if _local(answer.tag) != "Answer":
            continue
        name = ""
        values: list[str] = []
        free: str | None = None
        for child in answer:
            tag = _local(child.tag)
            if tag == "QuestionIdentifier":
                name = (child.text or "").strip()
            elif tag == "FreeText":
                free = child.text or ""
            elif tag == "SelectionIdentifier":
                values.append((child.text or "").strip())
        if name:
            answers[name] = free if free is not None else (values[0] if len(values) == 1 else values)
    return answers


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def money(value: Any, field_name: str) -> Decimal:
    """A positive amount in dollars with cents, from a string or number; a clear error naming the field."""
    try:
        amount = Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)
    except (InvalidOperation, ValueError):
        raise ProviderConfigError(field_name, f"not an amount: {value!r}") from None
    if amount < CENT:
        raise ProviderConfigError(field_name, "must be at least 0.01")
    return amount


def assignment_fee(reward: Decimal, assignments_per_hit: int) -> Decimal:
    """MTurk's fee on one assignment's reward."""
    rate = FEE_RATE + (LARGE_HIT_EXTRA_RATE if assignments_per_hit >= LARGE_HIT_ASSIGNMENTS else 0)
    return max(MIN_FEE, (reward * rate).quantize(CENT, rounding=ROUND_HALF_UP))


def bonus_fee(amount: Decimal) -> Decimal:
    """MTurk's fee on one bonus."""
    return max(MIN_FEE, (amount * FEE_RATE).quantize(CENT, rounding=ROUND_HALF_UP))


def _int(config: dict, name: str, default: int, low: int, high: int) -> int:
    value = config.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProviderConfigError(name, f"must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise ProviderConfigError(name, f"must be between {low} and {high}")
    return value


def _text(config: dict, name: str, default: str | None, max_len: int) -> str:
    value = config.get(name, default)
    if not isinstance(value, str) or not value.strip():
        raise ProviderConfigError(name, "is required")
    if len(value) > max_len:
        raise ProviderConfigError(name, f"must be at most {max_len} characters")
    return value.strip()


@dataclass(frozen=True)
class MTurkConfig:
    """A study's MTurk settings (``Study.provider_config``), validated; limits are MTurk's."""

    title: str
    description: str
    reward: Decimal
    keywords: str = ""
    hits: int = 1
    assignments_per_hit: int = 3
    assignment_duration_s: int = 3600
    lifetime_s: int = 7 * 86400
    auto_approval_delay_s: int = 3 * 86400
    frame_height: int = 800
    min_approval_rate: int = 95
    min_approved: int = 100
    locales: tuple[str, ...] = ()
    trust_qualification: bool = True
    trust_qualification_name: str = "hatlab gold trust"

    @classmethod
    def from_dict(cls, config: dict) -> MTurkConfig:
        if not isinstance(config, dict):
            raise ProviderConfigError("provider_config", "must be an object")
        keywords = config.get("keywords", "")
        if isinstance(keywords, list | tuple):
            keywords = ", ".join(str(k).strip() for k in keywords if str(k).strip())
        if not isinstance(keywords, str) or len(keywords) > 1000:
            raise ProviderConfigError("keywords", "must be a list of words or a comma-separated string")
        locales = config.get("locales", [])
        if isinstance(locales, str):
            locales = [locales]
        if not isinstance(locales, list | tuple) or not all(
            isinstance(c, str) and len(c) == 2 and c.isalpha() and c.isupper() for c in locales
        ):
            raise ProviderConfigError(
                "locales", "must be ISO 3166 two-letter country codes, e.g. ['US', 'GB']"
            )
        trust = config.get("trust_qualification", True)
        if not isinstance(trust, bool):
            raise ProviderConfigError("trust_qualification", "must be true or false")
        return cls(
            title=_text(config, "title", None, 128),
            description=_text(config, "description", None, 2000),
            reward=money(config.get("reward", ""), "reward"),
            keywords=keywords,
            hits=_int(config, "hits", 1, 1, 10000),
            assignments_per_hit=_int(config, "assignments_per_hit", 3, 1, 1000),
            assignment_duration_s=_int(config, "assignment_duration_s", 3600, 30, 31536000),
            lifetime_s=_int(config, "lifetime_s", 7 * 86400, 30, 31536000),
            auto_approval_delay_s=_int(config, "auto_approval_delay_s", 3 * 86400, 0, 2592000),
            frame_height=_int(config, "frame_height", 800, 0, 5000),
            min_approval_rate=_int(config, "min_approval_rate", 95, 0, 100),
            min_approved=_int(config, "min_approved", 100, 0, 1000000),
            locales=tuple(locales),
            trust_qualification=trust,
            trust_qualification_name=_text(config, "trust_qualification_name", "hatlab gold trust", 200),
        )

    @property
    def places(self) -> int:
        return self.hits * self.assignments_per_hit

    def requirements(self, trust_qualification_id: str | None, threshold: float) -> list[dict]:
        """MTurk QualificationRequirements for this config (guarding accept; preview stays open)."""
        reqs: list[dict] = []
        if self.min_approval_rate:
            reqs.append(_requirement(QUAL_PERCENT_APPROVED, "GreaterThanOrEqualTo", [self.min_approval_rate]))
        if self.min_approved:
            reqs.append(_requirement(QUAL_NUMBER_APPROVED, "GreaterThanOrEqualTo", [self.min_approved]))
        if self.locales:
            reqs.append(
                {
                    "QualificationTypeId": QUAL_LOCALE,
                    "Comparator": "In",
                    "LocaleValues": [{"Country": c} for c in self.locales],
                    "ActionsGuarded": "Accept",
                }
            )
        if trust_qualification_id:
            reqs.append(
                _requirement(trust_qualification_id, "GreaterThanOrEqualTo", [trust_score(threshold)])
            )
        return reqs


def _requirement(qualification_id: str, comparator: str, values: list[int]) -> dict:
    return {
        "QualificationTypeId": qualification_id,
        "Comparator": comparator,
        "IntegerValues": values,
        "ActionsGuarded": "Accept",
    }


def trust_score(trust: float) -> int:
    """Trust in [0, 1] as the integer MTurk qualification value in [0, 100]."""
    return int(round(max(0.0, min(1.0, trust)) * 100))


class MTurkClient:
    """The MTurk requester operations hatlab uses, each through ``call_with_retry``.

    Calls that move money or create work are safe to repeat: HIT creation and bonuses carry a
    UniqueRequestToken, and when MTurk refuses a repeat the client checks the platform's state (the HIT
    with that annotation, the assignment's status, the bonuses already paid) instead of failing."""

    def __init__(
        self,
        client=None,
        *,
        sandbox: bool = True,
        region: str = "us-east-1",
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.sandbox = sandbox
        self.client = client if client is not None else make_client(sandbox, region)
        self.backoff = backoff
        self.sleep = sleep

    def _call(self, operation: str, method: str, **params: Any) -> dict:
        fn = getattr(self.client, method)
        return call_with_retry(
            NAME, operation, lambda: fn(**params), classify_error, backoff=self.backoff, sleep=self.sleep
        )

    # --- account -------------------------------------------------------------------------------------
    def balance(self) -> Decimal:
        reply = self._call("GetAccountBalance", "get_account_balance")
        return Decimal(reply["AvailableBalance"])

    # --- qualifications and blocks ---------------------------------------------------------------------
    def ensure_trust_qualification(self, name: str) -> str:
        """The id of our auto-granted trust qualification type called ``name``, created when missing."""
        next_token: str | None = None
        while True:
            params: dict[str, Any] = {
                "Query": name,
                "MustBeRequestable": False,
                "MustBeOwnedByCaller": True,
                "MaxResults": 100,
            }
            if next_token:
                params["NextToken"] = next_token
            reply = self._call("ListQualificationTypes", "list_qualification_types", **params)
            for qtype in reply.get("QualificationTypes", []):
                if qtype.get("Name") == name and qtype.get("QualificationTypeStatus") == "Active":
                    return qtype["QualificationTypeId"]
            next_token = reply.get("NextToken")
            if not next_token:
                break
        reply = self._call(
            "CreateQualificationType",
            "create_qualification_type",
            Name=name,
            Keywords="hatlab, quality",
            Description="Share of hidden check questions answered correctly in our tasks (0-100).",
            QualificationTypeStatus="Active",
            AutoGranted=True,
            AutoGrantedValue=100,
        )
        return reply["QualificationType"]["QualificationTypeId"]

    def set_qualification(self, qualification_id: str, worker_id: str, value: int) -> None:
        self._call(
            "AssociateQualificationWithWorker",
            "associate_qualification_with_worker",
            QualificationTypeId=qualification_id,
            WorkerId=worker_id,
            IntegerValue=value,
            SendNotification=False,
        )

    def block_worker(self, worker_id: str, reason: str) -> None:
        self._call("CreateWorkerBlock", "create_worker_block", WorkerId=worker_id, Reason=reason)

    def unblock_worker(self, worker_id: str, reason: str) -> None:
        self._call("DeleteWorkerBlock", "delete_worker_block", WorkerId=worker_id, Reason=reason)

    # --- HITs ------------------------------------------------------------------------------------------
    def create_hit_type(self, config: MTurkConfig, requirements: list[dict]) -> str:
        params: dict[str, Any] = {
            "AutoApprovalDelayInSeconds": config.auto_approval_delay_s,
            "AssignmentDurationInSeconds": config.assignment_duration_s,
            "Reward": str(config.reward),
            "Title": config.title,
            "Description": config.description,
            "QualificationRequirements": requirements,
        }
        if config.keywords:
            params["Keywords"] = config.keywords
        return self._call("CreateHITType", "create_hit_type", **params)["HITTypeId"]

    def create_hit(
        self, hit_type_id: str, question: str, max_assignments: int, lifetime_s: int, token: str
    ) -> dict:
        """Create one HIT; ``token`` is both its UniqueRequestToken and its RequesterAnnotation, so a
        repeat after a lost reply finds the HIT made the first time."""
        try:
            reply = self._call(
                "CreateHITWithHITType",
                "create_hit_with_hit_type",
                HITTypeId=hit_type_id,
                MaxAssignments=max_assignments,
                LifetimeInSeconds=lifetime_s,
                Question=question,
                RequesterAnnotation=token,
                UniqueRequestToken=token,
            )
        except ClientError as exc:
            if error_code(exc) != "RequestError":
                raise
            existing = self.find_hit(token)
            if existing is None:
                raise
            return existing
        return reply["HIT"]

    def find_hit(self, annotation: str) -> dict | None:
        for hit in self.iter_hits():
            if hit.get("RequesterAnnotation") == annotation:
                return hit
        return None

    def iter_hits(self) -> Iterator[dict]:
        yield from self._paginate("ListHITs", "list_hits", "HITs")

    def get_hit(self, hit_id: str) -> dict:
        return self._call("GetHIT", "get_hit", HITId=hit_id)["HIT"]

    def add_assignments(self, hit_id: str, count: int, token: str, expected_total: int) -> None:
        """Add ``count`` assignments; a refused repeat is fine when the HIT already has ``expected_total``."""
        try:
            self._call(
                "CreateAdditionalAssignmentsForHIT",
                "create_additional_assignments_for_hit",
                HITId=hit_id,
                NumberOfAdditionalAssignments=count,
                UniqueRequestToken=token,
            )
        except ClientError as exc:
            if error_code(exc) != "RequestError" or self.get_hit(hit_id)["MaxAssignments"] < expected_total:
                raise

    def set_expiration(self, hit_id: str, expire_at: datetime) -> None:
        """Move a HIT's expiry; a time in the past expires it now (MTurk's documented way to stop a HIT)."""
        self._call("UpdateExpirationForHIT", "update_expiration_for_hit", HITId=hit_id, ExpireAt=expire_at)

    # --- assignments -----------------------------------------------------------------------------------
    def iter_assignments(self, hit_id: str) -> Iterator[dict]:
        yield from self._paginate(
            "ListAssignmentsForHIT",
            "list_assignments_for_hit",
            "Assignments",
            HITId=hit_id,
            AssignmentStatuses=["Submitted", "Approved", "Rejected"],
        )

    def get_assignment(self, assignment_id: str) -> dict:
        return self._call("GetAssignment", "get_assignment", AssignmentId=assignment_id)["Assignment"]

    def approve(self, assignment_id: str, feedback: str = "") -> bool:
        """Approve; ``False`` when it was approved already (a repeat), never a second approval."""
        params: dict[str, Any] = {"AssignmentId": assignment_id}
        if feedback:
            params["RequesterFeedback"] = feedback[:1024]
        try:
            self._call("ApproveAssignment", "approve_assignment", **params)
        except ClientError as exc:
            if error_code(exc) != "RequestError" or self._status(assignment_id) != "Approved":
                raise
            return False
        return True

    def reject(self, assignment_id: str, feedback: str) -> bool:
        """Reject with feedback (MTurk requires it); ``False`` when it was rejected already."""
        try:
            self._call(
                "RejectAssignment",
                "reject_assignment",
                AssignmentId=assignment_id,
                RequesterFeedback=feedback[:1024],
            )
        except ClientError as exc:
            if error_code(exc) != "RequestError" or self._status(assignment_id) != "Rejected":
                raise
            return False
        return True

    def _status(self, assignment_id: str) -> str:
        return str(self.get_assignment(assignment_id).get("AssignmentStatus", ""))

    def send_bonus(
        self, worker_id: str, assignment_id: str, amount: Decimal, reason: str, token: str
    ) -> bool:
        """Pay a bonus once: MTurk refuses a reused UniqueRequestToken, and then the bonus is looked up
        among those already paid on the assignment. ``False`` when it had been paid before."""
        try:
            self._call(
                "SendBonus",
                "send_bonus",
                WorkerId=worker_id,
                BonusAmount=str(amount),
                AssignmentId=assignment_id,
                Reason=reason,
                UniqueRequestToken=token,
            )
        except ClientError as exc:
            if error_code(exc) != "RequestError" or not self._bonus_paid(
                assignment_id, worker_id, amount, reason
            ):
                raise
            return False
        return True

    def _bonus_paid(self, assignment_id: str, worker_id: str, amount: Decimal, reason: str) -> bool:
        for bonus in self._paginate(
            "ListBonusPayments", "list_bonus_payments", "BonusPayments", AssignmentId=assignment_id
        ):
            if (
                bonus.get("WorkerId") == worker_id
                and Decimal(str(bonus.get("BonusAmount", "0"))) == amount
                and bonus.get("Reason") == reason
            ):
                return True
        return False

    def notify(self, worker_ids: Iterable[str], subject: str, message: str) -> list[dict]:
        """Message workers, 100 per call (MTurk's limit); returns the per-worker failures MTurk reports."""
        ids = list(dict.fromkeys(worker_ids))
        failures: list[dict] = []
        for start in range(0, len(ids), 100):
            reply = self._call(
                "NotifyWorkers",
                "notify_workers",
                Subject=subject[:200],
                MessageText=message[:4096],
                WorkerIds=ids[start : start + 100],
            )
            failures.extend(reply.get("NotifyWorkersFailureStatuses", []))
        return failures

    def _paginate(self, operation: str, method: str, key: str, **params: Any) -> Iterator[dict]:
        next_token: str | None = None
        while True:
            page = dict(params, MaxResults=100)
            if next_token:
                page["NextToken"] = next_token
            reply = self._call(operation, method, **page)
            yield from reply.get(key, [])
            next_token = reply.get("NextToken")
            if not next_token:
                return


# --- the provider -------------------------------------------------------------------------------------

SESSION_KEY = "hatlab_mturk"
ID_PATTERN = re.compile(r"^[A-Za-z0-9]{1,64}$")
KEY_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,20}$")
EXPIRE_NOW = datetime(2015, 1, 1, tzinfo=UTC)
STATUS = {"Submitted": SUBMITTED, "Approved": APPROVED, "Rejected": REJECTED}


def task_url(study) -> str:
    """The public URL of the study's entry page, which MTurk frames."""
    return settings.HATLAB_PUBLIC_URL.rstrip("/") + reverse("work-entry", args=[study.uid])


def submit_hosts() -> tuple[str, ...]:
    """Sites a finished page may post its externalSubmit form to: MTurk's own, unless the setting
    ``HATLAB_MTURK_SUBMIT_HOSTS`` names others (a local endpoint in tests)."""
    configured = getattr(settings, "HATLAB_MTURK_SUBMIT_HOSTS", None)
    return tuple(h.rstrip("/") for h in configured) if configured else (SANDBOX_WORKER_SITE, LIVE_WORKER_SITE)


def submit_url(turk_submit_to: str, sandbox: bool) -> str:
    """Where the finished page posts: ``{turkSubmitTo}/mturk/externalSubmit`` when turkSubmitTo is a
    known MTurk site (never an arbitrary host from the URL), else the configured site's."""
    base = turk_submit_to.rstrip("/")
    if base not in submit_hosts():
        base = worker_site(sandbox)
    return f"{base}/mturk/externalSubmit"


def publication_token(study, key: str, index: int) -> str:
    if not KEY_PATTERN.match(key):
        raise ProviderConfigError("batch_key", "must be 1-20 letters, digits, '-' or '_'")
    return f"{study.uid.hex}-{key}-{index}"


@register
class MTurkProvider(CrowdProvider):
    """Studies published as batches of MTurk HITs (see the module docstring)."""

    name = NAME
    title = "Amazon Mechanical Turk"
    platform = True
    currency = "USD"

    def __init__(self) -> None:
        self._client: MTurkClient | None = None

    @property
    def client(self) -> MTurkClient:
        if self._client is None:
            self._client = MTurkClient(sandbox=settings.MTURK_SANDBOX, region=settings.MTURK_REGION)
        return self._client

    def use_client(self, client: MTurkClient | None) -> None:
        """Use ``client`` instead of one built from the settings (``None`` goes back to the settings)."""
        self._client = client

    def validate_config(self, config: Any) -> dict[str, Any]:
        MTurkConfig.from_dict(config)
        return dict(config)

    # --- a worker arrives and leaves ----------------------------------------------------------------
    def is_preview(self, request, study) -> bool:
        return request.GET.get("assignmentId") == PREVIEW_ASSIGNMENT_ID

    def identify(self, request, study) -> str | None:
        """The ``workerId`` MTurk put in the URL, for an accepted assignment of one of this study's HITs.
        The assignment and its ``turkSubmitTo`` are kept in the session for :meth:`completion`. Payment
        only ever follows the platform's own list of assignments, so a forged id earns nothing."""
        from annotate.models import Publication

        assignment_id = request.GET.get("assignmentId", "")
        hit_id = request.GET.get("hitId", "")
        worker_id = request.GET.get("workerId", "")
        if assignment_id == PREVIEW_ASSIGNMENT_ID or not all(
            ID_PATTERN.match(v) for v in (assignment_id, hit_id, worker_id)
        ):
            return None
        if not Publication.objects.filter(study=study, provider=self.name, external_id=hit_id).exists():
            return None
        contexts = dict(request.session.get(SESSION_KEY, {}))
        contexts[str(study.uid)] = {
            "assignment_id": assignment_id,
            "hit_id": hit_id,
            "submit_to": request.GET.get("turkSubmitTo", ""),
        }
        request.session[SESSION_KEY] = contexts
        return worker_id

    def _context(self, request, study_uid: str | None) -> dict[str, str]:
        contexts = request.session.get(SESSION_KEY, {}) if hasattr(request, "session") else {}
        if study_uid is not None:
            return contexts.get(study_uid, {})
        return next(iter(contexts.values())) if len(contexts) == 1 else {}

    def assignment_ref(self, request, study) -> str:
        return self._context(request, str(study.uid)).get("assignment_id", "")

    def completion(self, request, assignment_or_worker) -> dict[str, Any]:
        """The externalSubmit form that hands the assignment back to MTurk."""
        context = self._context(request, completion_study_uid(request, assignment_or_worker))
        assignment_id = context.get("assignment_id", "")
        if not assignment_id:
            return {"message": "Thank you! Return to Mechanical Turk to find more work."}
        return {
            "message": "Thank you! Submit your work to Mechanical Turk to finish the HIT.",
            "form": {
                "action": submit_url(context.get("submit_to", ""), settings.MTURK_SANDBOX),
                "fields": {"assignmentId": assignment_id},
            },
        }

    # --- publishing -------------------------------------------------------------------------------------
    def fee(self, study, amount: Decimal, kind: str, places_per_unit: int = 1) -> Decimal:
        return assignment_fee(amount, places_per_unit) if kind == "reward" else bonus_fee(amount)

    def balance(self) -> Balance:
        return Balance(self.client.balance(), self.currency)

    def estimate_cost(self, study) -> CostEstimate:
        config = MTurkConfig.from_dict(study.provider_config)
        fee = assignment_fee(config.reward, config.assignments_per_hit)
        return CostEstimate(
            places=config.places,
            reward=config.reward,
            rewards=config.reward * config.places,
            fees=fee * config.places,
            currency=self.currency,
            balance=self.client.balance(),
        )

    def publish(self, study, batch_key: str) -> list:
        """``hits`` HITs of one HIT type; HITs already made under ``batch_key`` are not made again."""
        from annotate.models import Publication
        from annotate.quality.policy import policy_for

        config = MTurkConfig.from_dict(study.provider_config)
        tokens = [publication_token(study, batch_key, i) for i in range(config.hits)]
        done = set(
            Publication.objects.filter(request_token__in=tokens)
            .exclude(external_id="")
            .values_list("request_token", flat=True)
        )
        if len(done) < len(tokens):
            question = external_question(task_url(study), config.frame_height)
            qualification = (
                self.client.ensure_trust_qualification(config.trust_qualification_name)
                if config.trust_qualification
                else None
            )
            requirements = config.requirements(qualification, policy_for(study).trust_threshold)
            hit_type = self.client.create_hit_type(config, requirements)
            for token in tokens:
                if token in done:
                    continue
                publication, _ = Publication.objects.get_or_create(
                    request_token=token,
                    defaults={
                        "study": study,
                        "provider": self.name,
                        "places": config.assignments_per_hit,
                        "reward": config.reward,
                        "currency": self.currency,
                        "group_id": hit_type,
                        "details": {"batch": batch_key},
                    },
                )
                hit = self.client.create_hit(
                    hit_type, question, config.assignments_per_hit, config.lifetime_s, token
                )
                publication.external_id = hit["HITId"]
                publication.group_id = hit.get("HITTypeId", hit_type)
                publication.status = Publication.Status.OPEN
                publication.expires_at = hit.get("Expiration") or timezone.now() + timedelta(
                    seconds=config.lifetime_s
                )
                publication.details = {**publication.details, "hit_group": hit.get("HITGroupId", "")}
                publication.save()
        return list(Publication.objects.filter(request_token__in=tokens).order_by("id"))

    def _publications(self, study, *statuses: str):
        from annotate.models import Publication

        return Publication.objects.filter(study=study, provider=self.name, status__in=statuses).exclude(
            external_id=""
        )

    def pause(self, study) -> None:
        """MTurk cannot pause a HIT: expiring it hides it, and :meth:`resume` brings it back."""
        from annotate.models import Publication

        for publication in self._publications(study, Publication.Status.OPEN):
            self.client.set_expiration(publication.external_id, EXPIRE_NOW)
            remaining = max(60, int((publication.expires_at - timezone.now()).total_seconds()))
            publication.details = {**publication.details, "remaining_s": remaining}
            publication.status = Publication.Status.PAUSED
            publication.save(update_fields=["details", "status", "updated"])

    def resume(self, study) -> None:
        from annotate.models import Publication

        for publication in self._publications(study, Publication.Status.PAUSED):
            expires = timezone.now() + timedelta(seconds=int(publication.details.get("remaining_s", 86400)))
            self.client.set_expiration(publication.external_id, expires)
            publication.expires_at = expires
            publication.status = Publication.Status.OPEN
            publication.save(update_fields=["expires_at", "status", "updated"])

    def expire(self, study) -> None:
        from annotate.models import Publication

        for publication in self._publications(study, Publication.Status.OPEN, Publication.Status.PAUSED):
            self.client.set_expiration(publication.external_id, EXPIRE_NOW)
            publication.status = Publication.Status.EXPIRED
            publication.expires_at = timezone.now()
            publication.save(update_fields=["status", "expires_at", "updated"])

    def extend(self, study, seconds: int) -> None:
        from annotate.models import Publication

        if not 60 <= seconds <= 31536000:
            raise ProviderConfigError("seconds", "must be between 60 and 31536000")
        for publication in self._publications(study, Publication.Status.OPEN):
            expires = max(publication.expires_at or timezone.now(), timezone.now()) + timedelta(
                seconds=seconds
            )
            self.client.set_expiration(publication.external_id, expires)
            publication.expires_at = expires
            publication.save(update_fields=["expires_at", "updated"])

    def top_up(self, study, places: int, key: str) -> None:
        """Add ``places`` assignments in all, spread over the open HITs. MTurk does not let a HIT made
        with fewer than 10 assignments grow to 10 or more; publish another batch when they are full."""
        from annotate.models import Publication

        if not KEY_PATTERN.match(key):
            raise ProviderConfigError("key", "must be 1-20 letters, digits, '-' or '_'")
        if places < 1:
            raise ProviderConfigError("places", "must be at least 1")
        publications = list(self._publications(study, Publication.Status.OPEN).order_by("id"))
        pending = [p for p in publications if key not in p.details.get("top_ups", {})]
        already = sum(int(p.details["top_ups"][key]) for p in publications if p not in pending)
        plan = _spread(places - already, [(p, p.places) for p in pending])
        if plan is None:
            raise ProviderConfigError(
                "places", "the open HITs cannot take that many more assignments; publish another batch"
            )
        for publication, extra in plan:
            total = publication.places + extra
            self.client.add_assignments(publication.external_id, extra, f"{key}-{publication.pk}", total)
            publication.places = total
            publication.details = {
                **publication.details,
                "top_ups": {**publication.details.get("top_ups", {}), key: extra},
            }
            publication.save(update_fields=["places", "details", "updated"])

    # --- sync and review --------------------------------------------------------------------------------
    def fetch_submissions(self, study) -> Iterator[SubmissionRecord]:
        from annotate.models import Publication

        for publication in Publication.objects.filter(study=study, provider=self.name).exclude(
            external_id=""
        ):
            for assignment in self.client.iter_assignments(publication.external_id):
                raw = str(assignment.get("AssignmentStatus", ""))
                answer = assignment.get("Answer")
                yield SubmissionRecord(
                    publication_id=publication.pk,
                    external_id=assignment["AssignmentId"],
                    worker_external_id=assignment["WorkerId"],
                    status=STATUS.get(raw, raw.lower()),
                    raw_status=raw,
                    started_at=assignment.get("AcceptTime"),
                    submitted_at=assignment.get("SubmitTime"),
                    answer=parse_answer_xml(answer) if answer else {},
                )

    def approve(self, submission, feedback: str = "") -> bool:
        return self.client.approve(submission.external_id, feedback)

    def reject(self, submission, feedback: str) -> bool:
        return self.client.reject(submission.external_id, feedback)

    def send_bonus(self, payment) -> str:
        """MTurk pays a bonus against one of the worker's assignments: the payment's own, else the
        worker's latest in the study."""
        from annotate.models import PlatformSubmission

        submission = payment.submission or (
            PlatformSubmission.objects.filter(study=payment.study, worker=payment.worker, provider=self.name)
            .order_by("-submitted_at", "-id")
            .first()
        )
        if submission is None:
            raise ProviderConfigError(
                "worker", "MTurk pays bonuses only to workers with a submitted assignment"
            )
        self.client.send_bonus(
            payment.worker.external_id,
            submission.external_id,
            payment.amount,
            payment.reason,
            payment.request_token,
        )
        return submission.external_id

    # --- trust, blocks, messages ------------------------------------------------------------------------
    def mirror_trust(self, study, worker, trust: float | None, excluded: bool, mode: str) -> bool:
        config = MTurkConfig.from_dict(study.provider_config)
        if mode == "qualification" and config.trust_qualification:
            qualification = self.client.ensure_trust_qualification(config.trust_qualification_name)
            self.client.set_qualification(
                qualification, worker.external_id, 100 if trust is None else trust_score(trust)
            )
            return excluded
        if mode == "platform" and excluded:
            self.client.block_worker(
                worker.external_id, "Too many hidden check questions answered incorrectly."
            )
            return True
        return False

    def unblock(self, study, worker, reason: str) -> None:
        config = MTurkConfig.from_dict(study.provider_config)
        if config.trust_qualification:
            qualification = self.client.ensure_trust_qualification(config.trust_qualification_name)
            self.client.set_qualification(qualification, worker.external_id, 100)
        try:
            self.client.unblock_worker(worker.external_id, reason)
        except ClientError as exc:
            if error_code(exc) != "RequestError":
                raise

    def notify(self, study, workers: Iterable, subject: str, message: str) -> list[str]:
        ids = [w.external_id for w in workers if w.provider == self.name]
        return [f.get("WorkerId", "") for f in self.client.notify(ids, subject, message)]


def _spread(total: int, capacities: list[tuple[Any, int]]) -> list[tuple[Any, int]] | None:
    """Spread ``total`` extra assignments round-robin over HITs of the given current sizes, keeping
    each HIT made with fewer than 10 assignments below 10; ``None`` when they cannot take it all."""
    if total <= 0:
        return []
    room = [
        (hit, (LARGE_HIT_ASSIGNMENTS - 1 - size) if size < LARGE_HIT_ASSIGNMENTS else total)
        for hit, size in capacities
    ]
    extra = [0] * len(room)
    left = total
    while left:
        progressed = False
        for i, (_, cap) in enumerate(room):
            if left and extra[i] < cap:
                extra[i] += 1
                left -= 1
                progressed = True
        if not progressed:
            return None
    return [(room[i][0], n) for i, n in enumerate(extra) if n]
