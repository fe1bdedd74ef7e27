"""Amazon Mechanical Turk as a crowd provider: studies published as batches of HITs.

Amazon closed MTurk to new requesters on 30 July 2026; existing accounts keep working, so this provider
stays, beside Prolific and the local crowd, and no flow depends on it alone.

How a study runs on MTurk
  * One HIT type per publication batch (:mod:`annotate.crowd.providers.mturk.settings`: title, reward, times,
    qualification requirements) and ``hits`` HITs of that type, each framing the study's entry page.
  * The page shows a read-only preview while ``assignmentId`` is ``ASSIGNMENT_ID_NOT_AVAILABLE`` and, once
    the worker is done, posts a form to ``{turkSubmitTo}/mturk/externalSubmit`` with the ``assignmentId``
    and a ``hatlab`` field holding a copy of the answers, so reconciliation can recover any we never
    stored.
  * Approve / reject with feedback, bonuses with a UniqueRequestToken, notifications, expiry and
    extension, extra assignments, worker blocks, the account balance, through
    :class:`~annotate.crowd.providers.mturk.client.MTurkClient`.

The sandbox or live site is chosen by ``settings.MTURK_SANDBOX``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import botocore.session
from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError
from django.conf import settings
from django.utils import timezone

from annotate.crowd.providers import PROVIDERS
from annotate.crowd.providers.base import (
    APPROVED,
    REJECTED,
    SUBMITTED,
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
from annotate.crowd.providers.base.settings import ID_PATTERN, checked_key
from annotate.crowd.providers.mturk.client import (
    PLATFORM,
    MTurkClient,
    error_code,
    external_question,
    parse_answer_xml,
    worker_site,
)
from annotate.crowd.providers.mturk.settings import (
    LARGE_HIT_ASSIGNMENTS,
    MTurkConfig,
    assignment_fee,
    bonus_fee,
    trust_score,
)
from annotate.models import PlatformSubmission, Publication
from annotate.quality.policy import policy_for

NAME = PLATFORM
PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
EXPIRE_NOW = datetime(2015, 1, 1, tzinfo=UTC)
STATUS = {"Submitted": SUBMITTED, "Approved": APPROVED, "Rejected": REJECTED}
# Error codes of AWS requests signed with unknown, wrong or expired keys.
REFUSED_CREDENTIALS = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "ExpiredTokenException",
        "AccessDeniedException",
        "AuthFailure",
    }
)


def local_credentials() -> bool:
    """Whether boto3 finds AWS credentials on this machine (environment, profile, shared files), without
    asking an instance or container metadata service."""
    resolver = botocore.session.get_session().get_component("credential_provider")
    for name in ("iam-role", "container-role"):
        resolver.remove(name)
    return resolver.load_credentials() is not None


def submit_hosts() -> tuple[str, ...]:
    """Sites a finished page may post its externalSubmit form to: ``HATLAB_MTURK_SUBMIT_HOSTS`` (MTurk's
    worker sites; a local endpoint in tests)."""
    return tuple(h.rstrip("/") for h in settings.HATLAB_MTURK_SUBMIT_HOSTS)


def submit_url(turk_submit_to: str, sandbox: bool) -> str:
    """Where the finished page posts: ``{turkSubmitTo}/mturk/externalSubmit`` when turkSubmitTo is a
    known MTurk site (never an arbitrary host from the URL), else the configured site's."""
    base = turk_submit_to.rstrip("/")
    if base not in submit_hosts():
        base = worker_site(sandbox)
    return f"{base}/mturk/externalSubmit"


def publication_token(study, batch_key: str, index: int) -> str:
    return f"{study.uid.hex}-{checked_key(batch_key, 'batch_key')}-{index}"


