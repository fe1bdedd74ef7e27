"""Computed dashboards, cached until the study's data changes.

A row holds the JSON of one dashboard of one study (``name``: the study dashboard, a human-vs-machine
comparison, the study's POS tags) for one set of parameters, with the fingerprint of the data it was
computed from. A request whose current fingerprint differs recomputes it (inline when the study is
small, else in a background job) and replaces the row.
"""

from __future__ import annotations

from django.db import models

from annotate.models.studies import Study


class DashboardCache(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="dashboard_caches")
    name = models.CharField(max_length=40, help_text="Which dashboard: study, similarity, pos_tags.")
    params_digest = models.CharField(max_length=64, help_text="SHA-256 of the canonical JSON of params.")
    params = models.JSONField(default=dict, blank=True)
    fingerprint = models.CharField(
        max_length=64, help_text="Digest of the data the result was computed from."
    )
    result = models.JSONField(default=dict, blank=True)
    computed = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name", "params_digest"], name="dashboard_cache_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} of study {self.study_id} ({self.fingerprint[:8]})"
