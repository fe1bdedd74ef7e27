"""Scoring of the forced-choice evaluation tasks of Lertvittayakumjorn & Toni (2019, §3–5).

Every answer scores the explanation method shown: +1 correct and confident, +0.5 correct and
unconfident, 0 no preference, −0.5 wrong and unconfident, −1 wrong and confident ("correct" is
task-specific: the better model in ``reveal_model``, the model's predicted class in ``justify``, the
true class in ``investigate``). A question (one method on one input text) is scored by the mean of
its workers' answers; a method by the mean over its questions, reported for all texts and per split
(correctly predicted / misclassified), with a bootstrap interval over questions.

Significance against the best method: Lertvittayakumjorn & Toni 2019 (Table 4) marks methods "not significantly different
from the best at α = 0.05" without naming the test. Every method explains the same input texts, so
the default here is the **Wilcoxon signed-rank test** (two-sided) on the per-text scores paired by
text — scores are discrete and bounded, so a rank test fits better than a t-test. ``test="ttest"``
(paired t-test) and ``test="mannwhitney"`` (unpaired Mann–Whitney U) are available; a paired test
falls back to Mann–Whitney U when the two methods share fewer than two texts.

Agreement (Lertvittayakumjorn & Toni 2019 Table 4, last row): Fleiss κ over the answers with their confidence levels and
without them (:func:`forced_choice_kappa`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence

import numpy as np
from scipy.stats import mannwhitneyu, ttest_rel, wilcoxon

from explain_engine.metrics.agreement import fleiss_kappa
from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, mean_estimate

NO_PREFERENCE = "no preference"
TESTS = ("wilcoxon", "ttest", "mannwhitney")


def _no_preference(picked) -> bool:
    return picked is None or picked == "" or picked == NO_PREFERENCE


def score_answers(
    picked: Sequence[Hashable | None], correct: Sequence[Hashable], confident: Sequence[bool]
) -> np.ndarray:
    """Score of each answer: ±1 confident, ±0.5 unconfident, 0 for no preference (``None``)."""
    if not len(picked) == len(correct) == len(confident):
        raise ValueError("picked, correct and confident need the same length")
    none = np.array([_no_preference(p) for p in picked], dtype=bool)
    right = np.array([p == c for p, c in zip(picked, correct, strict=True)], dtype=bool)
    magnitude = np.where(np.asarray(confident, dtype=bool), 1.0, 0.5)
    return np.where(none, 0.0, np.where(right, magnitude, -magnitude))


def _question_means(methods, items, scores, splits):
    groups: dict[tuple, list[float]] = defaultdict(list)
    split_of: dict[tuple, Hashable] = {}
    for m, i, s, sp in zip(methods, items, scores, splits, strict=True):
        groups[(m, i)].append(float(s))
        split_of.setdefault((m, i), sp)
    return {k: (float(np.mean(v)), len(v), split_of[k]) for k, v in groups.items()}


def _compare(best: dict, other: dict, test: str) -> tuple[float, str]:
    """p-value of the difference between two methods' per-text scores, and the test used."""
    common = sorted(set(best) & set(other), key=repr)
    if test in ("wilcoxon", "ttest") and len(common) >= 2:
        a = np.array([best[i] for i in common])
        b = np.array([other[i] for i in common])
        if np.allclose(a, b):
            return 1.0, test
        if test == "wilcoxon":
            return float(wilcoxon(a, b, alternative="two-sided").pvalue), "wilcoxon"
        res = ttest_rel(a, b)
        return (1.0 if math.isnan(res.pvalue) else float(res.pvalue)), "ttest"
    a, b = np.array(list(best.values())), np.array(list(other.values()))
    if len(a) == 0 or len(b) == 0:
        return math.nan, "mannwhitney"
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue), "mannwhitney"


