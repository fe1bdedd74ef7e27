"""Forms of the researcher pages. Study options are checked again by the task kind's schema."""

from __future__ import annotations

from django import forms

from annotate.access import is_admin
from annotate.corpus.imports import FORMATS
from annotate.models import Dataset
from explain_engine.api import RATIONALE_FORMATS


class DatasetImportForm(forms.Form):
    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.none(),
        required=False,
        empty_label="— a new dataset —",
        help_text="Add to one of your datasets, or leave empty and name a new one.",
    )
    name = forms.CharField(max_length=200, required=False, help_text="Name of the new dataset.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    file = forms.FileField(help_text="CSV or JSONL with the fields id, text, label (and optional metadata).")
    format = forms.ChoiceField(
        choices=[("", "from the file name"), *((f, f.upper()) for f in FORMATS)], required=False
    )
    labels = forms.CharField(
        max_length=2000,
        required=False,
        help_text="The labels a document may have, separated by commas (e.g. negative, positive). Empty: the "
        "dataset's labels, or for a new dataset the labels the file uses (listed after the import). Every "
        "document needs one of them; an empty label or any other is refused.",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        datasets = Dataset.objects.all() if is_admin(user) else Dataset.objects.filter(owner=user)
        self.fields["dataset"].queryset = datasets.order_by("name")

    def clean(self):
        data = super().clean()
        if not data.get("dataset"):
            name = (data.get("name") or "").strip()
            if not name:
                self.add_error("name", "Name the new dataset, or pick an existing one.")
            elif Dataset.objects.filter(owner=self.user, name=name).exists():
                self.add_error("name", "You already have a dataset with this name.")
        return data


class RationaleImportForm(forms.Form):
    """A public human-rationale set: its format, a name for the new dataset, and the file (or a zip)."""

    format = forms.ChoiceField(choices=[(f, f) for f in RATIONALE_FORMATS])
    name = forms.CharField(
        max_length=200, help_text="Name of the new dataset (its study takes the same name)."
    )
    file = forms.FileField(
        help_text="The set's file, or a zip of its folder: ERASER's docs/ and split files; the 20 Newsgroups "
        "annotations with their 20news-bydate-test texts; several YELP-HAT CSVs."
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Name the new dataset.")
        if Dataset.objects.filter(owner=self.user, name=name).exists():
            raise forms.ValidationError("You already have a dataset with this name.")
        return name


class InviteForm(forms.Form):
    count = forms.IntegerField(min_value=1, max_value=500, initial=5, label="How many links")
