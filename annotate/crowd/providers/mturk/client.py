"""The MTurk requester API through boto3: plain data in, plain data out.

Endpoints are the sandbox's or the live site's (``make_client(sandbox)``); credentials come only from
boto3's environment chain (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` or ``AWS_PROFILE``). boto3's
own retries are switched off so that every attempt goes through
:func:`annotate.crowd.providers.base.retry.call_with_retry` (one policy, every attempt logged). The request
shapes are those of the MTurk API reference (docs.aws.amazon.com/AWSMechTurk/latest/AWSMturkAPI), which
the tests check against botocore's model of the service.

A HIT frames our HTTPS task URL in an ExternalQuestion (MTurk adds ``assignmentId``, ``hitId``,
``workerId`` and ``turkSubmitTo``); what the worker's page posts back arrives in the assignment's
QuestionFormAnswers XML, read by :func:`parse_answer_xml`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any
from xml.sax.saxutils import escape

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionError, ConnectTimeoutError, ReadTimeoutError
from defusedxml import ElementTree

from annotate.crowd.providers.base.retry import DEFAULT_BACKOFF, Backoff, ProviderConfigError, call_with_retry
from annotate.crowd.providers.mturk.settings import MTurkConfig

PLATFORM = "mturk"
SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
LIVE_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
SANDBOX_WORKER_SITE = "https://workersandbox.mturk.com"
LIVE_WORKER_SITE = "https://www.mturk.com"

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
    """A boto3 MTurk client on the sandbox or live endpoint, without boto3's own retries.

    Built on a session of its own, not boto3's default one: the default session keeps the credentials it
    found first for the life of the process, so a client made after they left the environment would still
    sign with them while :func:`~annotate.crowd.providers.mturk.adapter.local_credentials` (a fresh
    session) says there are none."""
    return boto3.session.Session().client(
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
            PLATFORM, operation, lambda: fn(**params), classify_error, backoff=self.backoff, sleep=self.sleep
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
