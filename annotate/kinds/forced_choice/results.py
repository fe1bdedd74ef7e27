"""Scores of a forced-choice study: Lertvittayakumjorn & Toni 2019's Table 4, the score distributions of its Figure 3 and
the Fleiss κ of Table 4's last row, computed by the engine (:mod:`explain_engine.api`).

Every answer scores the method of its question (Table 1: ±1 confident, ±0.5 unconfident, 0 no
preference). A question's score is the mean of its workers' answers; a method's mean is taken over
its questions, for all texts and separately for the correctly predicted (✓) and misclassified (✗)
texts, with a percentile bootstrap interval over questions. Each method is tested against the best
method of the same column with the two-sided Wilcoxon signed-rank test on per-text scores paired by
text (every method explains the same texts); Lertvittayakumjorn & Toni 2019 does not name its test (see the engine module).
Answers to gold or retired items and answers of workers excluded by their gold trust are left out,
as in :mod:`annotate.quality.aggregation`. :class:`ForcedChoiceResults` is the family's results page
(``?test=`` and ``?alpha=`` pick the significance test and level).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from annotate.infra import csvfile
from annotate.kinds.forced_choice.generation import CORRECT, MISCLASSIFIED
from annotate.models import Response, Study, Worker
from annotate.quality.exclusion import excluded_worker_ids
from annotate.tasks import get_kind
from annotate.tasks.results import ChoiceField, FloatField, ResultsPage, from_results
from explain_engine.api import FORCED_CHOICE_SCORES as SCORE_VALUES
from explain_engine.api import (
    LEVEL,
    N_BOOT,
    TESTS,
    forced_choice_kappa,
    forced_choice_report,
    json_safe,
    score_answers,
    summarize_scores,
)
from explain_engine.api import score_distribution as engine_score_distribution

SPLITS = ("all", CORRECT, MISCLASSIFIED)
SPLIT_TITLES = {"all": "all texts", CORRECT: "correctly predicted", MISCLASSIFIED: "misclassified"}
TABLES = ("scores", "distribution", "kappa", "answers")


@dataclass(frozen=True)
class ScoredAnswer:
    """One counted answer with the score it gives its question's method."""

    response: int
    item: int
    worker: int
    document: int
    external_id: str
    method: str
    split: str
    choice: str
    confident: bool | None
    answer: str
    score: float


def scored_answers(study: Study) -> list[ScoredAnswer]:
    """The study's counted answers, scored (one query for the responses, one for exclusions)."""
    rows = list(
        Response.objects.filter(study=study, item__is_gold=False, item__retired=False)
        .counted()
        .exclude(worker_id__in=excluded_worker_ids(study))
        .order_by("id")
        .values_list("id", "item_id", "worker_id", "answer", "item__secret")
    )
    rows = [r for r in rows if isinstance(r[3], dict) and isinstance(r[4], dict) and "answer" in r[4]]
    if not rows:
        return []
    scores = score_answers(
        [r[3].get("choice") for r in rows],
        [r[4]["answer"] for r in rows],
        [bool(r[3].get("confident")) for r in rows],
    )
    return [
        ScoredAnswer(
            response=pk,
            item=item,
            worker=worker,
            document=int(secret["document"]),
            external_id=str(secret.get("external_id", "")),
            method=str(secret["method_label"]),
            split=str(secret["split"]),
            choice=str(answer.get("choice")),
            confident=answer.get("confident"),
            answer=str(secret["answer"]),
            score=float(score),
        )
        for (pk, item, worker, answer, secret), score in zip(rows, scores.tolist(), strict=True)
    ]


def method_order(study: Study, answers: Iterable[ScoredAnswer] = ()) -> list[str]:
    """The study's method labels in config order (then any others found among the answers)."""
    labels = [m["label"] for m in study.config.get("methods", [])]
    return list(dict.fromkeys([*labels, *(a.method for a in answers)]))


