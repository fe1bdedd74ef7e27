"""The aggregated exports of a forced-choice study: scores per method (Lertvittayakumjorn & Toni 2019,
Table 4, long form) and per question, over the counted answers of :mod:`.results`."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from annotate.kinds.forced_choice.results import evaluation_results, scored_answers, table_rows
from annotate.models import Study
from annotate.tasks.export_spec import Column, Table

METHOD_COLUMNS: tuple[Column, ...] = (
    ("split", "all texts, correctly predicted (correct) or misclassified"),
    ("method", "the method with its evidence level"),
    ("mean", "the mean score over its questions"),
    ("ci_low", "lower end of the percentile bootstrap interval"),
    ("ci_high", "upper end of the interval"),
    ("questions", "questions with counted answers"),
    ("answers", "counted answers"),
    ("best", "the best method of the split"),
    ("p_value", "the test of this method against the best (paired by text)"),
    ("test", "the test used"),
    ("different_from_best", "whether the difference is significant"),
)
QUESTION_COLUMNS: tuple[Column, ...] = (
    ("item", "the question's item id"),
    ("document", "the text's id"),
    ("method", "the method with its evidence level"),
    ("split", "correct or misclassified"),
    ("correct_answer", "the right option"),
    ("answers", "counted answers"),
    ("choices", "their choices, in submission order"),
    ("mean_score", "the mean score of the answers"),
)


def method_rows(study: Study, unverified: bool = False) -> Table:
    """Table 4 in long form (:func:`annotate.kinds.forced_choice.results.table_rows`)."""
    columns, rows = table_rows(evaluation_results(study), "scores")
    return columns, [dict(zip(columns, row, strict=True)) for row in rows]


def question_rows(study: Study, unverified: bool = False) -> Table:
    """One row per question with counted answers, in item order."""
    by_item: dict[int, list] = defaultdict(list)
    for answer in scored_answers(study):
        by_item[answer.item].append(answer)
    rows: list[dict[str, Any]] = []
    for item in sorted(by_item):
        answers = by_item[item]
        first = answers[0]
        rows.append(
            {
                "item": item,
                "document": first.external_id,
                "method": first.method,
                "split": first.split,
                "correct_answer": first.answer,
                "answers": len(answers),
                "choices": [a.choice for a in answers],
                "mean_score": round(sum(a.score for a in answers) / len(answers), 6),
            }
        )
    return [name for name, _ in QUESTION_COLUMNS], rows
