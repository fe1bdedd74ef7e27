"""The sentence-rating study's config: the aspects rated, the review's star scale, how far a gold answer may
be off and how many judges a sentence needs; and the five answers of the page (Pappas & Popescu-Belis
2016, §3 and Figure 2)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.tasks.base import BaseConfigSerializer

KIND = "sentence_rating"
#: Pappas & Popescu-Belis 2016, Figure 2: the five answers, level 1 (not at all) to 5 (very well).
RATING_LABELS = ("not at all", "a little", "moderately", "rather well", "very well")
LEVELS = tuple(range(1, len(RATING_LABELS) + 1))
#: Pappas & Popescu-Belis 2016 §3: at least four reliable judges per sentence.
PAPER_JUDGES = 4


class AspectSerializer(serializers.Serializer):
    name = serializers.RegexField(
        r"^[A-Za-z0-9_\-]{1,40}$",
        help_text="Short id, e.g. overall.",
        error_messages={"invalid": "a name is 1 to 40 letters, digits, “_” or “-”, without spaces"},
    )
    rating_field = serializers.CharField(
        max_length=100, required=False, help_text="Key of the rating in Document.metadata (default: name)."
    )
    title = serializers.CharField(max_length=100, required=False, help_text="Shown to annotators.")
    description = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")

    def validate(self, data: dict) -> dict:
        data.setdefault("rating_field", data["name"])
        data.setdefault("title", data["name"].replace("_", " ").capitalize())
        return data


class SentenceRatingConfigSerializer(BaseConfigSerializer):
    aspects = serializers.ListField(
        child=AspectSerializer(),
        min_length=1,
        max_length=20,
        default=lambda: [
            {"name": "overall", "rating_field": "overall", "title": "Overall", "description": ""}
        ],
    )
    rating_max = serializers.IntegerField(
        min_value=2,
        max_value=10,
        default=5,
        help_text="Stars of the review's rating scale (Pappas & Popescu-Belis 2016: 5).",
    )
    gold_tolerance = serializers.IntegerField(
        min_value=0, max_value=4, default=0, help_text="Levels a gold answer may be off and still pass."
    )
    min_judges = serializers.IntegerField(
        min_value=1,
        max_value=50,
        default=PAPER_JUDGES,
        help_text="Trusted judges a sentence needs before its label counts in the results (Pappas & Popescu-Belis 2016: 4).",
    )

    def validate_aspects(self, aspects: list[dict]) -> list[dict]:
        names = [a["name"] for a in aspects]
        if len(set(names)) != len(names):
            raise ValidationError("aspect names must be distinct")
        return aspects
