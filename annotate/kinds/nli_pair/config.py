"""The NLI pair study's config: the labels, which text each label's highlights may or must lie in (each
text's map is its own field of the answer), and how a gold answer is graded.

The default rules follow the e-SNLI collection guideline (Camburu et al. 2018): an entailment is
justified by at least one word of the premise, a contradiction by at least one word of each text,
and a neutral pair by words of the hypothesis only (the premise says nothing about them), at least
one. A study may name other rules per label; a label without a rule allows highlights anywhere and
requires none.
"""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.tasks.base import BaseConfigSerializer

KIND = "nli_pair"
#: Where a pair's document keeps its hypothesis and its gold answer (``Document.metadata``).
HYPOTHESIS_FIELD = "hypothesis"
GOLD_FIELD = "gold"
SIDES = ("premise", "hypothesis")
REQUIRED, ALLOWED, FORBIDDEN = "required", "allowed", "forbidden"
RULE_CHOICES = (REQUIRED, ALLOWED, FORBIDDEN)
DEFAULT_LABELS = ("entailment", "neutral", "contradiction")
DEFAULT_RULES: dict[str, dict[str, str]] = {
    "entailment": {"premise": REQUIRED, "hypothesis": ALLOWED},
    "neutral": {"premise": FORBIDDEN, "hypothesis": REQUIRED},
    "contradiction": {"premise": REQUIRED, "hypothesis": REQUIRED},
}
OPEN_RULE = {"premise": ALLOWED, "hypothesis": ALLOWED}


def map_field(side: str) -> str:
    """The answer's field of ``side``'s map: ``premise_map`` or ``hypothesis_map``."""
    return f"{side}_map"


def rule_for(config: dict, label: str) -> dict[str, str]:
    """What ``label`` asks of each text's highlights: ``required``, ``allowed`` or ``forbidden``."""
    return {**OPEN_RULE, **config.get("rules", DEFAULT_RULES).get(label, {})}


class NliPairConfigSerializer(BaseConfigSerializer):
    labels = serializers.ListField(
        child=serializers.CharField(max_length=100),
        min_length=2,
        max_length=10,
        default=lambda: list(DEFAULT_LABELS),
    )
    rules = serializers.DictField(
        child=serializers.DictField(child=serializers.ChoiceField(choices=RULE_CHOICES)),
        required=False,
        help_text="Per label, per text (premise, hypothesis): required, allowed or forbidden highlights.",
    )
    gold_overlap = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=0.5,
        help_text="Least overlap with a gold answer's words (both texts together) that passes.",
    )
    overlap_measure = serializers.ChoiceField(choices=["f1", "jaccard"], default="f1")

    def validate_labels(self, labels: list[str]) -> list[str]:
        if len(set(labels)) != len(labels):
            raise ValidationError("labels must be distinct")
        return labels

    def validate(self, data: dict) -> dict:
        labels = data["labels"]
        if "rules" not in data:
            data["rules"] = {label: dict(DEFAULT_RULES[label]) for label in labels if label in DEFAULT_RULES}
        for label, rule in data["rules"].items():
            if label not in labels:
                raise ValidationError({"rules": [f"{label!r} is not one of the labels {labels}"]})
            unknown = sorted(set(rule) - set(SIDES))
            if unknown:
                raise ValidationError({"rules": [f"{label!r}: {unknown} are not texts; use {list(SIDES)}"]})
            if all(rule_for(data, label)[side] == FORBIDDEN for side in SIDES):
                raise ValidationError({"rules": [f"{label!r} forbids highlights in both texts"]})
        return data
