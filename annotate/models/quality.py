"""Quality control: a study's gold policy, each worker's trust, and the review state of each gold item.

Trust is the share of gold items a worker passed, kept with its Wilson interval (Pappas & Popescu-Belis
2016 §3: only workers with trust >= 0.70 count). ``WorkerTrust`` and ``GoldReview`` are caches recomputed from
``Response.gold_passed`` by ``annotate.quality``; the policy row is the researcher's choice.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from annotate.models.crowd import Worker
from annotate.models.studies import Item, Study

_share = [MinValueValidator(0.0), MaxValueValidator(1.0)]


class QualityPolicy(models.Model):
    """How a study mixes gold items in, judges workers by them, and treats those it excludes."""

    class ExcludedAction(models.TextChoices):
        APPROVE = "approve", "Approve (pay) but exclude from results"
        REJECT = "reject", "Reject on the platform"

    class BlockMode(models.TextChoices):
        NONE = "none", "Do not block"
        QUALIFICATION = "qualification", "Lower the platform trust qualification / block-list"
        PLATFORM = "platform", "Block on the platform"

    class Review(models.TextChoices):
        AUTO = "auto", "Approve / reject during reconciliation"
        MANUAL = "manual", "Researcher reviews by hand"

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="quality_policy")
    trust_threshold = models.FloatField(default=0.70, validators=_share)
    min_golds = models.PositiveSmallIntegerField(
        default=4, help_text="Golds a worker must have answered before trust can exclude them."
    )
    confidence = models.FloatField(
        default=0.95, validators=[MinValueValidator(0.5), MaxValueValidator(0.999)]
    )
    excluded_action = models.CharField(
        max_length=10, choices=ExcludedAction.choices, default=ExcludedAction.APPROVE
    )
    block_mode = models.CharField(max_length=20, choices=BlockMode.choices, default=BlockMode.NONE)
    review = models.CharField(max_length=10, choices=Review.choices, default=Review.AUTO)
    rejection_feedback = models.TextField(
        default="Too many of the hidden check questions in this task were answered incorrectly."
    )
    fast_ratio = models.FloatField(
        default=0.33, validators=_share, help_text="Answers faster than this share of the median are marked."
    )
    gold_flag_min_trusted = models.PositiveSmallIntegerField(
        default=5, help_text="Trusted workers who must have seen a gold before it can be flagged."
    )
    gold_flag_miss_rate = models.FloatField(
        default=0.5, validators=_share, help_text="Flag a gold when trusted workers miss it this often."
    )

    class RiskAction(models.TextChoices):
        REVIEW = "review", "Show the risk; a researcher decides"
        EXCLUDE = "exclude", "Exclude workers over the risk threshold from the results"

    max_wpm = models.FloatField(
        default=714.0,
        validators=[MinValueValidator(1.0)],
        help_text="Words per minute above which an answer was not read (3 x 238, the silent reading rate of "
        "Brysbaert 2019).",
    )
    risk_threshold = models.FloatField(
        default=0.5, validators=_share, help_text="Risk score (0-1) from which a worker is flagged."
    )
    risk_action = models.CharField(max_length=10, choices=RiskAction.choices, default=RiskAction.REVIEW)

    def __str__(self) -> str:
        return f"quality policy of {self.study_id}"


class WorkerTrust(models.Model):
    """A worker's gold record in one study."""

    class Status(models.TextChoices):
        PENDING = "pending", "Too few golds yet"
        TRUSTED = "trusted", "Trusted"
        EXCLUDED = "excluded", "Excluded"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="worker_trust")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="trust")
    golds_seen = models.PositiveIntegerField(default=0)
    golds_passed = models.PositiveIntegerField(default=0)
    trust = models.FloatField(null=True, blank=True)
    trust_low = models.FloatField(null=True, blank=True)
    trust_high = models.FloatField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    blocked = models.BooleanField(
        default=False, help_text="Kept out (here and on the platform) for low trust."
    )

    class RiskExclusion(models.TextChoices):
        NONE = "", "Not excluded for risk"
        AUTO = "auto", "Excluded by the study's risk policy"
        RESEARCHER = "researcher", "Excluded by a researcher"
        KEPT = "kept", "Kept in by a researcher"

    # the risk_exclusion values that leave a worker's answers out of results
    RISK_EXCLUDED = (RiskExclusion.AUTO, RiskExclusion.RESEARCHER)

    mirrored = models.CharField(
        max_length=10, blank=True, default="", help_text="The status last mirrored on the crowd platform."
    )
    risk_exclusion = models.CharField(
        max_length=10,
        choices=RiskExclusion.choices,
        blank=True,
        default="",
        help_text="Whether the worker's answers are left out for their risk score (a researcher's choice stands).",
    )
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study_id", "worker_id"]
        constraints = [models.UniqueConstraint(fields=["study", "worker"], name="worker_trust_unique")]

    def __str__(self) -> str:
        return f"{self.worker} in {self.study_id}: {self.golds_passed}/{self.golds_seen} ({self.status})"


class WorkerBlock(models.Model):
    """A researcher keeps ``worker`` out of every study they own (and only theirs): a block is the
    blocking researcher's, and only they, or an admin, lift it. ``Worker.status`` is the site-wide block,
    an admin's alone."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker_blocks"
    )
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="blocks")
    study = models.ForeignKey(
        Study, on_delete=models.SET_NULL, null=True, blank=True, help_text="The study the block was made in."
    )
    reason = models.CharField(max_length=500, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "worker"], name="worker_block_unique_per_owner")
        ]

    def __str__(self) -> str:
        return f"{self.worker} blocked by {self.owner_id}"


class GoldReview(models.Model):
    """How often a gold item is missed, overall and by trusted workers. A gold that most trusted workers
    miss is probably wrong: it is flagged for an admin to fix or retire, after which answers are re-graded."""

    class Resolution(models.TextChoices):
        OPEN = "", "Open"
        KEPT = "kept", "Kept as is"
        FIXED = "fixed", "Answer fixed"
        RETIRED = "retired", "Retired"

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="gold_review")
    seen = models.PositiveIntegerField(default=0)
    missed = models.PositiveIntegerField(default=0)
    trusted_seen = models.PositiveIntegerField(default=0)
    trusted_missed = models.PositiveIntegerField(default=0)
    flagged = models.BooleanField(default=False)
    resolution = models.CharField(max_length=10, choices=Resolution.choices, blank=True, default="")
    note = models.TextField(blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item_id"]

    def __str__(self) -> str:
        return f"gold {self.item_id}: missed {self.missed}/{self.seen}"