def score_table(
    answers: Sequence[ScoredAnswer],
    test: str = "wilcoxon",
    alpha: float = 0.05,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> list[dict[str, Any]]:
    """The engine's rows (split, method, mean, CI, n, p-value against the best, ...) over texts:
    a question is one method on one text, so questions pair across methods by text."""
    if not answers:
        return []
    return summarize_scores(
        [a.method for a in answers],
        [a.document for a in answers],
        [a.score for a in answers],
        [a.split for a in answers],
        test=test,
        alpha=alpha,
        n_boot=n_boot,
        level=level,
        seed=seed,
    )


def table4(rows: Sequence[dict[str, Any]], methods: Sequence[str]) -> list[dict[str, Any]]:
    """Lertvittayakumjorn & Toni 2019's Table 4 layout: one row per method, one cell per split (all / ✓ / ✗), each cell
    the engine's row or None when the method has no answer in that split."""
    cells = {(r["method"], r["split"]): r for r in rows}
    return [{"method": m, "cells": [cells.get((m, s)) for s in SPLITS]} for m in methods]


def score_distribution(answers: Sequence[ScoredAnswer], methods: Sequence[str]) -> list[dict[str, Any]]:
    """Per method, how many answers scored each of −1, −0.5, 0, 0.5, 1 (Lertvittayakumjorn & Toni 2019, Figure 3)."""
    return engine_score_distribution([a.method for a in answers], [a.score for a in answers], methods)


def kappa(study: Study, answers: Sequence[ScoredAnswer], n_boot: int = N_BOOT, seed: int | None = 0) -> dict:
    """Fleiss κ over the workers' answers to each question, with confidence levels (α) and without
    (β), Lertvittayakumjorn & Toni 2019 Table 4's last row."""
    kind: Any = get_kind(study.kind)  # a ForcedChoiceKind (its module imports this one)
    estimates = forced_choice_kappa(
        [a.item for a in answers],
        [a.choice for a in answers],
        [bool(a.confident) for a in answers],
        kind.options(study),
        no_preference=kind.no_preference,
        n_boot=n_boot,
        seed=seed,
    )
    return {key: est.to_dict() for key, est in estimates.items()}


def evaluation_results(
    study: Study,
    test: str = "wilcoxon",
    alpha: float = 0.05,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> dict[str, Any]:
    """Everything the results page, its CSV files and the API show about ``study``."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; use one of {TESTS}")
    answers = scored_answers(study)
    methods = method_order(study, answers)
    kind: Any = get_kind(study.kind)  # a ForcedChoiceKind (its module imports this one)
    report = forced_choice_report(
        questions=[a.item for a in answers],
        texts=[a.document for a in answers],
        methods=[a.method for a in answers],
        splits=[a.split for a in answers],
        scores=[a.score for a in answers],
        picked=[a.choice for a in answers],
        confident=[bool(a.confident) for a in answers],
        options=kind.options(study),
        method_order=methods,
        no_preference=kind.no_preference,
        test=test,
        alpha=alpha,
        n_boot=n_boot,
        seed=seed,
    )
    return {
        "task": study.kind,
        "test": test,
        "alpha": alpha,
        "level": LEVEL,
        "answers": len(answers),
        "questions": len({a.item for a in answers}),
        "texts": len({a.document for a in answers}),
        "workers": len({a.worker for a in answers}),
        "methods": methods,
        "splits": list(SPLITS),
        "scores": report["scores"],
        "table": table4(report["scores"], methods),
        "distribution": report["distribution"],
        "kappa": report["kappa"],
        "scored": answers,
        "owner_id": study.owner_id,  # whose pseudonyms the answers table shows
    }


# ---------------------------------------------------------------------------------------- charts, CSV


def means_chart(results: dict[str, Any]) -> dict[str, Any]:
    """Bar-chart data (``frontend/src/charts.ts``): mean score per method with its interval, one
    series per split."""
    series = []
    for s, split in enumerate(SPLITS):
        cells = [row["cells"][s] for row in results["table"]]
        series.append(
            {
                "name": SPLIT_TITLES[split],
                "values": [c["mean"] if c else None for c in cells],
                "lower": [c["ci_low"] if c else None for c in cells],
                "upper": [c["ci_high"] if c else None for c in cells],
            }
        )
    return {"labels": results["methods"], "series": _finite(series), "title": "Mean score", "yLabel": "score"}


def distribution_chart(results: dict[str, Any]) -> dict[str, Any]:
    """Bar-chart data: share of answers per score value and method (Lertvittayakumjorn & Toni 2019, Figure 3)."""
    rows = results["distribution"]
    series = [
        {"name": f"{v:+g}" if v else "0", "values": [r["shares"][k] for r in rows]}
        for k, v in enumerate(SCORE_VALUES)
    ]
    return {
        "labels": [r["method"] for r in rows],
        "series": _finite(series),
        "title": "Score distribution",
        "yLabel": "share of answers",
    }


def _finite(series: list[dict]) -> list[dict]:
    def clean(v):
        return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v

    return [{k: (v if k == "name" else [clean(x) for x in v]) for k, v in s.items()} for s in series]


def _cell(value: Any) -> Any:
    """A CSV cell: floats to 6 places, empty for NaN (formulas are defused by :mod:`annotate.infra.csvfile`)."""
    if isinstance(value, float):
        return "" if not math.isfinite(value) else round(value, 6)
    return value


def table_rows(results: dict[str, Any], table: str) -> tuple[list[str], list[list[Any]]]:
    """Header and rows of one CSV table: ``scores`` (Table 4, long form), ``distribution``
    (Figure 3), ``kappa`` (α / β) or ``answers`` (every counted answer with its score)."""
    if table == "scores":
        columns = ["split", "method", "mean", "ci_low", "ci_high", "questions", "answers", "best",
                   "p_value", "test", "different_from_best"]  # fmt: skip
        rows = [
            [
                r["split"],
                r["method"],
                r["mean"],
                r["ci_low"],
                r["ci_high"],
                r["n"],
                r["answers"],
                r["best"],
                r["p_value"],
                r["test"],
                r["different_from_best"],
            ]  # fmt: skip
            for r in results["scores"]
        ]
    elif table == "distribution":
        columns = ["method", "score", "count", "share"]
        rows = [
            [r["method"], v, r["counts"][k], r["shares"][k]]
            for r in results["distribution"]
            for k, v in enumerate(SCORE_VALUES)
        ]
    elif table == "kappa":
        columns = ["task", "measure", "categories", "kappa", "ci_low", "ci_high", "questions", "level"]
        rows = [
            [
                results["task"],
                key,
                k.get("categories"),
                k["value"],
                k["ci_low"],
                k["ci_high"],
                k["n"],
                k["level"],
            ]
            for key, k in results["kappa"].items()
        ]
    elif table == "answers":
        columns = ["response", "item", "worker", "document", "method", "split", "choice", "confident",
                   "correct_answer", "score"]  # fmt: skip
        anonymous = {
            w.pk: w.pseudonym_for(results["owner_id"])
            for w in Worker.objects.filter(pk__in={a.worker for a in results["scored"]})
        }
        rows = [
            [
                a.response,
                a.item,
                anonymous.get(a.worker, ""),
                a.external_id,
                a.method,
                a.split,
                a.choice,
                a.confident,
                a.answer,
                a.score,
            ]  # fmt: skip
            for a in results["scored"]
        ]
    else:
        raise ValueError(f"unknown table {table!r}; use one of {TABLES}")
    return columns, rows


def csv_text(results: dict[str, Any], table: str) -> str:
    """One table of ``results`` as CSV text."""
    columns, rows = table_rows(results, table)
    return csvfile.csv_text(columns, rows, cell=_cell)


def api_results(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` without the per-answer rows, ready for JSON (NaN as null)."""
    data = {k: v for k, v in results.items() if k != "scored"}
    return json_safe(data)


class ForcedChoiceResults(ResultsPage):
    """The results page of a forced-choice study: Table 4, Figure 3 and Fleiss κ, with CSV downloads."""

    template = "forced_choice/results.html"
    tables = {name: from_results(table_rows, name) for name in TABLES}
    query_fields = (ChoiceField("test", TESTS, "wilcoxon"), FloatField("alpha", 0.05, 0.0, 1.0))

    def compute(self) -> dict[str, Any]:
        return evaluation_results(self.study, test=self.query["test"], alpha=self.query["alpha"])

    def context(self) -> dict[str, Any]:
        return super().context() | {
            "tests": TESTS,
            "means_chart": means_chart(self.results),
            "distribution_chart": distribution_chart(self.results),
            "split_titles": ["all texts", "correctly predicted ✓", "misclassified ✗"],
        }

    def csv_cells(self, columns, rows) -> list[list]:
        return [[_cell(v) for v in row] for row in super().csv_cells(columns, rows)]
