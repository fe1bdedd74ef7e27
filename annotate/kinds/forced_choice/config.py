"""The forced-choice family's study config (Lertvittayakumjorn & Toni 2019 §3, Table 1): the methods
compared (with n-gram sizes for the n-gram methods), how many texts and from which split, the seed, the
share rule (one method per text per worker) and the labels; the two one-run tasks also name their model
run."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.access import visible_to
from annotate.models import ModelRun, Prediction
from annotate.tasks.base import BaseConfigSerializer
from explain_engine import api as engine
from explain_engine.api import NO_PREFERENCE

FAMILY = "forced_choice"
SPLITS = ("all", "train", "validation", "test")
MAX_NGRAM = 20


def _method_label(method: str, sizes: list[int] | None) -> str:
    """Lertvittayakumjorn & Toni 2019's naming: "(W)" for word evidence, "(N)" for n-gram evidence (Table 2)."""
    return f"{method} ({'W' if sizes is None else 'N'})"


class MethodField(serializers.Field):
    """One explanation method to evaluate: a registry name, or ``{"method", "ngram_sizes", "label"}``.

    Stored as ``{"method": name, "ngram_sizes": [n, ...] or None, "label": str}``; ``ngram_sizes``
    None means the top-m words are the evidence, else the top-m non-overlapping n-grams
    (Lertvittayakumjorn & Toni 2019, §4.3). A plain name takes the study's ``ngram_sizes``.
    """

    default_error_messages = {
        "invalid": 'must be a method name or an object {"method", "ngram_sizes", "label"}',
    }

    def to_internal_value(self, data: Any) -> dict:
        if isinstance(data, str):
            data = {"method": data}
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("method"), str)
            or not data["method"].strip()
        ):
            self.fail("invalid")
        unknown = sorted(set(data) - {"method", "ngram_sizes", "label"})
        if unknown:
            raise ValidationError(f"unknown key {unknown[0]!r}; use method, ngram_sizes, label")
        try:
            engine.get_method(data["method"].strip())
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        out: dict[str, Any] = {"method": data["method"].strip()}
        if "ngram_sizes" in data:
            out["ngram_sizes"] = _clean_sizes(data["ngram_sizes"])
        label = data.get("label")
        if label is not None and (not isinstance(label, str) or not label.strip() or len(label) > 100):
            raise ValidationError("label must be a non-empty text of at most 100 characters")
        if label is not None:
            out["label"] = label.strip()
        return out

    def to_representation(self, value: dict) -> dict:
        return value


def _clean_sizes(value: Any) -> list[int] | None:
    if value in (None, []):
        return None
    if not isinstance(value, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_NGRAM for n in value
    ):
        raise ValidationError(f"ngram_sizes must be a list of n-gram lengths from 1 to {MAX_NGRAM}, or null")
    return sorted(set(value))


class ForcedChoiceConfigSerializer(BaseConfigSerializer):
    """Options every forced-choice study has (Lertvittayakumjorn & Toni 2019, §4.4 defaults)."""

    methods = serializers.ListField(
        child=MethodField(), min_length=1, max_length=50, help_text="The explanation methods to evaluate."
    )
    ngram_sizes = serializers.JSONField(
        required=False,
        default=None,
        help_text="Evidence n-gram lengths for methods that do not set their own (null: single words).",
    )
    m = serializers.IntegerField(
        min_value=1, max_value=20, default=3, help_text="Evidence texts per explanation."
    )
    n_texts = serializers.IntegerField(
        min_value=2,
        max_value=10000,
        default=100,
        help_text="Input texts; half predicted correctly, half not.",
    )
    split = serializers.ChoiceField(
        choices=SPLITS,
        default="test",
        help_text="Draw texts from the model run's test split (Lertvittayakumjorn & Toni 2019), another split, or all documents.",
    )
    seed = serializers.IntegerField(min_value=0, default=0, help_text="Seeds text choice, order and sides.")
    one_method_per_text_per_worker = serializers.BooleanField(
        default=True, help_text="A worker never sees the same text twice under different methods."
    )
    labels = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        help_text="The classes in the order the page lists them (default: the model run's labels).",
    )

    def validate_ngram_sizes(self, value: Any) -> list[int] | None:
        return _clean_sizes(value)

    def validate_labels(self, labels: list[str]) -> list[str]:
        if len(set(labels)) != len(labels):
            raise ValidationError("labels must be distinct")
        if NO_PREFERENCE in labels:
            raise ValidationError(f"{NO_PREFERENCE!r} cannot be a class")
        return labels

    def validate(self, data: dict) -> dict:
        methods = []
        for entry in data["methods"]:
            sizes = entry["ngram_sizes"] if "ngram_sizes" in entry else data.get("ngram_sizes")
            methods.append(
                {
                    "method": entry["method"],
                    "ngram_sizes": sizes,
                    "label": entry.get("label") or _method_label(entry["method"], sizes),
                }
            )
        names = [m["label"] for m in methods]
        if len(set(names)) != len(names):
            raise ValidationError({"methods": ["each method (and evidence level) may appear once"]})
        data["methods"] = methods
        return data

    def finished_run(self, run_id: int, field: str):
        """The finished ``ModelRun`` ``run_id``, among the runs the ``user`` of the serializer's context may
        see when it names one (:func:`annotate.access.visible_to`); ``ValidationError`` naming ``field``
        otherwise, the same for another researcher's run as for none at all."""
        runs = ModelRun.objects.all()
        user = self.context.get("user")
        if user is not None:
            runs = visible_to(runs, user)
        run = runs.filter(pk=run_id).only("id", "status", "metrics", "dataset_id", "owner_id").first()
        if run is None:
            raise ValidationError({field: ["no such model run"]})
        if run.status != ModelRun.Status.DONE:
            raise ValidationError({field: [f"model run {run_id} has not finished training"]})
        return run

    @staticmethod
    def fill_labels(data: dict, run, field: str) -> None:
        """Default ``labels`` to the run's classes; given ones must be exactly those classes."""
        known = [str(label) for label in (run.metrics or {}).get("labels") or []]
        if not known:
            known = sorted(set(Prediction.objects.filter(model_run=run).values_list("label", flat=True)))
        if "labels" not in data:
            if NO_PREFERENCE in known:
                raise ValidationError({field: [f"the run has a class named {NO_PREFERENCE!r}"]})
            data["labels"] = known
        elif sorted(data["labels"]) != sorted(known):
            raise ValidationError({"labels": [f"must be the model run's classes {known} (in any order)"]})


class OneRunConfigSerializer(ForcedChoiceConfigSerializer):
    """Options of a task that explains one well-trained classifier (justify, investigate)."""

    model_run = serializers.IntegerField(help_text="The well-trained classifier (a finished model run).")

    def validate(self, data: dict) -> dict:
        data = super().validate(data)
        self.fill_labels(data, self.finished_run(data["model_run"], "model_run"), "model_run")
        return data
