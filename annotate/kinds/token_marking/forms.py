"""The researcher's form that creates (or edits) a token-marking study; the options are checked again by
the kind's schema."""

from __future__ import annotations

from typing import Any

from django import forms

from annotate.kinds.token_marking.config import KIND
from annotate.tasks.study_form import COMMON_FIELDS, KindStudyForm


class TokenMarkingStudyForm(KindStudyForm):
    kind = KIND
    default_instructions = (
        "Each text comes with its label and an explanation a person wrote for it. Mark the words of the "
        "text that the explanation's author thought were important."
    )
    field_order = [*COMMON_FIELDS[:2], "require_mark", "gold_overlap", "overlap_measure", *COMMON_FIELDS[2:]]

    require_mark = forms.BooleanField(
        required=False,
        initial=True,
        label="Require a mark",
        help_text="An answer must mark at least one word.",
    )
    gold_overlap = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.5,
        label="Gold overlap",
        help_text="The least overlap (0 to 1) with a gold marking that passes.",
    )
    overlap_measure = forms.ChoiceField(
        choices=[("f1", "F1 of the marked words"), ("jaccard", "Jaccard index")], initial="f1"
    )

    def config(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "require_mark": bool(data.get("require_mark")),
            "gold_overlap": data["gold_overlap"],
            "overlap_measure": data["overlap_measure"],
        }

    @classmethod
    def config_initial(cls, config: dict[str, Any]) -> dict[str, Any]:
        return {
            "require_mark": config.get("require_mark", True),
            "gold_overlap": config.get("gold_overlap", 0.5),
            "overlap_measure": config.get("overlap_measure", "f1"),
        }
