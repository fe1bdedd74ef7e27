"""The form that creates a study of one of the three forced-choice tasks (Lertvittayakumjorn & Toni 2019); the study config it produces is
checked again by the task kind's schema (through the study rule, :mod:`annotate.studies.service`)."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

from django import forms
from rest_framework.exceptions import ValidationError

from annotate.access import is_admin
from annotate.crowd.providers import PROVIDERS
from annotate.kinds.forced_choice.config import FAMILY, SPLITS
from annotate.kinds.forced_choice.kind import ForcedChoiceKind
from annotate.machine.splits import fitting_split, split_sizes
from annotate.models import ModelRun, Study
from annotate.studies import service as study_service
from annotate.tasks import TASK_KINDS, get_kind
from annotate.tasks.base import REDUNDANCY_KEY
from annotate.tasks.study_form import REDUNDANCY_FIELDS, RedundancyFields
from explain_engine import api as engine

#: The family's kinds in the paper's task order, with their labels from the registry.
KINDS = [
    (name, TASK_KINDS.meta(name)["label"])
    for name in sorted(
        TASK_KINDS.where(family=FAMILY), key=lambda n: cast(ForcedChoiceKind, get_kind(n)).task
    )
]


def _method_choices() -> list[tuple[str, str]]:
    """Every registered method by its title (the engine's registry), in the titles' order."""
    methods = engine.METHODS
    return sorted(((code, methods[code].title) for code in methods), key=lambda c: (c[1].lower(), c[0]))


def _run_label(run: ModelRun) -> str:
    accuracy = ((run.metrics or {}).get("test") or {}).get("accuracy")
    tail = f", test accuracy {accuracy:.3f}" if isinstance(accuracy, int | float) else ""
    sizes = split_sizes(run)
    if sizes["test"] is not None:
        tail += f", {sizes['test']} test texts"
    return f"#{run.pk} {run.name} ({run.architecture} on {run.dataset.name}{tail})"


class RunChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: ModelRun) -> str:
        return _run_label(obj)


class ForcedChoiceStudyForm(RedundancyFields):
    """A study of one of the three tasks; the redundancy policy's fields follow the workers per question."""

    kind = forms.ChoiceField(choices=KINDS, widget=forms.RadioSelect, initial="justify")
    name = forms.CharField(max_length=200)
    model_run = RunChoiceField(
        queryset=ModelRun.objects.none(),
        help_text="The well-trained classifier; in task 1 the better of the two.",
    )
    worse_run = RunChoiceField(
        queryset=ModelRun.objects.none(), required=False, help_text="Task 1 only: the poorer classifier."
    )
    methods = forms.MultipleChoiceField(
        choices=[], widget=forms.CheckboxSelectMultiple, help_text="Evaluated with word evidence (W)."
    )
    ngram_methods = forms.MultipleChoiceField(
        choices=[],
        label="N-gram methods",
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Also evaluated with n-gram evidence (N).",
    )
    ngram_sizes = forms.CharField(initial="2, 3, 4", required=False, help_text="n-gram lengths for (N).")
    m = forms.IntegerField(
        min_value=1, max_value=20, initial=3, label="Evidence texts (m)", help_text="Top-m per explanation."
    )
    n_texts = forms.IntegerField(
        min_value=2,
        max_value=10000,
        initial=100,
        label="Texts",
        help_text="Half predicted correctly, half not.",
    )
    tau_h = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.9,
        required=False,
        label="τ_h",
        help_text="Task 2: max probability above.",
    )
    tau_l = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.7,
        required=False,
        label="τ_l",
        help_text="Task 3: max probability below.",
    )
    min_accuracy_gap = forms.FloatField(
        min_value=0, max_value=1, initial=0.05, required=False, help_text="Task 1."
    )
    split = forms.ChoiceField(choices=[(s, s) for s in SPLITS], initial="test")
    seed = forms.IntegerField(min_value=0, initial=0)
    one_method_per_text_per_worker = forms.BooleanField(
        required=False, initial=True, help_text="A worker never sees one text under two methods."
    )
    annotators_per_item = forms.IntegerField(min_value=1, max_value=50, initial=3)
    time_limit_min = forms.IntegerField(
        min_value=1, max_value=7 * 24 * 60, initial=30, label="Time limit (minutes)"
    )
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, help_text="Empty: the task's own."
    )
    provider = forms.ChoiceField(choices=[])
    open_enrollment = forms.BooleanField(required=False, help_text="Local provider: anyone with the link.")

    field_order = [
        *("kind", "name", "model_run", "worse_run", "methods", "ngram_methods", "ngram_sizes", "m"),
        *("n_texts", "tau_h", "tau_l", "min_accuracy_gap", "split", "seed", "one_method_per_text_per_worker"),
        *("annotators_per_item", "redundancy", *REDUNDANCY_FIELDS.values(), "time_limit_min", "instructions"),
    ]

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        runs = (
            ModelRun.objects.filter(status=ModelRun.Status.DONE)
            .select_related("dataset")
            .order_by("-created")
        )
        if not is_admin(user):
            runs = runs.filter(owner=user)
        self.fields["model_run"].queryset = runs
        self.fields["worse_run"].queryset = runs
        if not self.is_bound:
            self.fields["split"].initial = fitting_split(runs)
        self.fields["methods"].choices = self.fields["ngram_methods"].choices = _method_choices()
        self.fields["provider"].choices = [(p.name, p.title or p.name) for p in PROVIDERS.values()]
        self.fields["provider"].initial = "local"

    def clean_ngram_sizes(self) -> list[int] | None:
        raw = self.cleaned_data.get("ngram_sizes") or ""
        parts = [p for p in raw.replace(",", " ").split() if p]
        if not all(p.isdigit() and 1 <= int(p) <= 20 for p in parts):
            raise forms.ValidationError("whole numbers from 1 to 20, separated by commas")
        return sorted({int(p) for p in parts}) or None

    def clean(self):
        data = super().clean()
        if data.get("kind") == "reveal_model" and not data.get("worse_run"):
            self.add_error("worse_run", "Task 1 needs a second, poorer model run.")
        if data.get("ngram_methods") and not data.get("ngram_sizes"):
            self.add_error("ngram_sizes", "Give the n-gram lengths for the (N) methods.")
        return data

    def config(self) -> dict[str, Any]:
        """The kind's study config (before its schema fills in and checks it), without the redundancy
        policy, which the study rule checks."""
        data = self.cleaned_data
        methods: list[Any] = [{"method": m, "ngram_sizes": None} for m in data["methods"]]
        methods += [
            {"method": m, "ngram_sizes": data["ngram_sizes"]} for m in data.get("ngram_methods") or []
        ]
        config: dict[str, Any] = {
            "methods": methods,
            "m": data["m"],
            "n_texts": data["n_texts"],
            "split": data["split"],
            "seed": data["seed"],
            "one_method_per_text_per_worker": bool(data.get("one_method_per_text_per_worker")),
        }
        kind = data["kind"]
        if kind == "reveal_model":
            config.update(better_run=data["model_run"].pk, worse_run=data["worse_run"].pk)
            if data.get("min_accuracy_gap") is not None:
                config["min_accuracy_gap"] = data["min_accuracy_gap"]
        else:
            config["model_run"] = data["model_run"].pk
            key = "tau_h" if kind == "justify" else "tau_l"
            if data.get(key) is not None:
                config[key] = data[key]
        return config

    def study_data(self) -> dict[str, Any]:
        """The form as the study API's input."""
        data = self.cleaned_data
        kind = get_kind(data["kind"])
        assert isinstance(kind, ForcedChoiceKind)
        return {
            "name": data["name"],
            "dataset": data["model_run"].dataset_id,
            "kind": data["kind"],
            "config": {**self.config(), **self.redundancy_config()},
            "instructions": data.get("instructions") or kind.instructions,
            "annotators_per_item": data["annotators_per_item"],
            "time_limit_s": data["time_limit_min"] * 60,
            "provider": data["provider"],
            "provider_config": {"open_enrollment": True} if data.get("open_enrollment") else {},
        }

    @classmethod
    def initial_from(cls, study: Study) -> dict[str, Any]:
        """The form's values for an existing study (to edit a draft)."""
        config = study.config or {}
        methods = config.get("methods") or []
        ngram = [m for m in methods if m.get("ngram_sizes")]
        return {
            "kind": study.kind,
            "name": study.name,
            "model_run": config.get("model_run", config.get("better_run")),
            "worse_run": config.get("worse_run"),
            "methods": [m["method"] for m in methods if not m.get("ngram_sizes")],
            "ngram_methods": [m["method"] for m in ngram],
            "ngram_sizes": ", ".join(str(n) for n in (ngram[0]["ngram_sizes"] if ngram else [2, 3, 4])),
            "m": config.get("m", 3),
            "n_texts": config.get("n_texts", 100),
            "tau_h": config.get("tau_h", 0.9),
            "tau_l": config.get("tau_l", 0.7),
            "min_accuracy_gap": config.get("min_accuracy_gap", 0.05),
            "split": config.get("split", "test"),
            "seed": config.get("seed", 0),
            "one_method_per_text_per_worker": config.get("one_method_per_text_per_worker", True),
            "annotators_per_item": study.annotators_per_item,
            **cls.redundancy_initial(config.get(REDUNDANCY_KEY) or {}),
            "time_limit_min": max(1, round(study.time_limit_s / 60)),
            "instructions": study.instructions,
            "provider": study.provider,
            "open_enrollment": bool((study.provider_config or {}).get("open_enrollment")),
        }

    def check(self, user) -> str | None:
        """Run "Check texts" on the form's study: why it would have no question, or ``None`` when it
        has some (``ValidationError`` naming the field when its options are refused)."""
        found = dry_run(self, user)
        if found["questions"]:
            return None
        return (
            "No text qualifies for these settings, so the study would have no question. Try another "
            "split, more texts, other thresholds or another model run."
        )

    def save(self, user) -> Study:
        """A draft study owned by ``user``, checked by the study rule (``StudyInvalid``, a
        ``ValidationError``, otherwise)."""
        return study_service.create_study(user, self.study_data())


