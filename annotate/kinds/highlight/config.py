"""The highlight study's config: read-first or free-style, the labels, and how a gold map is graded."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.tasks.base import BaseConfigSerializer

KIND = "highlight"
READ_FIRST = "read_first"
FREE = "free"
DEFAULT_LABELS = ("positive", "negative", "cannot decide")
UNDECIDED = "cannot decide"


class HighlightConfigSerializer(BaseConfigSerializer):
    mode = serializers.ChoiceField(
        choices=[(READ_FIRST, "Read first, then highlight"), (FREE, "Free-style")], default=READ_FIRST
    )
    labels = serializers.ListField(
        child=serializers.CharField(max_length=100),
        min_length=2,
        max_length=20,
        default=lambda: list(DEFAULT_LABELS),
    )
    undecided_label = serializers.CharField(
        max_length=100,
        allow_null=True,
        required=False,
        help_text='The label that may be submitted with no highlight (default "cannot decide" when present).',
    )
    require_highlight = serializers.BooleanField(
        default=True, help_text="Every label except the undecided one needs at least one highlighted word."
    )
    gold_overlap = serializers.FloatField(
        min_value=0.0, max_value=1.0, default=0.5, help_text="Least overlap with a gold map that passes."
    )
    overlap_measure = serializers.ChoiceField(choices=["f1", "jaccard"], default="f1")

    def validate_labels(self, labels: list[str]) -> list[str]:
        if len(set(labels)) != len(labels):
            raise ValidationError("labels must be distinct")
        return labels

    def validate(self, data: dict) -> dict:
        labels = data["labels"]
        if "undecided_label" not in data:
            data["undecided_label"] = UNDECIDED if UNDECIDED in labels else None
        elif data["undecided_label"] is not None and data["undecided_label"] not in labels:
            raise ValidationError({"undecided_label": [f"must be one of the labels {labels} or empty"]})
        return data
