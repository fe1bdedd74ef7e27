"""Forms of the model-run pages: start training, ask for explanations. Both hand their data to the
same validation the API uses (:func:`~annotate.machine.runs.clean_params`,
:func:`~annotate.machine.explaining.clean_explanation_params`) and show its errors on the field."""

from __future__ import annotations

from django import forms
from django.conf import settings

from annotate.access import is_admin
from annotate.infra.json_input import JSONInputError, parse_json
from annotate.machine.errors import MachineInputError
from annotate.machine.explaining import (
    TARGET_GOLD,
    TARGET_PREDICTED,
    available_methods,
    clean_explanation_params,
)
from annotate.machine.runs import architecture_choices, check_trainable, clean_params, documents_with_words
from annotate.models import Dataset, ModelRun
from explain_engine import api as engine

DEFAULT_ARCHITECTURE = "bilstm_attention"  # the main model of Sen et al. 2020
# Form fields that become TrainConfig fields, and those that become model constructor arguments.
TRAIN_FORM_FIELDS = ("epochs", "batch_size", "lr", "seed", "max_len")
MODEL_FORM_FIELDS = ("embedding_dim", "hidden_size", "checkpoint")


def _apply_error(form: forms.Form, exc: MachineInputError, field_map: dict[str, str]) -> None:
    """Put a validation error on the form field it names (or on the form when none matches)."""
    head, _, rest = exc.field.partition(".")
    target = field_map.get(exc.field) or field_map.get(rest) or field_map.get(head)
    form.add_error(target if target in form.fields else None, exc.message)


class ModelRunForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to “architecture on dataset”.")
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none())
    architecture = forms.ChoiceField(choices=(), initial=DEFAULT_ARCHITECTURE)
    epochs = forms.IntegerField(min_value=1, required=False, help_text="Empty: the paper's value.")
    batch_size = forms.IntegerField(min_value=1, required=False, help_text="Empty: the paper's value.")
    lr = forms.FloatField(
        min_value=0, required=False, label="Learning rate", help_text="Empty: the paper's value."
    )
    seed = forms.IntegerField(min_value=0, required=False, help_text="Empty: 13.")
    max_len = forms.IntegerField(min_value=1, required=False, label="Max tokens per text")
    embedding_dim = forms.IntegerField(min_value=1, required=False, label="Embedding size")
    hidden_size = forms.IntegerField(
        min_value=1, required=False, label="Hidden size", help_text="Recurrent models only."
    )
    checkpoint = forms.CharField(
        max_length=500,
        required=False,
        label="Pre-trained checkpoint",
        help_text=(
            "Transformer only: one of your transformer runs (run:<id>), a model of the server's model "
            "folder, or a Hugging Face hub name (org/model) where this server may download."
        ),
    )
    extra = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Other training parameters (JSON)",
        help_text='e.g. {"patience": 3, "model": {"dropout": 0.3}}',
    )
    gpu = forms.BooleanField(required=False, label="Run on a GPU worker")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        datasets = Dataset.objects.all() if is_admin(user) else Dataset.objects.filter(owner=user)
        self.fields["dataset"].queryset = datasets.order_by("name")
        self.fields["architecture"].choices = [(a, a) for a in architecture_choices()]
        if not any(a in engine.FROM_CHECKPOINT for a in architecture_choices()):
            del self.fields["checkpoint"]

    def clean_extra(self) -> dict:
        raw = (self.cleaned_data.get("extra") or "").strip()
        if not raw:
            return {}
        try:
            value = parse_json(
                raw,
                max_bytes=settings.HATLAB_JSON_MAX_BYTES,
                max_depth=settings.HATLAB_JSON_MAX_DEPTH,
                what="this text",
            )
        except JSONInputError as exc:
            where = "" if exc.field == "detail" else f"{exc.field}: "
            raise forms.ValidationError(f"{where}{exc.message[:1].upper()}{exc.message[1:]}.") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("Give a JSON object of training parameters.")
        return value

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        params = dict(data.get("extra") or {})
        for name in TRAIN_FORM_FIELDS:
            if data.get(name) is not None:
                params[name] = data[name]
        model = params.get("model", {})
        if isinstance(model, dict):
            model = dict(model)
            for name in MODEL_FORM_FIELDS:
                if data.get(name) not in (None, ""):
                    model[name] = data[name]
            if model:
                params["model"] = model
        given_model_fields = [n for n in MODEL_FORM_FIELDS if data.get(n) not in (None, "")]
        field_map = {f"params.{name}": name for name in TRAIN_FORM_FIELDS}
        field_map.update(
            {"architecture": "architecture", "dataset": "dataset", "name": "name", "params": "extra"}
        )
        field_map["params.model"] = given_model_fields[-1] if given_model_fields else "extra"
        field_map.update({f"params.model.{name}": name for name in given_model_fields})
        if "checkpoint" in self.fields:  # a transformer without one: the error goes on the field
            field_map["params.model.checkpoint"] = "checkpoint"
        try:
            data["params"] = clean_params(data["architecture"], params, self.user)
            check_trainable(data["dataset"])
        except MachineInputError as exc:
            if exc.field in field_map:
                self.add_error(field_map[exc.field], exc.message)
            elif exc.field.startswith("params."):
                self.add_error("extra", f"{exc.field.removeprefix('params.')}: {exc.message}")
            else:
                self.add_error(None, exc.message)
        return data


