"""The researcher's form that creates (or edits) a highlight study; the options are checked again by the
kind's schema."""

from __future__ import annotations

from typing import Any

from django import forms

from annotate.kinds.highlight.config import DEFAULT_LABELS, FREE, KIND, READ_FIRST
from annotate.tasks.study_form import COMMON_FIELDS, KindStudyForm


class StudyForm(KindStudyForm):
    kind = KIND
    default_instructions = (
        "Read the text and choose its sentiment. Then click every word that shows that sentiment."
    )
    field_order = [COMMON_FIELDS[0], COMMON_FIELDS[1], "mode", "labels", *COMMON_FIELDS[2:]]

    mode = forms.ChoiceField(
        choices=[(READ_FIRST, "Read first: choose the label, then highlight"), (FREE, "Free-style")],
        initial=READ_FIRST,
        widget=forms.RadioSelect,
    )
    labels = forms.CharField(
        initial=", ".join(DEFAULT_LABELS), help_text="Comma-separated; the annotator picks one."
    )

    def config(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "mode": data["mode"],
            "labels": [label.strip() for label in data["labels"].split(",") if label.strip()],
        }

    @classmethod
    def config_initial(cls, config: dict[str, Any]) -> dict[str, Any]:
        return {
            "mode": config.get("mode", READ_FIRST),
            "labels": ", ".join(config.get("labels", DEFAULT_LABELS)),
        }
