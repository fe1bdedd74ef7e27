"""The ``investigate`` kind (paper 004 §3.3, task 3): do explanations help humans settle uncertain
predictions?

One well-trained classifier; texts it predicts with ``max_c p_c < tau_l``, half correctly and half
wrongly. The annotator sees the predicted class, its probability, the method's top-m evidence and
top-m counter-evidence — the counter-evidence presented as evidence for the other class(es), as the
paper does (footnote 1) — but not the text, and picks the true class, confident or not. There is no
"no preference": the predicted probability is there to fall back on.
"""

from __future__ import annotations

from rest_framework import serializers

from annotate.tasks import register
from annotate.tasks._forced_choice import ForcedChoiceConfigSerializer, ForcedChoiceKind


class InvestigateConfigSerializer(ForcedChoiceConfigSerializer):
    model_run = serializers.IntegerField(help_text="The well-trained classifier (a finished model run).")
    tau_l = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=0.7,
        help_text="Texts predicted with max probability below this.",
    )

    def validate(self, data: dict) -> dict:
        data = super().validate(data)
        self.fill_labels(data, self.finished_run(data["model_run"], "model_run"), "model_run")
        return data


@register
class InvestigateKind(ForcedChoiceKind):
    name = "investigate"
    title = "What is the true class of this text?"
    template = "annotate/work/investigate.html"
    config_serializer = InvestigateConfigSerializer
    no_preference = False
    payload_keys = frozenset({"predicted", "probability", "evidence", "counter_evidence", "counter_labels"})
    instructions = (
        "A model was unsure about a text you cannot see. You get its guess, how sure it was, and short "
        "texts that speak for its guess and for the other class(es). Choose the class you think is true, "
        "and say whether you are confident."
    )

    def generate(self, study):
        from annotate.evaluation.generation import single_run_questions

        return single_run_questions(study, "investigate")