class ExplainForm(forms.Form):
    methods = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple)
    target = forms.ChoiceField(choices=(), help_text="The class each word's relevance is computed for.")
    m = forms.IntegerField(min_value=1, max_value=50, initial=3, label="Evidence texts (m)")
    unit = forms.ChoiceField(
        choices=[("word", "single words"), ("ngram", "non-overlapping n-grams")],
        initial="word",
        label="Evidence unit",
    )
    ngram_sizes = forms.CharField(
        required=False, initial="2,3,4", label="n-gram sizes", help_text="Comma-separated, e.g. 2,3,4."
    )
    documents = forms.IntegerField(
        min_value=1, required=False, label="Only the first N documents", help_text="Empty: every document."
    )
    faithfulness = forms.BooleanField(
        required=False,
        initial=True,
        label="Measure faithfulness",
        help_text="Comprehensiveness, sufficiency and Kendall's τ of every map (DeYoung et al. 2020; "
        "Jain & Wallace 2019), for the human-vs-machine dashboard; a few forward passes per word.",
    )
    gpu = forms.BooleanField(required=False, label="Run on a GPU worker")

    def __init__(self, *args, model_run: ModelRun, **kwargs):
        super().__init__(*args, **kwargs)
        self.model_run = model_run
        self.fields["methods"].choices = [
            (m, engine.describe_method(m).title) for m in available_methods(model_run)
        ]
        labels = list(model_run.metrics.get("labels") or [])
        self.fields["target"].choices = [
            (TARGET_PREDICTED, "the predicted class"),
            (TARGET_GOLD, "the gold class"),
            *((label, f"class “{label}”") for label in labels),
        ]
        sizes = (model_run.params.get("model") or {}).get("filter_sizes")
        if model_run.architecture == "cnn":
            self.fields["ngram_sizes"].initial = ",".join(str(n) for n in (sizes or (2, 3, 4)))

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        request = {
            "methods": data["methods"],
            "target": data["target"],
            "m": data["m"],
            "faithfulness": bool(data.get("faithfulness")),
        }
        if data["unit"] == "ngram":
            try:
                request["ngram_sizes"] = [
                    int(p) for p in (data.get("ngram_sizes") or "").split(",") if p.strip()
                ]
            except ValueError:
                self.add_error("ngram_sizes", "Give whole numbers separated by commas.")
                return data
            if not request["ngram_sizes"]:
                self.add_error("ngram_sizes", "Give at least one n-gram size.")
                return data
        if data.get("documents"):
            request["documents"] = list(
                documents_with_words(self.model_run.dataset).values_list("pk", flat=True)[: data["documents"]]
            )
        try:
            data["params"] = clean_explanation_params(self.model_run, request)
        except MachineInputError as exc:
            _apply_error(
                self, exc, {"methods": "methods", "target": "target", "m": "m", "ngram_sizes": "ngram_sizes"}
            )
        return data
