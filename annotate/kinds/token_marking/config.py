"""The token-marking study's config: whether an answer must mark a word, how a gold map is graded and
whether control items pair each input with a random other input's explanation (the NLI
importance-alignment paper, §3.2 and eq. 6); and the document fields and item secret the kind reads."""

from __future__ import annotations

from rest_framework import serializers

from annotate.tasks.base import BaseConfigSerializer

KIND = "token_marking"
EXPLANATION_FIELD = "explanation"
GOLD_FIELD = "gold_marks"
CONTROL_SECRET = "control"
#: Seed of the derangement that pairs each input with another input's explanation.
CONTROL_SEED = 0


class TokenMarkingConfigSerializer(BaseConfigSerializer):
    require_mark = serializers.BooleanField(default=True, help_text="An answer must mark at least one word.")
    gold_overlap = serializers.FloatField(
        min_value=0.0, max_value=1.0, default=0.5, help_text="Least overlap with a gold map that passes."
    )
    overlap_measure = serializers.ChoiceField(choices=["f1", "jaccard"], default="f1")
    random_controls = serializers.BooleanField(
        default=False,
        help_text=(
            "Also show every input with a random other input's explanation, so that the expert oracle's "
            "C_R comes from marks against a random explanation (Prasad et al. 2021 eq. 6)."
        ),
    )
