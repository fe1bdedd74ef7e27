"""The researcher's form that imports a file of NLI pairs and creates a draft study over them."""

from __future__ import annotations

from typing import Any

from django import forms

from annotate.crowd.providers import PROVIDERS
from annotate.kinds.nli_pair.config import DEFAULT_LABELS, KIND
from annotate.tasks.base import REDUNDANCY_KEY
from annotate.tasks.study_form import REDUNDANCY_FIELDS, RedundancyFields

INSTRUCTIONS = (
    "Read the premise and the hypothesis. Choose whether the premise entails the hypothesis, "
    "contradicts it, or neither (neutral). Then highlight the words that justify your choice."
)


class PairImportForm(RedundancyFields):
    """A file of pairs, the study's options and its redundancy policy."""

    name = forms.CharField(max_length=200, help_text="The study's name; the dataset of pairs gets it too.")
    file = forms.FileField(
        help_text="CSV with the columns premise, hypothesis and optionally label and id, "
        "or JSON lines with those fields."
    )
    labels = forms.CharField(
        initial=", ".join(DEFAULT_LABELS), help_text="Comma-separated; the annotator picks one."
    )
    annotators_per_item = forms.IntegerField(min_value=1, max_value=50, initial=3)
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, initial=INSTRUCTIONS
    )
    time_limit_min = forms.IntegerField(
        min_value=1, max_value=7 * 24 * 60, initial=30, label="Time limit (minutes)"
    )
    provider = forms.ChoiceField(choices=[])

    field_order = [
        *("name", "file", "labels", "annotators_per_item", "redundancy", *REDUNDANCY_FIELDS.values()),
        *("instructions", "time_limit_min", "provider"),
    ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].choices = [(p.name, p.title or p.name) for p in PROVIDERS.values()]
        self.fields["provider"].initial = "local"

    def clean_labels(self) -> list[str]:
        return [label.strip() for label in self.cleaned_data["labels"].split(",") if label.strip()]

    def study_data(self, dataset_id: int | None) -> dict:
        """The form as the study API's input, over the imported dataset."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "dataset": dataset_id,
            "kind": KIND,
            "config": {"labels": data["labels"], **self.redundancy_config()},
            "instructions": data.get("instructions", ""),
            "annotators_per_item": data["annotators_per_item"],
            "time_limit_s": data["time_limit_min"] * 60,
            "provider": data["provider"],
        }


class PairEditForm(PairImportForm):
    """The options of a draft NLI pair study, to edit them (its pairs stay as imported)."""

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["file"]

    @classmethod
    def initial_from(cls, study) -> dict[str, Any]:
        return {
            "name": study.name,
            "labels": ", ".join(study.config.get("labels", DEFAULT_LABELS)),
            "annotators_per_item": study.annotators_per_item,
            **cls.redundancy_initial(study.config.get(REDUNDANCY_KEY) or {}),
            "instructions": study.instructions,
            "time_limit_min": max(1, round(study.time_limit_s / 60)),
            "provider": study.provider,
        }

    def study_data(self, dataset_id: int | None = None) -> dict:
        """The form as the study API's input; the dataset stays the study's own."""
        data = super().study_data(dataset_id)
        if dataset_id is None:
            data.pop("dataset")
        return data
