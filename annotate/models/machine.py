"""Machine results: trained classifiers, their predictions and explanations over canonical words."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotate.models.corpus import Dataset, Document


class ModelRun(models.Model):
    """A classifier trained on a dataset by the engine; its artifacts live under MEDIA_ROOT (or S3)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="model_runs")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="model_runs")
    architecture = models.CharField(max_length=40)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    message = models.TextField(blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    artifact = models.CharField(
        max_length=500, blank=True, help_text="Artifact folder (relative to MEDIA_ROOT) or s3:// URL."
    )
    created = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)
    idempotency_key = models.CharField(
        max_length=200, blank=True, help_text="The client's Idempotency-Key: one run per owner and key."
    )
    request_digest = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 of the request that created the run under its key."
    )

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="modelrun_idempotency_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.architecture})"


class Prediction(models.Model):
    model_run = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="predictions")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="predictions")
    label = models.CharField(max_length=100)
    probabilities = models.JSONField(default=dict)
    attention = models.JSONField(null=True, blank=True, help_text="Machine attention over canonical words.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model_run", "document"], name="prediction_unique")]


class Explanation(models.Model):
    """Relevance of each canonical word for ``target`` by one method, with evidence spans."""

    model_run = models.ForeignKey(ModelRun, on_delete=models.CASCADE, related_name="explanations")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="explanations")
    method = models.CharField(max_length=60)
    target = models.CharField(max_length=100)
    scores = models.JSONField()
    evidence = models.JSONField(default=list, blank=True)
    counter_evidence = models.JSONField(default=list, blank=True)
    # Word scores counter-evidence is ranked by, for a method that ranks it apart from ``scores``
    # (Grad-CAM-Text's min part, Lertvittayakumjorn & Toni 2019 eq. 1); null: the bottom of ``scores``.
    counter_scores = models.JSONField(null=True, blank=True)
    # What the method reported about this text, e.g. integrated gradients' completeness
    # ({"completeness": {...}, "warnings": [...]} when it missed 1 % at the step cap).
    diagnostics = models.JSONField(default=dict, blank=True)
    # How faithful the map is to the run's model, for ``target``: ERASER's comprehensiveness and
    # sufficiency per bin and their AOPC, Kendall's τ with leave-one-word-out (the per-text dict of
    # explain_engine's faithfulness); null: not measured.
    faithfulness = models.JSONField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["model_run", "document", "method", "target"], name="explanation_unique"
            ),
        ]
        indexes = [models.Index(fields=["model_run", "method"], name="explanation_method_idx")]
