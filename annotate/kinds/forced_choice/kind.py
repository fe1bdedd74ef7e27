"""What the three forced-choice tasks of Lertvittayakumjorn & Toni 2019 (§3, Table 1) share.

One item is one *question*: one input text explained by one method (two models' explanations in
``reveal_model``). The annotator picks an option (a model, or a class) and says whether they are
confident; ``reveal_model`` and ``justify`` also offer "no preference" (Table 1, last row), and
``investigate`` does not (§3.3). An answer is ``{"choice": option, "confident": bool}`` or
``{"choice": "no preference", "confident": null}``.

The item's ``secret`` holds everything the browser must not see: the method and its label, the
correct option (``answer``), the text's split (correctly predicted or misclassified), the true and
predicted classes and, in ``reveal_model``, which model was shown on which side. Scores follow
Table 1: ±1 (in)correct and confident, ±0.5 unconfident, 0 no preference
(:func:`explain_engine.api.score_answers`).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.access import visible_to
from annotate.kinds.forced_choice.exports import METHOD_COLUMNS, QUESTION_COLUMNS, method_rows, question_rows
from annotate.kinds.forced_choice.generation import Question, build_items
from annotate.kinds.forced_choice.results import ForcedChoiceResults
from annotate.models import Assignment, Item, ModelRun, Prediction
from annotate.tasks.base import BaseConfigSerializer, TaskKind
from annotate.tasks.export_spec import Column, ExportItem, ExportTable
from annotate.tasks.gold_format import cell, yes_no
from explain_engine.api import NO_PREFERENCE, answer_categories, category_set, get_method, score_answers

#: The ``family`` the three kinds are registered with.
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
            get_method(data["method"].strip())
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


class ForcedChoiceKind(TaskKind):
    """A forced-choice question per (text, method); subclasses name their options and generator."""

    family = FAMILY
    #: The task's number in Lertvittayakumjorn & Toni 2019 (the order of the create form's choices).
    task: ClassVar[int] = 0
    template = "forced_choice/task.html"
    page_script = "hatlab/kinds/forced_choice.js"
    results = ForcedChoiceResults
    create_url_name = "forced-choice-new"
    # by path: the form module imports the registered kinds and the study API
    edit_form = "annotate.kinds.forced_choice.forms.ForcedChoiceStudyForm"
    no_preference: ClassVar[bool] = True
    instructions: ClassVar[str] = ""

    def options(self, study) -> list[str]:
        """The options an annotator picks from (before confidence)."""
        return list(study.config.get("labels") or [])

    def answer_choices(self, study) -> list[dict[str, Any]]:
        """The answer buttons in the order of Lertvittayakumjorn & Toni 2019's Figure 2: for two options
        ``A confident, A unconfident, no preference, B unconfident, B confident``; with more options,
        each option confident then unconfident, "no preference" last."""
        options = self.options(study)
        pairs = [[{"choice": o, "confident": True}, {"choice": o, "confident": False}] for o in options]
        none = [{"choice": NO_PREFERENCE, "confident": None}] if self.no_preference else []
        if len(options) == 2:
            return [*pairs[0], *none, pairs[1][1], pairs[1][0]]
        return [c for pair in pairs for c in pair] + none

    def public_config(self, study) -> dict[str, Any]:
        return {
            **super().public_config(study),
            "instructions": study.instructions or self.instructions,
            "labels": list(study.config.get("labels") or []),
            "options": self.options(study),
            "choices": self.answer_choices(study),
            "no_preference": self.no_preference,
        }

    def public_payload(self, item) -> dict[str, Any]:
        """The generators put nothing secret in ``payload``; this keeps only the kind's public keys."""
        return {k: v for k, v in item.payload.items() if k in self.payload_keys}

    payload_keys: ClassVar[frozenset[str]] = frozenset()

    def build_items(self, study) -> list:
        return build_items(study, self)

    @abstractmethod
    def generate(self, study) -> list[Question]:
        """The study's questions, before they are put in a seeded random order."""

    def validate_answer(self, item, answer: Any, timings: dict[str, Any]) -> dict[str, Any]:
        options = self.options(item.study)
        if not isinstance(answer, dict):
            raise ValidationError(
                {"answer": {"non_field_errors": ["must be an object with choice and confident"]}}
            )
        unknown = sorted(set(answer) - {"choice", "confident"})
        if unknown:
            raise ValidationError({"answer": {unknown[0]: ["unknown field; send choice and confident"]}})
        choice, confident = answer.get("choice"), answer.get("confident")
        allowed = options + ([NO_PREFERENCE] if self.no_preference else [])
        if not isinstance(choice, str) or choice not in allowed:
            raise ValidationError({"answer": {"choice": [f"must be one of {', '.join(allowed)}"]}})
        if choice == NO_PREFERENCE:
            if confident not in (None, False):
                raise ValidationError({"answer": {"confident": ['must be empty with "no preference"']}})
            return {"choice": choice, "confident": None}
        if not isinstance(confident, bool):
            raise ValidationError({"answer": {"confident": ["must be true or false"]}})
        return {"choice": choice, "confident": confident}

    gold_key_columns = ()
    gold_columns = (
        ("choice", "the option the gold answer picks, as the page names it"),
        ("confident", "yes or no (empty with “no preference”)"),
    )

    def gold_answer(self, item, row: dict[str, Any]) -> Any:
        choice = cell(row, "choice")
        if choice == NO_PREFERENCE:
            return {"choice": choice, "confident": None}
        return {"choice": choice, "confident": yes_no(row.get("confident", ""), "confident")}

    def describe_gold(self, item, gold: dict[str, Any]) -> str:
        if gold.get("confident") is None:
            return f"“{gold['choice']}”"
        return f"“{gold['choice']}”, {'confident' if gold['confident'] else 'not confident'}"

    def grade_gold(self, item, answer: dict[str, Any]) -> bool | None:
        """Passed when the answer makes the gold's choice, whatever its confidence (a gold question as in
        Lertvittayakumjorn & Toni 2019 §4: a worker who misses it is not paying attention)."""
        gold = item.secret.get("gold")
        if not gold:
            return None
        return answer.get("choice") == gold["choice"]

    def categories(self, study) -> list:
        """Answers with their confidence level: 5 categories for two options with "no preference",
        4 without it (Lertvittayakumjorn & Toni 2019, Table 4, α)."""
        return category_set(self.options(study), self.no_preference, with_confidence=True)

    def agreement_value(self, answer: dict[str, Any]) -> Any:
        choice = answer.get("choice")
        if not isinstance(choice, str):
            return None
        return answer_categories([choice], [bool(answer.get("confident"))], with_confidence=True)[0]

    def fixed_strategies(self, study, answer: dict[str, Any]) -> list[str]:
        """Always the first or always the last answer button (the order of :meth:`answer_choices`)."""
        choices = self.answer_choices(study)
        given = {"choice": answer.get("choice"), "confident": answer.get("confident")}
        names = {0: "always the first button", len(choices) - 1: "always the last button"}
        return [name for i, name in sorted(names.items()) if choices and choices[i] == given]

    def export_columns(self, study) -> tuple[Column, ...]:
        return (
            ("choice", "the option the worker picked (or “no preference”)"),
            ("confident", "whether the worker said they were confident (empty with “no preference”)"),
            ("method", "the explanation method of the question (researcher only: workers never see it)"),
            ("method_label", "the method with its evidence level, as the results name it"),
            ("ngram_sizes", "the n-gram sizes of the evidence (empty: single words)"),
            ("split", "whether the model predicted the text correctly (correct) or not (misclassified)"),
            ("true_label", "the text's label, as imported"),
            ("predicted", "the class the model predicted"),
            ("correct_answer", "the option that is right for this question"),
            ("score", "the answer's score: ±1 confident, ±0.5 not confident, 0 no preference "
                      "(Lertvittayakumjorn & Toni 2019, Table 1)"),
            ("models", "the model runs compared: which run was shown as which option, or the one run explained"),
        )  # fmt: skip

    def export_answer(self, study, item: ExportItem, answer: dict[str, Any]) -> dict[str, Any]:
        secret = item.secret
        scored = "answer" in secret and isinstance(answer.get("choice"), str)
        if "sides" in secret:
            models = {option: run for option, run in secret["sides"].items()}
        else:
            models = {"explained": secret.get("model_run")}
        return {
            "choice": answer.get("choice"),
            "confident": answer.get("confident"),
            "method": secret.get("method"),
            "method_label": secret.get("method_label"),
            "ngram_sizes": secret.get("ngram_sizes"),
            "split": secret.get("split"),
            "true_label": secret.get("true_label"),
            "predicted": secret.get("predicted"),
            "correct_answer": secret.get("answer"),
            "score": self.score(secret, answer) if scored else None,
            "models": models,
        }

    def export_tables(self, study) -> tuple[ExportTable, ...]:
        """Per method and split the mean score with its interval and test against the best method
        (Lertvittayakumjorn & Toni 2019, Table 4), and per question its mean score."""
        return (
            ExportTable(
                "methods", "Scores per method", "per method and split: mean score, interval, test against the best",
                METHOD_COLUMNS, method_rows,
            ),
            ExportTable(
                "questions", "Scores per question", "per question: its method, split, answers and mean score",
                QUESTION_COLUMNS, question_rows,
            ),
        )  # fmt: skip

    @staticmethod
    def score(item_secret: dict[str, Any], answer: dict[str, Any]) -> float:
        """Lertvittayakumjorn & Toni 2019, Table 1: +1 / +0.5 correct, −0.5 / −1 wrong (unconfident / confident), 0 no preference."""
        return float(
            score_answers([answer.get("choice")], [item_secret["answer"]], [bool(answer.get("confident"))])[0]
        )

    def excluded_items(self, study, worker_id: int) -> list[int]:
        """Items of ``study`` this worker may not get: with ``one_method_per_text_per_worker``, every
        question on a text the worker was already given (under any method). Called by
        :func:`annotate.handout.assignment.next_assignment` inside its transaction, after the worker's row is
        locked, so two requests of one worker cannot both pass this check."""
        if not study.config.get("one_method_per_text_per_worker", True):
            return []
        seen = Assignment.objects.filter(study_id=study.pk, worker_id=worker_id).values("item__document_id")
        return list(Item.objects.filter(study_id=study.pk, document_id__in=seen).values_list("id", flat=True))
