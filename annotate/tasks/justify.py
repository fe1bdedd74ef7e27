"""The ``justify`` kind (paper 004 §3.2, task 2): do the evidence texts justify the prediction?

One well-trained classifier; texts it predicts with ``max_c p_c > tau_h``, half correctly and half
wrongly. The annotator sees only the method's top-m evidence texts (not the document) and picks the
most likely class of the document that contains them, confident or not, or "no preference". An
answer is correct when it names the class the model predicted, also when that prediction is wrong.
"""

from __future__ import annotations

from rest_framework import serializers

from annotate.tasks import register
from annotate.tasks._forced_choice import ForcedChoiceConfigSerializer, ForcedChoiceKind


class JustifyConfigSerializer(ForcedChoiceConfigSerializer):
    model_run = serializers.IntegerField(help_text="The well-trained classifier (a finished model run).")
    tau_h = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=0.9,
        help_text="Texts predicted with max probability above this.",
    )

    def validate(self, data: dict) -> dict:
        data = super().validate(data)
        self.fill_labels(data, self.finished_run(data["model_run"], "model_run"), "model_run")
        return data


@register
class JustifyKind(ForcedChoiceKind):
    name = "justify"
    title = "Which class do these evidence texts point to?"
    template = "annotate/work/justify.html"
    config_serializer = JustifyConfigSerializer
    payload_keys = frozenset({"evidence"})
    instructions = (
        "You see a few short texts taken from one document. Choose the class of the document they most "
        "likely come from, and say whether you are confident. Choose 'no preference' if they do not help."
    )

    def generate(self, study):
        from annotate.evaluation.generation import single_run_questions

        return single_run_questions(study, "justify")
