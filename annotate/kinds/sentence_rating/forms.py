"""The researcher's form that creates (or edits) a sentence-rating study (Pappas & Popescu-Belis 2016 §3);
the options are checked again by the kind's schema."""

from __future__ import annotations

from typing import Any

from django import forms

from annotate.kinds.sentence_rating.config import KIND, PAPER_JUDGES
from annotate.tasks.study_form import COMMON_FIELDS, KindStudyForm

ASPECT_HELP = (
    "One aspect per line: its short name, then optionally the document field that holds its star rating "
    "and the title workers see, separated by “|”. Example: “service | service_stars | Service”. "
    "The rating field defaults to the name."
)


class SentenceRatingStudyForm(KindStudyForm):
    kind = KIND
    default_instructions = (
        "Each question shows a review with one sentence highlighted, one aspect and the reviewer's star "
        "rating for it. Answer how much the highlighted sentence explains that rating."
    )
    field_order = [
        *COMMON_FIELDS[:2],
        "aspects",
        "rating_max",
        "gold_tolerance",
        "min_judges",
        *COMMON_FIELDS[2:],
    ]

    aspects = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), initial="overall | overall | Overall", help_text=ASPECT_HELP
    )
    rating_max = forms.IntegerField(
        min_value=2, max_value=10, initial=5, label="Stars of the rating scale", help_text="5 in the paper."
    )
    gold_tolerance = forms.IntegerField(
        min_value=0,
        max_value=4,
        initial=0,
        label="Gold tolerance",
        help_text="How many levels an answer to a gold sentence may be off and still pass.",
    )
    min_judges = forms.IntegerField(
        min_value=1,
        max_value=50,
        initial=PAPER_JUDGES,
        label="Judges a sentence needs",
        help_text="Trusted judges a sentence needs before its label counts in the results (4 in the paper).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # as many workers per sentence as the judges it needs, so a new study's defaults can be met
        self.fields["annotators_per_item"].initial = PAPER_JUDGES

    def clean_aspects(self) -> list[dict[str, str]]:
        aspects = []
        for number, line in enumerate(self.cleaned_data["aspects"].splitlines(), start=1):
            if not line.strip():
                continue
            parts = [p.strip() for p in line.split("|")]
            if len(parts) > 3 or not parts[0]:
                raise forms.ValidationError(
                    f"Line {number} should be a name, then optionally a rating field and a title, "
                    "separated by “|”."
                )
            aspect = {"name": parts[0]}
            if len(parts) > 1 and parts[1]:
                aspect["rating_field"] = parts[1]
            if len(parts) > 2 and parts[2]:
                aspect["title"] = parts[2]
            aspects.append(aspect)
        if not aspects:
            raise forms.ValidationError("Name at least one aspect.")
        return aspects

    def config(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "aspects": data["aspects"],
            "rating_max": data["rating_max"],
            "gold_tolerance": data["gold_tolerance"],
            "min_judges": data["min_judges"],
        }

    @classmethod
    def config_initial(cls, config: dict[str, Any]) -> dict[str, Any]:
        lines = [
            " | ".join([a["name"], a.get("rating_field", a["name"]), a.get("title", a["name"])])
            for a in config.get("aspects", [])
        ]
        return {
            "aspects": "\n".join(lines),
            "rating_max": config.get("rating_max", 5),
            "gold_tolerance": config.get("gold_tolerance", 0),
            "min_judges": config.get("min_judges", PAPER_JUDGES),
        }
