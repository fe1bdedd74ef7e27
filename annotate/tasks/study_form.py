"""What every kind's create form shares: the study's name, dataset, workers per item, instructions, time
limit, items per worker, gold rate and provider; a kind's form adds its own options (:meth:`config`).

The same form edits a draft: :meth:`KindStudyForm.initial_from` reads a study back into the form's
fields. Options are checked again by the kind's schema (the study rule, :mod:`annotate.studies.service`); its errors
come back on the form's fields through :func:`add_api_errors`, in words.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError

from annotate.access import is_admin
from annotate.crowd.providers import PROVIDERS
from annotate.models import Dataset, Study
from annotate.tasks.base import GOLD_RATE_KEY, REDUNDANCY_KEY
from explain_engine.api import STOPPING_RULES

COMMON_FIELDS = (
    "name",
    "dataset",
    "annotators_per_item",
    "instructions",
    "time_limit_min",
    "max_items_per_worker",
    "gold_rate",
    "redundancy",
    "redundancy_min",
    "redundancy_max",
    "redundancy_rule",
    "redundancy_threshold",
    "provider",
    "open_enrollment",
    "protocol",
)

#: What the protocol field explains (its shape: :mod:`annotate.protocol.config`).
PROTOCOL_HELP = (
    "Optional, as JSON: consent (Markdown text the participant accepts before any item), pre_survey and "
    "post_survey (questions: id, type single/multiple/likert/text/number, prompt, required, options, points, "
    "min, max), screening (rules on pre_survey answers: question with accept, or min/max), skip_reasons "
    "(lets workers skip an item with one of these reasons), max_skips, back (true: workers may go back and "
    "change an answer)."
)
PROTOCOL_EXAMPLE = (
    '{"consent": "I agree that my answers are used for research.", '
    '"pre_survey": [{"id": "english", "type": "single", "prompt": "Is English your first language?", '
    '"options": ["yes", "no"]}], "screening": [{"question": "english", "accept": ["yes"]}], '
    '"skip_reasons": ["I can\'t judge this", "The text is broken"], "back": true}'
)
#: The redundancy fields beside the mode, by the key of the config's ``redundancy`` they fill.
REDUNDANCY_FIELDS = {
    "min": "redundancy_min",
    "max": "redundancy_max",
    "rule": "redundancy_rule",
    "threshold": "redundancy_threshold",
}


class RedundancyFields(forms.Form):
    """The redundancy policy's fields (fixed, or adaptive with a stopping rule per item;
    :mod:`annotate.quality.redundancy`), shared by every kind's create form."""

    redundancy = forms.ChoiceField(
        choices=[
            ("fixed", "Fixed: every item gets the workers per item"),
            ("adaptive", "Adaptive: a stopping rule per item"),
        ],
        initial="fixed",
        required=False,
        label="Answers per item",
        help_text="Adaptive: each item gets from a minimum to a maximum of answers and stops when its rule is met.",
    )
    redundancy_min = forms.IntegerField(
        min_value=1, max_value=50, required=False, label="Adaptive: minimum answers"
    )
    redundancy_max = forms.IntegerField(
        min_value=1,
        max_value=50,
        required=False,
        label="Adaptive: maximum answers",
        help_text="Places are published up to this many per item.",
    )
    redundancy_rule = forms.ChoiceField(
        choices=[("", "—"), *((name, f"{name}: {what}") for name, what in STOPPING_RULES.items())],
        required=False,
        label="Adaptive: stopping rule",
    )
    redundancy_threshold = forms.FloatField(
        required=False,
        label="Adaptive: threshold",
        help_text="A share from 0 to 1 (the confidence interval's width for ci_width) at which an item stops.",
    )

    @staticmethod
    def redundancy_initial(policy: dict[str, Any]) -> dict[str, Any]:
        """The redundancy fields' values for a stored ``config["redundancy"]``."""
        return {
            "redundancy": policy.get("mode", "fixed"),
            **{f: policy.get(k) for k, f in REDUNDANCY_FIELDS.items()},
        }

    def redundancy_config(self) -> dict[str, Any]:
        """``config["redundancy"]`` from the form (checked by the study rule)."""
        data = self.cleaned_data
        if data.get("redundancy") != "adaptive":
            return {}
        given = {k: data.get(f) for k, f in REDUNDANCY_FIELDS.items()}
        return {
            REDUNDANCY_KEY: {"mode": "adaptive", **{k: v for k, v in given.items() if v not in (None, "")}}
        }