def summarize_scores(
    methods: Sequence[Hashable],
    items: Sequence[Hashable],
    scores: Sequence[float],
    splits: Sequence[Hashable] | None = None,
    test: str = "wilcoxon",
    alpha: float = 0.05,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> list[dict]:
    """Per split (``"all"`` first, then each value of ``splits``) and method: mean score with its
    interval, and the test against the split's best method.

    One answer per position: ``methods[a]`` explained input text ``items[a]``; ``splits[a]`` is that
    text's group (e.g. ``"correct"`` / ``"misclassified"``). Rows: ``split``, ``method``, ``mean``,
    ``n`` (questions), ``answers``, ``ci_low``, ``ci_high``, ``best``, ``p_value``, ``test``,
    ``different_from_best`` (p < ``alpha``).
    """
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; use one of {TESTS}")
    if splits is None:
        splits = [None] * len(methods)
    questions = _question_means(methods, items, scores, splits)
    split_names = ["all"] + sorted({sp for (_, _, sp) in questions.values() if sp is not None}, key=repr)
    method_order = list(dict.fromkeys(methods))
    rows = []
    for split in split_names:
        per_method: dict[Hashable, dict[Hashable, float]] = {}
        answers: dict[Hashable, int] = {}
        for (m, i), (mean, count, sp) in questions.items():
            if split == "all" or sp == split:
                per_method.setdefault(m, {})[i] = mean
                answers[m] = answers.get(m, 0) + count
        estimates = {
            m: mean_estimate(np.array(list(per_method[m].values())), n_boot, level, seed)
            for m in method_order
            if m in per_method
        }
        best = max(estimates, key=lambda m: estimates[m].value)
        for m, est in estimates.items():
            if m == best:
                p, used = math.nan, test
            else:
                p, used = _compare(per_method[best], per_method[m], test)
            rows.append(
                {
                    "split": split,
                    "method": m,
                    "mean": est.value,
                    "n": est.n,
                    "answers": answers[m],
                    "ci_low": est.ci_low,
                    "ci_high": est.ci_high,
                    "best": m == best,
                    "p_value": None if math.isnan(p) else p,
                    "test": used,
                    "different_from_best": bool(p < alpha) if not math.isnan(p) else False,
                }
            )
    return rows


def answer_categories(
    picked: Sequence[Hashable | None], confident: Sequence[bool], with_confidence: bool = True
) -> list[str]:
    """The category of each answer for agreement: ``"A confident"`` / ``"A unconfident"`` /
    ``"no preference"`` with confidence levels, ``"A"`` / ``"no preference"`` without."""
    out = []
    for p, c in zip(picked, confident, strict=True):
        if _no_preference(p):
            out.append(NO_PREFERENCE)
        elif with_confidence:
            out.append(f"{p} {'confident' if c else 'unconfident'}")
        else:
            out.append(str(p))
    return out


def category_set(options: Sequence[Hashable], no_preference: bool, with_confidence: bool) -> list[str]:
    """All answer categories of a task: 5 / 3 for two options with "no preference" (tasks 1–2),
    4 / 2 without it (task 3)."""
    cats = []
    for o in options:
        cats.extend([f"{o} confident", f"{o} unconfident"] if with_confidence else [str(o)])
    if no_preference:
        mid = len(options) // 2 * (2 if with_confidence else 1)
        cats.insert(mid, NO_PREFERENCE)
    return cats


def forced_choice_kappa(
    questions: Sequence[Hashable],
    picked: Sequence[Hashable | None],
    confident: Sequence[bool],
    options: Sequence[Hashable],
    no_preference: bool = True,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> dict[str, Estimate]:
    """Fleiss κ over the workers' answers to each question, with and without confidence levels
    (Lertvittayakumjorn & Toni 2019 Table 4: α / β)."""
    out = {}
    for key, with_conf in (("with_confidence", True), ("without_confidence", False)):
        cats = answer_categories(picked, confident, with_conf)
        by_question: dict[Hashable, list[str]] = defaultdict(list)
        for q, c in zip(questions, cats, strict=True):
            by_question[q].append(c)
        out[key] = fleiss_kappa(
            list(by_question.values()), category_set(options, no_preference, with_conf), n_boot, seed=seed
        )
    return out


#: The scores one answer can give (Lertvittayakumjorn & Toni 2019 Table 1), in the order of Figure 3.
SCORE_VALUES = (-1.0, -0.5, 0.0, 0.5, 1.0)


def score_distribution(
    answer_methods: Sequence[str], scores: Sequence[float], methods: Sequence[str]
) -> list[dict]:
    """Per method of ``methods``, how many answers scored each of :data:`SCORE_VALUES`, and their shares
    (None for a method without answers): Lertvittayakumjorn & Toni 2019, Figure 3."""
    index = {m: i for i, m in enumerate(methods)}
    counts = np.zeros((len(methods), len(SCORE_VALUES)), dtype=np.int64)
    if len(answer_methods):
        rows = np.array([index[m] for m in answer_methods])
        cols = np.searchsorted(SCORE_VALUES, np.asarray(scores, dtype=float))
        np.add.at(counts, (rows, cols), 1)
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(totals > 0, counts / np.maximum(totals, 1), np.nan)
    return [
        {
            "method": m,
            "answers": int(totals[i, 0]),
            "counts": counts[i].tolist(),
            "shares": [None if math.isnan(v) else float(v) for v in shares[i]],
        }
        for i, m in enumerate(methods)
    ]


def forced_choice_report(
    *,
    questions: Sequence[Hashable],
    texts: Sequence[Hashable],
    methods: Sequence[str],
    splits: Sequence[str],
    scores: Sequence[float],
    picked: Sequence[Hashable | None],
    confident: Sequence[bool],
    options: Sequence[Hashable],
    method_order: Sequence[str],
    no_preference: bool = True,
    test: str = "wilcoxon",
    alpha: float = 0.05,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> dict:
    """Everything a forced-choice results page shows, from one entry per scored answer (its question,
    text, method, split, score, the option picked and whether confidently): ``scores`` (the rows of
    :func:`summarize_scores`, Table 4), ``distribution`` (:func:`score_distribution` over
    ``method_order``, Figure 3) and ``kappa`` (:func:`forced_choice_kappa` as dicts, Table 4's last row)."""
    rows = (
        summarize_scores(
            methods, texts, scores, splits, test=test, alpha=alpha, n_boot=n_boot, level=level, seed=seed
        )
        if len(scores)
        else []
    )
    estimates = forced_choice_kappa(
        questions, picked, confident, options, no_preference=no_preference, n_boot=n_boot, seed=seed
    )
    return {
        "scores": rows,
        "distribution": score_distribution(methods, scores, method_order),
        "kappa": {key: est.to_dict() for key, est in estimates.items()},
    }
