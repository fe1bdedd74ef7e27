"""Crowd-platform records: what we published, what the platform says was submitted, what we paid.

These rows make every platform action idempotent: a publication, a review decision and a payment are
written (with a unique request token) before the platform is called, and marked done after, so a retried
job neither publishes, approves nor pays twice.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotate.models.crowd import Worker
from annotate.models.studies import Study


class Publication(models.Model):
    """One unit published on a platform for a study: an MTurk HIT, or a Prolific study."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        OPEN = "open", "Open"
        PAUSED = "paused", "Paused"
        EXPIRED = "expired", "Expired"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="publications")
    provider = models.CharField(max_length=40)
    request_token = models.CharField(
        max_length=64, unique=True, help_text="Sent as the platform's idempotency token when it has one."
    )
    external_id = models.CharField(max_length=200, blank=True, default="")
    group_id = models.CharField(
        max_length=200, blank=True, default="", help_text="MTurk HIT type; empty for Prolific."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    places = models.PositiveIntegerField(help_text="MaxAssignments on MTurk, total places on Prolific.")
    reward = models.DecimalField(max_digits=10, decimal_places=2)
    currency = models.CharField(max_length=3, default="USD")
    expires_at = models.DateTimeField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "external_id"],
                condition=~Q(external_id=""),
                name="publication_unique_external_id",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.external_id or self.request_token} ({self.status})"


class PlatformSubmission(models.Model):
    """The platform's record of one worker's unit of work (an MTurk assignment, a Prolific submission),
    kept beside ours so reconciliation can compare them, recover lost answers and review each once."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        MATCHED = "matched", "Matched"
        RECOVERED = "recovered", "Recovered"
        FLAGGED = "flagged", "Flagged"
        RELEASED = "released", "Released"

    class Decision(models.TextChoices):
        NONE = "", "Undecided"
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"

    publication = models.ForeignKey(Publication, on_delete=models.CASCADE, related_name="submissions")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="platform_submissions")
    provider = models.CharField(max_length=40)
    external_id = models.CharField(max_length=200)
    worker = models.ForeignKey(
        Worker, on_delete=models.SET_NULL, null=True, blank=True, related_name="platform_submissions"
    )
    worker_external_id = models.CharField(max_length=200)
    platform_status = models.CharField(max_length=40)
    submitted_at = models.DateTimeField(null=True, blank=True)
    answer = models.JSONField(
        default=dict, blank=True, help_text="The platform's copy of the answer (MTurk answer XML fields)."
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING)
    flag_reason = models.TextField(blank=True)
    responses_ours = models.PositiveIntegerField(default=0)
    responses_recovered = models.PositiveIntegerField(default=0)
    decision = models.CharField(max_length=10, choices=Decision.choices, blank=True, default="")
    decision_feedback = models.TextField(blank=True)
    decision_sent = models.BooleanField(default=False)
    decided_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="platform_submission_unique"),
        ]
        indexes = [models.Index(fields=["study", "state"], name="platform_submission_state_idx")]

    def __str__(self) -> str:
        return f"{self.provider} {self.external_id} ({self.platform_status}, {self.state})"


class Payment(models.Model):
    """Money sent to a worker: a reward (on approval) or a bonus. ``request_token`` is unique, so the
    same payment is recorded once however often the job runs, and is sent as MTurk's UniqueRequestToken."""

    class Kind(models.TextChoices):
        REWARD = "reward", "Reward"
        BONUS = "bonus", "Bonus"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="payments")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="payments")
    submission = models.ForeignKey(
        PlatformSubmission, on_delete=models.SET_NULL, null=True, blank=True, related_name="payments"
    )
    provider = models.CharField(max_length=40)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    fee = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0.00"))
    currency = models.CharField(max_length=3, default="USD")
    request_token = models.CharField(max_length=64, unique=True)
    reason = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    external_ref = models.CharField(max_length=200, blank=True, default="")
    error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["study", "status"], name="payment_study_status_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} {self.currency} to {self.worker} ({self.status})"


class EntryBinding(models.Model):
    """A platform's unit of work (an MTurk assignment, a Prolific session, a local invite) bound to the
    first person who used it: ``holder`` is who that was (a worker id, an account, a browser) and
    ``scope`` where it came from (the HIT, the Prolific study). Anyone else arriving with the same unit
    is refused at the entry page, so one worker's assignment cannot be taken over by another id."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="entry_bindings")
    provider = models.CharField(max_length=40)
    ref = models.CharField(max_length=200)
    holder = models.CharField(max_length=200)
    scope = models.CharField(max_length=200, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "ref"], name="entry_binding_unique_ref"),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.ref} held by {self.holder}"


class Invite(models.Model):
    """A personal invite link of a study of the local provider, kept so the study page can list it,
    hand it out again and revoke it. ``invitee`` is the name signed into the token; the invite is
    *used* once an :class:`EntryBinding` holds it, and *revoked* once ``revoked_at`` is set (the entry
    page then refuses it)."""

    class State(models.TextChoices):
        UNUSED = "unused", "Unused"
        USED = "used", "Used"
        REVOKED = "revoked", "Revoked"

    #: The worker an invite admits: of the local provider, its ``external_id`` this prefix and the invitee.
    PROVIDER = "local"
    WORKER_PREFIX = "invite:"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invites")
    invitee = models.CharField(max_length=64)
    token = models.TextField(help_text="The signed token of the link (django.core.signing).")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "invitee"], name="invite_unique_invitee"),
        ]

    def __str__(self) -> str:
        return f"invite {self.invitee} of {self.study_id}"


class CrowdAction(models.Model):
    """One action a researcher took on a study's crowd platform (publish, add places, pause, approve,
    bonus, ...), the audit log shown on the crowd page. ``key`` is the form's one-time key: the same
    form sent twice finds this row and does nothing more."""

    class Outcome(models.TextChoices):
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        REFUSED = "refused", "Refused"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="crowd_actions")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=20)
    key = models.CharField(max_length=64)
    params = models.JSONField(default=dict, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.RUNNING)
    result = models.JSONField(default=dict, blank=True)
    message = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "key"], name="crowd_action_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.action} on {self.study_id} ({self.outcome})"

    @staticmethod
    def _words(values: dict) -> str:
        def one(value) -> str:
            if isinstance(value, bool):
                return "yes" if value else "no"
            return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)

        return "; ".join(f"{k.replace('_', ' ')} {one(v)}" for k, v in values.items())

    @property
    def params_text(self) -> str:
        """The action's parameters in words (for the log on the page)."""
        return self._words(self.params)

    @property
    def result_text(self) -> str:
        return self._words(self.result)
