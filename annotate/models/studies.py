"""Studies and their items. A study is data: one task kind plus a config its kind validates."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from annotate.models.corpus import Dataset, Document


class Study(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        FINISHED = "finished", "Finished"

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="studies")
    dataset = models.ForeignKey(
        Dataset, on_delete=models.PROTECT, related_name="studies", null=True, blank=True
    )
    kind = models.CharField(max_length=40, help_text="A task kind from annotate.tasks.TASK_KINDS.")
    config = models.JSONField(default=dict, blank=True, help_text="Validated by the task kind's schema.")
    instructions = models.TextField(blank=True)
    annotators_per_item = models.PositiveSmallIntegerField(default=3)
    time_limit_s = models.PositiveIntegerField(
        default=1800, help_text="An assignment not submitted within this many seconds is released."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT)
    provider = models.CharField(
        max_length=40, default="local", help_text="A crowd provider from the registry."
    )
    provider_config = models.JSONField(default=dict, blank=True)
    protocol = models.JSONField(
        default=dict,
        blank=True,
        help_text="Consent, questionnaires, screening and the worker's controls (annotate.protocol).",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name


class Item(models.Model):
    """One question of a study. ``payload`` is what the annotator may see; ``secret`` holds what
    must never reach the browser (gold answers, method names, true classes, model order)."""

    # indexed by item_open_idx, which leads with it (fewer indexes to rewrite as responses are counted)
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items", db_index=False)
    document = models.ForeignKey(
        Document, on_delete=models.PROTECT, related_name="items", null=True, blank=True
    )
    position = models.PositiveIntegerField(default=0)
    payload = models.JSONField(default=dict, blank=True)
    secret = models.JSONField(default=dict, blank=True)
    is_gold = models.BooleanField(default=False)
    retired = models.BooleanField(default=False, help_text="A gold item taken out of use.")
    responses_needed = models.PositiveSmallIntegerField(default=3)
    responses_done = models.PositiveSmallIntegerField(default=0)
    # An adaptive study's item (annotate.quality.redundancy): the places it asked for beyond its minimum
    # (the queue serves round 0 first), and why it stopped ("" while it collects answers).
    round = models.PositiveSmallIntegerField(default=0, db_default=0)
    stop_reason = models.CharField(max_length=200, blank=True, default="", db_default="")
    # Live assignments (handed out or answered, not released) holding a slot of the item: kept by the
    # database's triggers on annotate_assignment (migration 0016), never written by the app (see save).
    slots_taken = models.IntegerField(default=0, db_default=0, editable=False)

    class Meta:
        ordering = ["study_id", "position", "id"]
        indexes = [
            models.Index(fields=["study", "is_gold", "responses_done"], name="item_open_idx"),
            # The hand-out queue: items of a study with a free slot, in order (an adaptive study's items
            # collecting their minimum first). An item leaves it while its slots are all held, so the hand-out
            # never walks past the items the crowd is answering, and for good once it is complete.
            models.Index(
                fields=["study", "round", "position", "id"],
                condition=models.Q(
                    retired=False,
                    responses_done__lt=models.F("responses_needed"),
                    slots_taken__lt=models.F("responses_needed"),
                ),
                name="item_queue_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.pk} of study {self.study_id}"

    def save(self, *args, **kwargs) -> None:
        """Save; an existing item's ``slots_taken`` is left to the database (a copy read before a hand-out
        would write back a stale count)."""
        if not self._state.adding and kwargs.get("update_fields") is None and not kwargs.get("force_insert"):
            skipped = {"slots_taken", *self.get_deferred_fields()}  # deferred ones as Django leaves them
            kwargs["update_fields"] = [
                f.attname
                for f in self._meta.concrete_fields
                if not f.primary_key and f.attname not in skipped
            ]
        super().save(*args, **kwargs)