def preview(user, kind_name: str, config: Any) -> dict[str, Any]:
    """Generate the questions of a would-be study without storing anything: how many questions,
    texts and texts per split; ``ValidationError`` (naming the field, or saying how many texts
    qualify) otherwise."""
    kind = get_kind(kind_name)
    assert isinstance(kind, ForcedChoiceKind)
    try:
        cleaned = kind.validate_config(config, user=user)  # model runs: only those ``user`` may see
    except ValidationError as exc:
        raise ValidationError({"config": exc.detail}) from None
    run_id = cleaned.get("model_run", cleaned.get("better_run"))
    run = ModelRun.objects.filter(pk=run_id).only("dataset_id").first()
    study = Study(owner=user, dataset_id=run.dataset_id if run else None, kind=kind.name, config=cleaned)
    questions = kind.generate(study)
    texts = {q.document_id: q.secret["split"] for q in questions}
    return {
        "kind": kind.name,
        "questions": len(questions),
        "texts": len(texts),
        "per_split": dict(Counter(texts.values())),
        "methods": [m["label"] for m in cleaned["methods"]],
    }


def dry_run(form: ForcedChoiceStudyForm, user) -> dict[str, Any]:
    """:func:`preview` of the form's study."""
    return preview(user, form.cleaned_data["kind"], form.config())
