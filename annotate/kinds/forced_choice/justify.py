"""The ``justify`` kind (Lertvittayakumjorn & Toni 2019 §3.2, task 2): do the evidence texts justify the prediction?

One well-trained classifier; texts it predicts with ``max_c p_c > tau_h``, half correctly and half
wrongly. The annotator sees only the method's top-m evidence texts (not the document) and picks the
most likely class of the document that contains them, confident or not, or "no preference". An
answer is correct when it names the class the model predicted, also when that prediction is wrong.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rest_framework import serializers

from annotate.kinds.forced_choice.config import OneRunConfigSerializer
from annotate.kinds.forced_choice.generation import (
    Pool,
    Question,
    WordScores,
    evidence_of,
    single_run_questions,
)
from annotate.kinds.forced_choice.kind import ForcedChoiceKind
from annotate.models import Document
from annotate.tasks import register


class JustifyConfigSerializer(OneRunConfigSerializer):
    tau_h = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=0.9,
        help_text="Texts predicted with max probability above this.",
    )


@register
class JustifyKind(ForcedChoiceKind):
    name = "justify"
    label = "Justify the prediction: which class do the evidence texts point to? (task 2)"
    task = 2
    title = "Which class do these evidence texts point to?"
    config_serializer = JustifyConfigSerializer
    payload_keys = frozenset({"evidence"})
    instructions = (
        "You see a few short texts taken from one document. Choose the class of the document they most "
        "likely come from, and say whether you are confident. Choose 'no preference' if they do not help."
    )

    def generate(self, study) -> list[Question]:
        return single_run_questions(study, self.rule, self.show)

    @staticmethod
    def rule(pool: Pool, config: dict) -> tuple[np.ndarray, str]:
        """Texts predicted with max probability above ``tau_h``."""
        tau = config.get("tau_h", 0.9)
        return pool.max_prob > tau, f"justify: texts predicted with max probability > {tau}"

    @staticmethod
    def show(
        doc: Document,
        scores: WordScores,
        method: dict,
        m: int,
        predicted: str,
        probability: float,
        labels: list[str],
    ) -> tuple[dict[str, Any], str]:
        """Only the evidence texts; the correct option is the predicted class."""
        return {"evidence": [e.text for e in evidence_of(doc, scores, m, method["ngram_sizes"])]}, predicted
