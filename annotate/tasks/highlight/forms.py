"""The researcher's form that creates a highlight study; the options are checked again by the kind's schema."""

from __future__ import annotations

from django import forms

from annotate.access import is_admin
from annotate.models import Dataset
from annotate.providers import PROVIDERS
from annotate.quality.gold_mixing import GOLD_RATE_KEY
from annotate.tasks.highlight.config import DEFAULT_LABELS, FREE, KIND, READ_FIRST


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200)
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none())
    mode = forms.ChoiceField(
        choices=[(READ_FIRST, "Read first: choose the label, then highlight"), (FREE, "Free-style")],
        initial=READ_FIRST,
        widget=forms.RadioSelect,
    )
    labels = forms.CharField(
        initial=", ".join(DEFAULT_LABELS), help_text="Comma-separated; the annotator picks one."
    )
    annotators_per_item = forms.IntegerField(min_value=1, max_value=50, initial=3)
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        required=False,
        initial="Read the text and choose its sentiment. Then click every word that shows that sentiment.",
    )
    time_limit_min = forms.IntegerField(
        min_value=1,
        max_value=7 * 24 * 60,
        initial=30,
        label="Time limit (minutes)",
        help_text="An item not submitted within this time goes back to the pool.",
    )
    max_items_per_worker = forms.IntegerField(min_value=1, required=False, help_text="Empty: no limit.")
    gold_rate = forms.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        label="Gold rate",
        help_text="Share of gold items mixed into each annotator's queue, from 0 to 1. "
        "Empty: gold items keep their place in the queue.",
    )
    provider = forms.ChoiceField(choices=[])
    open_enrollment = forms.BooleanField(
        required=False, help_text="Local provider: anyone with the study link may annotate (no invite)."
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        datasets = Dataset.objects.all() if is_admin(user) else Dataset.objects.filter(owner=user)
        self.fields["dataset"].queryset = datasets.order_by("name")
        self.fields["provider"].choices = [(p.name, p.title or p.name) for p in PROVIDERS.values()]
        self.fields["provider"].initial = "local"

    def study_data(self) -> dict:
        """The form as the study API's input."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "dataset": data["dataset"].pk,
            "kind": KIND,
            "config": {
                "mode": data["mode"],
                "labels": [label.strip() for label in data["labels"].split(",") if label.strip()],
                "max_items_per_worker": data.get("max_items_per_worker"),
                **({GOLD_RATE_KEY: data["gold_rate"]} if data.get("gold_rate") is not None else {}),
            },
            "instructions": data.get("instructions", ""),
            "annotators_per_item": data["annotators_per_item"],
            "time_limit_s": data["time_limit_min"] * 60,
            "provider": data["provider"],
            "provider_config": {"open_enrollment": True} if data.get("open_enrollment") else {},
        }
