"""Crowd work: workers, their assignments to items, and the responses they submit."""

from __future__ import annotations

import hashlib
import hmac
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotate.models.studies import Item, Study


def pseudonym(owner_id: int | None, provider: str, external_id: str, prefix: str = "w") -> str:
    """A platform id as one researcher sees it: an HMAC of the id keyed by the app's secret and the
    researcher (the study's owner). Stable within one researcher's studies, so their exports join; a
    different name for every other researcher, so one who knows a platform id (their own workers, a
    worker of two studies) cannot find it in another researcher's export. No platform id leaves the app."""
    message = f"{owner_id}:{provider}:{external_id}".encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()
    return f"{prefix}{digest[:10]}"


class Worker(models.Model):
    """A person who annotates: an account, an invite-link holder, or a crowd platform's worker id."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        BLOCKED = "blocked", "Blocked"

    provider = models.CharField(max_length=40, default="local")
    external_id = models.CharField(max_length=200)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="worker"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="worker_unique_per_provider"),
        ]

    def __str__(self) -> str:
        return self.anonymous_id

    @property
    def anonymous_id(self) -> str:
        """The site-wide pseudonym, for admins and logs only: what researchers see is
        :meth:`pseudonym_for` their own account."""
        digest = hashlib.sha256(
            f"{settings.SECRET_KEY}:{self.provider}:{self.external_id}".encode()
        ).hexdigest()
        return f"w{digest[:10]}"

    def pseudonym_for(self, owner_id: int | None) -> str:
        """The worker's name in the pages and exports of the researcher ``owner_id`` (see :func:`pseudonym`)."""
        return pseudonym(owner_id, self.provider, self.external_id)


class Assignment(models.Model):
    """One worker's slot on one item. Every item has ``responses_needed`` slots; a live
    assignment (assigned or submitted) holds one, enforced by a partial unique constraint.

    ``provisional`` marks an assignment handed to a seat the platform has not confirmed (see
    :mod:`annotate.handout.assignment`): it never keeps a confirmed worker from the item, and it is
    cleared when reconciliation verifies its answer. A worker id may hold one live assignment per item
    and platform unit (``provider_assignment_id``), so an unconfirmed claim to a worker's id on another
    unit never takes that worker's place."""

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        SUBMITTED = "submitted", "Submitted"
        RELEASED = "released", "Released"

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # not indexed on its own: see assignment_open_expiry_idx
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    # indexed by assignment_worker_idx, which leads with it: every index is rewritten on each status change
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    slot = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ASSIGNED)
    assigned_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    provider_assignment_id = models.CharField(max_length=200, blank=True, default="")
    provisional = models.BooleanField(default=False, db_default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "worker", "provider_assignment_id"],
                condition=~Q(status="released"),
                name="assignment_one_live_per_worker_item",
            ),
            models.UniqueConstraint(
                fields=["item", "slot"],
                condition=~Q(status="released"),
                name="assignment_one_live_per_slot",
            ),
        ]
        indexes = [
            models.Index(fields=["worker", "study", "status"], name="assignment_worker_idx"),
            # The hand-out's two questions about open assignments, each with an index only it can use (the
            # planner picks among tied indexes by chance on a table it has not analysed, and keeps the plan
            # for the connection). Each condition has a clause that is always true (the column is never
            # NULL) and that only a query naming that column implies.
            # The study's open assignments by expiry, for the release of expired ones: with no index on the
            # study alone (the foreign key's, through which the release read all the study's assignments) and
            # the held one out of its reach, the only index it can be planned through.
            models.Index(
                fields=["study", "expires_at"],
                condition=Q(status="assigned") & Q(expires_at__isnull=False),
                name="assignment_open_expiry_idx",
            ),
            # A worker's open assignment in a study under a platform unit: one probe, where the expiry index
            # would walk every open assignment of the study.
            models.Index(
                fields=["worker", "study"],
                condition=Q(status="assigned") & Q(provider_assignment_id__isnull=False),
                name="assignment_held_idx",
            ),
            # the study's live unconfirmed holders: the hand-out's overflow pass runs only when there is one
            models.Index(
                fields=["study"],
                condition=Q(provisional=True) & ~Q(status="released"),
                name="assignment_unconfirmed_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.worker} on {self.item_id} ({self.status})"


class ResponseQuerySet(models.QuerySet):
    def counted(self) -> ResponseQuerySet:
        """The responses that count in results: verified ones (a platform confirmed the worker's
        submission, or the provider vouched for the worker at entry). Provisional and set-aside
        responses stay out of results, dashboards, aggregation, trust and exports."""
        return self.filter(verification=Response.Verification.VERIFIED)


class Response(models.Model):
    """A submitted answer. ``submission_key`` makes a retried POST store one response.

    ``verification`` says whether it counts: *verified* answers do; *provisional* ones wait for the
    crowd platform to confirm the worker's submission (they hold their item's slot meanwhile); *set
    aside* ones were never confirmed and gave their slot back."""

    class Verification(models.TextChoices):
        VERIFIED = "verified", "Verified"
        PROVISIONAL = "provisional", "Provisional"
        SET_ASIDE = "set_aside", "Set aside"

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="response")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="responses")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="responses")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="responses")
    submission_key = models.UUIDField(unique=True)
    answer = models.JSONField(help_text="Kind-specific answer, validated by the task kind.")
    read_ms = models.PositiveIntegerField(null=True, blank=True)
    answer_ms = models.PositiveIntegerField(null=True, blank=True, help_text="Highlight / answering time.")
    signals = models.JSONField(default=dict, blank=True, help_text="Focus changes, pastes, timings.")
    gold_passed = models.BooleanField(null=True, blank=True)
    verification = models.CharField(
        max_length=12,
        choices=Verification.choices,
        default=Verification.VERIFIED,
        db_default=Verification.VERIFIED,  # the hand-written INSERT of the hot path may leave it out
    )
    created = models.DateTimeField(auto_now_add=True)

    objects = ResponseQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["study", "worker"], name="response_study_worker_idx"),
            # only the few not yet verified: reconciliation and the study page's counts look them up
            models.Index(
                fields=["study", "verification"],
                condition=~Q(verification="verified"),
                name="response_unverified_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"response {self.pk} to item {self.item_id}"
