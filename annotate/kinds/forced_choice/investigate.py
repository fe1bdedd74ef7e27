"""The ``investigate`` kind (Lertvittayakumjorn & Toni 2019 §3.3, task 3): do explanations help humans settle uncertain
predictions?

One well-trained classifier; texts it predicts with ``max_c p_c < tau_l``, half correctly and half
wrongly. The annotator sees the predicted class, its probability, the method's top-m evidence and
top-m counter-evidence — the counter-evidence presented as evidence for the other class(es), as the
paper does (footnote 1) — but not the text, and picks the true class, confident or not. There is no
"no preference": the predicted probability is there to fall back on.
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


class InvestigateConfigSerializer(OneRunConfigSerializer):
    tau_l = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=0.7,
        help_text="Texts predicted with max probability below this.",
    )


@register
class InvestigateKind(ForcedChoiceKind):
    name = "investigate"
    label = "Investigate an uncertain prediction: what is the true class? (task 3)"
    task = 3
    title = "What is the true class of this text?"
    config_serializer = InvestigateConfigSerializer
    no_preference = False
    payload_keys = frozenset({"predicted", "probability", "evidence", "counter_evidence", "counter_labels"})
    instructions = (
        "A model was unsure about a text you cannot see. You get its guess, how sure it was, and short "
        "texts that speak for its guess and for the other class(es). Choose the class you think is true, "
        "and say whether you are confident."
    )

    def generate(self, study) -> list[Question]:
        return single_run_questions(study, self.rule, self.show)

    @staticmethod
    def rule(pool: Pool, config: dict) -> tuple[np.ndarray, str]:
        """Texts predicted with max probability below ``tau_l``."""
        tau = config.get("tau_l", 0.7)
        return pool.max_prob < tau, f"investigate: texts predicted with max probability < {tau}"

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
        """The predicted class, its probability, evidence and counter-evidence (the latter shown as
        evidence for the other classes); the correct option is the true class."""
        sizes = method["ngram_sizes"]
        payload = {
            "predicted": predicted,
            "probability": round(probability, 4),
            "evidence": [e.text for e in evidence_of(doc, scores, m, sizes)],
            "counter_evidence": [e.text for e in evidence_of(doc, scores, m, sizes, counter=True)],
            "counter_labels": [label for label in labels if label != predicted],
        }
        return payload, doc.label