class MTurkProvider(PlatformProvider[MTurkClient, MTurkConfig]):
    """Studies published as batches of MTurk HITs (see the module docstring)."""

    name = NAME
    title = "Amazon Mechanical Turk"
    currency = "USD"

    def make_client(self) -> MTurkClient:
        return MTurkClient(sandbox=settings.MTURK_SANDBOX, region=settings.MTURK_REGION)

    def parse_settings(self, config: Any) -> MTurkConfig:
        return MTurkConfig.from_dict(config)

    # --- a worker arrives and leaves ----------------------------------------------------------------
    def is_preview(self, request, study) -> bool:
        return request.GET.get("assignmentId") == PREVIEW_ASSIGNMENT_ID

    def identify(self, request, study) -> str | None:
        """The ``workerId`` MTurk put in the URL of an accepted assignment (not a preview). Anyone can
        type such a URL: :meth:`verify_entry` decides what the id is worth."""
        assignment_id = request.GET.get("assignmentId", "")
        hit_id = request.GET.get("hitId", "")
        worker_id = request.GET.get("workerId", "")
        if assignment_id == PREVIEW_ASSIGNMENT_ID or not all(
            ID_PATTERN.match(v) for v in (assignment_id, hit_id, worker_id)
        ):
            return None
        return worker_id

    def verify_entry(self, request, study, external_id: str) -> Entry:
        """Refuse a HIT that is not one of this study's, and an ``assignmentId`` already used by another
        worker or under another HIT (the first ``workerId`` and ``hitId`` to use an assignment keep it).
        Otherwise admit, with answers provisional: MTurk says who did an assignment only once it is
        submitted, so reconciliation verifies them when ``ListAssignmentsForHIT`` lists the same
        assignment, worker and HIT. The assignment and its ``turkSubmitTo`` are kept in the session for
        :meth:`completion`."""
        assignment_id = request.GET["assignmentId"]
        hit_id = request.GET["hitId"]
        if not self.published(study, hit_id):
            return Entry.refuse("This HIT is not part of this study.")
        refused = bind_entry(study, self.name, assignment_id, external_id, hit_id)
        if refused:
            return Entry.refuse(refused)
        self.remember(
            request,
            study,
            {
                "assignment_id": assignment_id,
                "hit_id": hit_id,
                "submit_to": request.GET.get("turkSubmitTo", ""),
            },
        )
        return Entry(ref=assignment_id, verified=False)

    def confirmation_window_s(self, study) -> int:
        """A worker has the HIT type's assignment duration to submit an accepted assignment."""
        return self.settings_of(study).assignment_duration_s

    def claimed_ref(self, request) -> str:
        return request.GET.get("assignmentId", "")

    def assignment_ref(self, request, study) -> str:
        return self.context(request, str(study.uid)).get("assignment_id", "")

    def completion(self, request, assignment_or_worker) -> dict[str, Any]:
        """The externalSubmit form that hands the assignment back to MTurk."""
        context = self.context(request, completion_study_uid(request, assignment_or_worker))
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

    def estimate_for(self, places: int, reward: Decimal, assignments_per_hit: int) -> CostEstimate:
        """``places`` assignments at ``reward`` each, on HITs of ``assignments_per_hit`` assignments."""
        fee = assignment_fee(reward, assignments_per_hit)
        return CostEstimate(
            places=places, reward=reward, rewards=reward * places, fees=fee * places, currency=self.currency
        )

    def local_estimate(self, study) -> CostEstimate:
        config = self.settings_of(study)
        return self.estimate_for(config.places, config.reward, config.assignments_per_hit)

    def plan_estimate(self, study, places: int, reward: Decimal) -> CostEstimate:
        """On the study's HITs of ``assignments_per_hit``; a study not set up for MTurk on HITs of at
        most 9 assignments, the largest MTurk charges no extra 20 % on."""
        config = self.own_settings(study)
        per_hit = config.assignments_per_hit if config else max(1, min(places, LARGE_HIT_ASSIGNMENTS - 1))
        return self.estimate_for(places, reward, per_hit)

    def credentials_precondition(self) -> Precondition:
        if self.client_given or local_credentials():
            return Precondition("Credentials", True)
        return Precondition(
            "Credentials", False, self.explain_error(NoCredentialsError()) or "", "credentials"
        )

    def publish_preconditions(self, study) -> list[Precondition]:
        """The settings, the credentials, and an HTTPS public address: MTurk frames only HTTPS pages."""
        url = entry_url(study)
        if url.startswith("https://"):
            https = Precondition("HTTPS task address", True)
        else:
            https = Precondition(
                "HTTPS task address",
                False,
                f"MTurk shows only HTTPS task pages and the task's address is {url}: set HATLAB_PUBLIC_URL "
                "in the server's environment to the server's public https:// address.",
                "HATLAB_PUBLIC_URL",
            )
        return [*super().publish_preconditions(study), https]

    def estimate_cost(self, study) -> CostEstimate:
        return replace(self.local_estimate(study), balance=self.client.balance())

    def target(self) -> tuple[str, bool]:
        if settings.MTURK_SANDBOX:
            return "the MTurk sandbox (test workers, no money is paid; MTURK_SANDBOX is on)", False
        return "MTurk production: real workers are paid real money (MTURK_SANDBOX is off)", True

    def explain_error(self, exc: BaseException) -> str | None:
        """Missing credentials (boto3 found none) or credentials MTurk refused, as a sentence."""
        site = "sandbox" if settings.MTURK_SANDBOX else "production"
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return (
                "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) in the server's "
                f"environment to reach MTurk's {site}."
            )
        if isinstance(exc, ClientError) and error_code(exc) in REFUSED_CREDENTIALS:
            return (
                f"MTurk's {site} refused the credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: "
                f"check them, and that the AWS account is linked to an MTurk requester account."
            )
        return None

    def publish(self, study, batch_key: str) -> list:
        """``hits`` HITs of one HIT type; HITs already made under ``batch_key`` are not made again."""
        config = self.settings_of(study)
        tokens = [publication_token(study, batch_key, i) for i in range(config.hits)]
        done = set(
            Publication.objects.filter(request_token__in=tokens)
            .exclude(external_id="")
            .values_list("request_token", flat=True)
        )
        if len(done) < len(tokens):
            question = external_question(entry_url(study), config.frame_height)
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

    def pause(self, study) -> None:
        """MTurk cannot pause a HIT: expiring it hides it, and :meth:`resume` brings it back."""
        for publication in self.publications(study, Publication.Status.OPEN):
            self.client.set_expiration(publication.external_id, EXPIRE_NOW)
            remaining = max(60, int((publication.expires_at - timezone.now()).total_seconds()))
            publication.details = {**publication.details, "remaining_s": remaining}
            publication.status = Publication.Status.PAUSED
            publication.save(update_fields=["details", "status", "updated"])

    def resume(self, study) -> None:
        for publication in self.publications(study, Publication.Status.PAUSED):
            expires = timezone.now() + timedelta(seconds=int(publication.details.get("remaining_s", 86400)))
            self.client.set_expiration(publication.external_id, expires)
            publication.expires_at = expires
            publication.status = Publication.Status.OPEN
            publication.save(update_fields=["expires_at", "status", "updated"])

    def expire(self, study) -> None:
        for publication in self.publications(study, Publication.Status.OPEN, Publication.Status.PAUSED):
            self.client.set_expiration(publication.external_id, EXPIRE_NOW)
            publication.status = Publication.Status.EXPIRED
            publication.expires_at = timezone.now()
            publication.save(update_fields=["status", "expires_at", "updated"])

    def extend(self, study, seconds: int) -> None:
        if not 60 <= seconds <= 31536000:
            raise ProviderConfigError("seconds", "must be between 60 and 31536000")
        for publication in self.publications(study, Publication.Status.OPEN):
            expires = max(publication.expires_at or timezone.now(), timezone.now()) + timedelta(
                seconds=seconds
            )
            self.client.set_expiration(publication.external_id, expires)
            publication.expires_at = expires
            publication.save(update_fields=["expires_at", "updated"])

    def top_up(self, study, places: int, key: str) -> None:
        """Add ``places`` assignments in all, spread over the open HITs. MTurk does not let a HIT made
        with fewer than 10 assignments grow to 10 or more; publish another batch when they are full."""
        checked_key(key, "key")
        if places < 1:
            raise ProviderConfigError("places", "must be at least 1")
        publications = list(self.publications(study, Publication.Status.OPEN).order_by("id"))
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
    def records(self, publication: Publication) -> Iterator[SubmissionRecord]:
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
        config = self.settings_of(study)
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
        config = self.settings_of(study)
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


PROVIDERS.add(NAME, MTurkProvider(), settings=MTurkConfig, bonuses=True, blocks=True)