class KindStudyForm(RedundancyFields):
    """The fields of a study every kind has; subclasses name ``kind`` and add their options."""

    kind: ClassVar[str] = ""
    #: The instructions a new study of the kind starts with.
    default_instructions: ClassVar[str] = ""
    field_order = list(COMMON_FIELDS)

    name = forms.CharField(max_length=200)
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none())
    annotators_per_item = forms.IntegerField(
        min_value=1,
        max_value=50,
        initial=3,
        label="Workers per item",
        help_text="How many workers answer each item.",
    )
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), required=False)
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

    protocol = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "placeholder": PROTOCOL_EXAMPLE, "spellcheck": "false"}),
        required=False,
        label="Protocol (consent, questionnaires, skip and back)",
        help_text=PROTOCOL_HELP,
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        datasets = Dataset.objects.all() if is_admin(user) else Dataset.objects.filter(owner=user)
        self.fields["dataset"].queryset = datasets.order_by("name")
        self.fields["provider"].choices = [(p.name, p.title or p.name) for p in PROVIDERS.values()]
        self.fields["provider"].initial = "local"
        if self.default_instructions:
            self.fields["instructions"].initial = self.default_instructions

    def clean_protocol(self) -> dict[str, Any]:
        """The protocol's JSON as an object (its rules are the study rule's: the service checks them)."""
        return parse_protocol(self.cleaned_data.get("protocol", ""))

    def config(self) -> dict[str, Any]:
        """The kind's own options of the study config (before its schema fills in and checks them)."""
        return {}

    @classmethod
    def config_initial(cls, config: dict[str, Any]) -> dict[str, Any]:
        """The kind's own fields' values for a stored config (the inverse of :meth:`config`)."""
        return {}

    @classmethod
    def initial_from(cls, study: Study) -> dict[str, Any]:
        """The form's values for an existing study (to edit a draft)."""
        config = study.config or {}
        return {
            "name": study.name,
            "dataset": study.dataset_id,
            "annotators_per_item": study.annotators_per_item,
            "instructions": study.instructions,
            "time_limit_min": max(1, round(study.time_limit_s / 60)),
            "max_items_per_worker": config.get("max_items_per_worker"),
            "gold_rate": config.get(GOLD_RATE_KEY),
            **cls.redundancy_initial(config.get(REDUNDANCY_KEY) or {}),
            "provider": study.provider,
            "open_enrollment": bool((study.provider_config or {}).get("open_enrollment")),
            "protocol": protocol_text(study),
            **cls.config_initial(config),
        }

    def study_data(self) -> dict[str, Any]:
        """The form as a study's settings (the study rule's input, the same as the study API's)."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "dataset": data["dataset"].pk,
            "kind": self.kind,
            "config": {
                **self.config(),
                "max_items_per_worker": data.get("max_items_per_worker"),
                **({GOLD_RATE_KEY: data["gold_rate"]} if data.get("gold_rate") is not None else {}),
                **self.redundancy_config(),
            },
            "instructions": data.get("instructions", ""),
            "annotators_per_item": data["annotators_per_item"],
            "time_limit_s": data["time_limit_min"] * 60,
            "provider": data["provider"],
            "provider_config": {"open_enrollment": True} if data.get("open_enrollment") else {},
            "protocol": data.get("protocol") or {},
        }


def parse_protocol(text: Any) -> dict[str, Any]:
    """The protocol field's text as a JSON object (empty: none); ``ValidationError`` in words otherwise."""
    text = (text or "").strip() if isinstance(text, str) else ""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValidationError("must be a JSON object, {...}")
    return value


def protocol_text(study: Study) -> str:
    """A study's protocol as the form's text (empty when it has none)."""
    return json.dumps(study.protocol, indent=2, ensure_ascii=False) if study.protocol else ""


#: Where a field of the study API's input appears on the forms, when its name differs.
API_FIELDS = {"time_limit_s": "time_limit_min"}


def add_api_errors(form: forms.Form, errors: dict[str, list[str]]) -> None:
    """Put the study rule's flattened errors (``{"config.aspects.0.name": [...]}``) on ``form``: each on
    the first part of its dotted name that is a field of the form (``aspects``), with the rest of the
    name said in words ("aspect 1, name: ..."); the redundancy policy's on its own fields; the others above
    the form."""
    for dotted, problems in errors.items():
        parts = [p for p in dotted.split(".") if p not in ("config", "non_field_errors")]
        target, where = None, []
        for i, part in enumerate(parts):
            name = API_FIELDS.get(part, part)
            if name in form.fields:
                target, where = name, parts[i + 1 :]
                break
        if target == "redundancy" and where and REDUNDANCY_FIELDS.get(where[0]) in form.fields:
            target, where = REDUNDANCY_FIELDS[where[0]], where[1:]  # the policy's own field
        words = _where(where) if target else _where(parts)
        message = "; ".join(problems)
        form.add_error(target, f"{words}: {message}" if words else message)


def _where(parts: list[str]) -> str:
    """``["0", "name"]`` as "item 1, name"."""
    return ", ".join(f"item {int(p) + 1}" if p.isdigit() else p.replace("_", " ") for p in parts)
