"""Background jobs as rows, so the UI can show their progress and result.

A dispatched job also names its Celery task and queue, so the row alone is enough to send it (again):
the row is the outbox. ``sent`` says when it was last handed to the broker (null: not yet, or the
broker could not be reached); ``heartbeat`` is set by the worker running it, every few seconds, and
cleared when it stops; ``events`` keeps what happened to it (sent, worker lost, re-queued) for its page.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=60)
    key = models.CharField(max_length=200, unique=True, help_text="Idempotency key: one job per key.")
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    task = models.CharField(
        max_length=120, blank=True, help_text="Celery task that runs it; blank: not sent."
    )
    queue = models.CharField(max_length=40, blank=True)
    sent = models.DateTimeField(null=True, blank=True, help_text="Last handed to the broker; null: not yet.")
    heartbeat = models.DateTimeField(null=True, blank=True, help_text="Last sign of life of its worker.")
    worker = models.CharField(
        max_length=200, blank=True, help_text="The worker running it, or that last did."
    )
    attempts = models.PositiveIntegerField(default=0, help_text="How many times a worker started it.")
    events = models.JSONField(default=list, blank=True, help_text='[{"at": ISO time, "event": text}]')

    class Meta:
        ordering = ["-created"]
        indexes = [
            models.Index(
                fields=["status", "sent"],
                condition=models.Q(status__in=["queued", "running"]),
                name="job_unfinished_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key} ({self.status})"
