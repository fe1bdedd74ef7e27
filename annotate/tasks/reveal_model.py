"""The ``reveal_model`` kind (paper 004 §3.1, task 1): can explanations reveal the poorer model?

Two classifiers of clearly different quality (``better_run``, ``worse_run``; their accuracies on the
candidate texts must differ by ``min_accuracy_gap``); texts both predict as the same class, half
correctly and half wrongly. The annotator sees the text twice, side by side, with model A's and
model B's top-m evidence highlighted, and the predicted class; they pick the more reasonable model,
confident or not, or "no preference". Which model is A is drawn per question and recorded in the
item's secret; an answer is correct when it picks the better model.
"""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.tasks import register
from annotate.tasks._forced_choice import ForcedChoiceConfigSerializer, ForcedChoiceKind

SIDES = ["A", "B"]


class RevealModelConfigSerializer(ForcedChoiceConfigSerializer):
    better_run = serializers.IntegerField(help_text="The better classifier (a finished model run).")
    worse_run = serializers.IntegerField(help_text="The poorer classifier, trained on the same dataset.")
    min_accuracy_gap = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        default=0.05,
        help_text="The better run's accuracy on the candidate texts must exceed the poorer one's by this.",
    )

    def validate(self, data: dict) -> dict:
        data = super().validate(data)
        if data["better_run"] == data["worse_run"]:
            raise ValidationError({"worse_run": ["must be another model run than better_run"]})
        better = self.finished_run(data["better_run"], "better_run")
        worse = self.finished_run(data["worse_run"], "worse_run")
        if better.dataset_id != worse.dataset_id:
            raise ValidationError({"worse_run": ["must be trained on the same dataset as better_run"]})
        self.fill_labels(data, better, "better_run")
        return data


@register
class RevealModelKind(ForcedChoiceKind):
    name = "reveal_model"
    title = "Which model is more reasonable?"
    template = "annotate/work/reveal_model.html"
    config_serializer = RevealModelConfigSerializer
    payload_keys = frozenset({"words", "breaks", "predicted", "evidence"})
    instructions = (
        "Two models gave the same class to this text. The words each model relied on are highlighted. "
        "Which model is more reasonable? Say whether you are confident, or choose 'no preference'."
    )

    def options(self, study) -> list[str]:
        return list(SIDES)

    def generate(self, study):
        from annotate.evaluation.generation import reveal_model_questions

        return reveal_model_questions(study)
