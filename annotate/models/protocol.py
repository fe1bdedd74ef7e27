"""The study protocol around the items: consent (versioned text, each worker's decision), the pre- and
post-study questionnaires' answers, items a worker skipped, and the history of edited answers."""

from __future__ import annotations

from django.db import models

from annotate.models.crowd import Assignment, Response, Worker
from annotate.models.studies import Item, Study


class ConsentVersion(models.Model):
    """One wording of a study's consent text. Changing the text of a study makes a new version; a
    worker's decision names the version they were shown."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="consent_versions")
    number = models.PositiveIntegerField()
    text = models.TextField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="consent_version_unique_number"),
        ]

    def __str__(self) -> str:
        return f"consent v{self.number} of study {self.study_id}"


class ConsentDecision(models.Model):
    """A worker's answer to the consent text of a study, under one platform unit (``ref``, as the
    seat has it): accepted or declined, once."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="consent_decisions")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="consent_decisions")
    ref = models.CharField(max_length=200, blank=True, default="")
    version = models.ForeignKey(ConsentVersion, on_delete=models.PROTECT, related_name="decisions")
    accepted = models.BooleanField()
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "worker", "ref"], name="consent_decision_once"),
        ]


class SurveyAnswers(models.Model):
    """A worker's answers to one of a study's questionnaires (``pre``: before the items, with the
    screening verdict in ``qualified``; ``post``: after them)."""

    class Phase(models.TextChoices):
        PRE = "pre", "Pre-study"
        POST = "post", "Post-study"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="survey_answers")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="survey_answers")
    ref = models.CharField(max_length=200, blank=True, default="")
    phase = models.CharField(max_length=4, choices=Phase.choices)
    answers = models.JSONField(default=dict)
    qualified = models.BooleanField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "worker", "ref", "phase"], name="survey_answers_once"),
        ]


class ItemSkip(models.Model):
    """An item a worker passed on, with the reason they chose: their assignment was released, so the
    item goes to someone else, and the worker is never handed it again."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="skip")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="skips")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="skips")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="skips")
    reason = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["study", "worker"], name="itemskip_study_worker_idx")]


class ResponseEdit(models.Model):
    """One change of a submitted answer by its worker: the answer before and after. ``submission_key``
    makes a retried edit stored once."""

    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="edits")
    submission_key = models.UUIDField(unique=True)
    previous_answer = models.JSONField()
    answer = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class TrainingItem(models.Model):
    """A worked example of a study's training phase: an item of the kind's own shape whose expected
    answer (``secret["gold"]``) and ``explanation`` are shown to the worker after they answer it. Its
    document's ordinary item is taken out of the hand-out (``retired``), so nobody answers it for data."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="training_items")
    source = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="training")
    position = models.PositiveIntegerField()
    payload = models.JSONField(default=dict)
    secret = models.JSONField(default=dict)
    explanation = models.TextField(blank=True)

    class Meta:
        ordering = ["study_id", "position"]


class TrainingAnswer(models.Model):
    """A worker's answer to a training item in one attempt at the training phase: graded against the
    expected answer, never counted as data (exported apart)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="training_answers")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="training_answers")
    ref = models.CharField(max_length=200, blank=True, default="")
    item = models.ForeignKey(TrainingItem, on_delete=models.CASCADE, related_name="answers")
    attempt = models.PositiveSmallIntegerField()
    answer = models.JSONField()
    passed = models.BooleanField(null=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "worker", "ref", "item", "attempt"], name="training_answer_once"
            ),
        ]
