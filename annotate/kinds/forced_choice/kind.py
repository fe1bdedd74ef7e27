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
from collections.abc import Sequence
from typing import Any, ClassVar

from rest_framework.exceptions import ValidationError

#: The ``family`` the three kinds are registered with.
from annotate.kinds.forced_choice.config import FAMILY
from annotate.kinds.forced_choice.exports import METHOD_COLUMNS, QUESTION_COLUMNS, method_rows, question_rows
from annotate.kinds.forced_choice.generation import Question, build_items
from annotate.kinds.forced_choice.results import ForcedChoiceResults
from annotate.models import Assignment, Item
from annotate.tasks.base import TaskKind
from annotate.tasks.export_spec import Column, ExportItem, ExportTable
from annotate.tasks.gold_format import cell, yes_no
from explain_engine.api import NO_PREFERENCE, answer_categories, category_set, score_answers


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
    default_answer_s = 30.0
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

    def check_gold(self, item, gold: dict[str, Any]) -> None:
        """A gold answer must make the question's own correct choice (``secret["answer"]``: the predicted
        class for ``justify``, the true class for ``investigate``); any other gold would count every
        right answer to the question as a miss."""
        key = item.secret.get("answer")
        choice = gold.get("choice")
        if key is None or choice == key:
            return
        why = f"must be this question's answer key, “{key}”"
        if key == item.secret.get("predicted") and choice == item.secret.get("true_label"):
            why += (
                f" (the class the model predicted): “{choice}” is the text's true label, but this question "
                "is answered right by naming the model's prediction"
            )
        else:
            why += f": a gold answer “{choice}” would count every right answer to it as a miss"
        raise ValidationError({"answer": {"choice": [why]}})

    def categories(self, study) -> list:
        """Answers with their confidence level: 5 categories for two options with "no preference",
        4 without it (Lertvittayakumjorn & Toni 2019, Table 4, α)."""
        return category_set(self.options(study), self.no_preference, with_confidence=True)

    def agreement_value(self, answer: dict[str, Any]) -> Any:
        choice = answer.get("choice")
        if not isinstance(choice, str):
            return None
        return answer_categories([choice], [bool(answer.get("confident"))], with_confidence=True)[0]

    def stop_answer(self, answer: dict[str, Any]) -> dict[str, Any]:
        """The option chosen, whatever the confidence: a stopping rule asks whether the workers agree on it."""
        choice = answer.get("choice")
        return {"label": choice if isinstance(choice, str) else None}

    def fixed_strategies(self, study, answer: dict[str, Any]) -> list[str]:
        """Always the first or always the last answer button (the order of :meth:`answer_choices`)."""
        choices = self.answer_choices(study)
        given = {"choice": answer.get("choice"), "confident": answer.get("confident")}
        names = {0: "always the first button", len(choices) - 1: "always the last button"}
        return [name for i, name in sorted(names.items()) if choices and choices[i] == given]

    def export_columns(self, study) -> tuple[Column, ...]:
        return (
            ("shown", "what the worker was shown of the question (its evidence texts, and for some tasks the text and prediction), as JSON"),
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
            "shown": {k: v for k, v in item.payload.items() if k in self.payload_keys},
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

    def worker_share(self, study, documents: Sequence[int | None]) -> int:
        """With ``one_method_per_text_per_worker`` a worker answers one question per text (the rule
        :meth:`excluded_items` applies): as many questions as there are texts; else every question."""
        if not study.config.get("one_method_per_text_per_worker", True):
            return len(documents)
        return len(set(documents))

    def share_rule(self, study) -> str:
        if not study.config.get("one_method_per_text_per_worker", True):
            return ""
        return "a worker answers one method per text"

    def excluded_items(self, study, worker_id: int) -> list[int]:
        """Items of ``study`` this worker may not get: with ``one_method_per_text_per_worker``, every
        question on a text the worker was already given (under any method). Called by
        :func:`annotate.handout.assignment.next_assignment` inside its transaction, after the worker's row is
        locked, so two requests of one worker cannot both pass this check."""
        if not study.config.get("one_method_per_text_per_worker", True):
            return []
        seen = Assignment.objects.filter(study_id=study.pk, worker_id=worker_id).values("item__document_id")
        return list(Item.objects.filter(study_id=study.pk, document_id__in=seen).values_list("id", flat=True))
