"""Forced-choice scoring of Lertvittayakumjorn & Toni 2019: answer scores, per-method means and the test against the best."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, ttest_rel, wilcoxon
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from explain_engine.metrics import forced_choice
from explain_engine.metrics.forced_choice import (
    NO_PREFERENCE,
    answer_categories,
    category_set,
    forced_choice_kappa,
    score_answers,
    summarize_scores,
)


def test_answer_scores():
    scores = score_answers(
        ["A", "A", None, "B", "B", "", NO_PREFERENCE],
        ["A", "A", "A", "A", "A", "B", "B"],
        [True, False, True, False, True, False, True],
    )
    assert scores.tolist() == [1.0, 0.5, 0.0, -0.5, -1.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        score_answers(["A"], ["A", "B"], [True])


def _study(seed: int = 0):
    """Three methods explaining the same 40 texts, 3 answers per question."""
    rng = np.random.default_rng(seed)
    skill = {"LIME": 0.8, "LRP": 0.55, "Random": 0.35}
    methods, items, splits, picked, confident = [], [], [], [], []
    for m, p in skill.items():
        for item in range(40):
            for _ in range(3):
                methods.append(m)
                items.append(item)
                splits.append("correct" if item < 20 else "misclassified")
                r = rng.random()
                picked.append("pos" if r < p else (None if r < p + 0.1 else "neg"))
                confident.append(bool(rng.random() < 0.6))
    scores = score_answers(picked, ["pos"] * len(picked), confident)
    return methods, items, splits, picked, confident, scores


def _per_item(methods, items, scores, method):
    out = {}
    for m, i, s in zip(methods, items, scores, strict=True):
        if m == method:
            out.setdefault(i, []).append(s)
    return np.array([np.mean(out[i]) for i in sorted(out)])


def test_summary_means_best_and_wilcoxon():
    methods, items, splits, _, _, scores = _study()
    rows = summarize_scores(methods, items, scores, splits, n_boot=200)
    all_rows = {r["method"]: r for r in rows if r["split"] == "all"}
    assert [r["split"] for r in rows] == ["all"] * 3 + ["correct"] * 3 + ["misclassified"] * 3
    lime = _per_item(methods, items, scores, "LIME")
    rnd = _per_item(methods, items, scores, "Random")
    assert all_rows["LIME"]["mean"] == pytest.approx(lime.mean())
    assert all_rows["LIME"]["best"] and all_rows["LIME"]["p_value"] is None
    assert all_rows["LIME"]["n"] == 40 and all_rows["LIME"]["answers"] == 120
    assert all_rows["Random"]["p_value"] == pytest.approx(wilcoxon(lime, rnd).pvalue)
    assert all_rows["Random"]["different_from_best"] and all_rows["Random"]["test"] == "wilcoxon"
    assert all_rows["LIME"]["ci_low"] < all_rows["LIME"]["mean"] < all_rows["LIME"]["ci_high"]
    correct = {r["method"]: r for r in rows if r["split"] == "correct"}
    assert correct["LIME"]["mean"] == pytest.approx(lime[:20].mean()) and correct["LIME"]["n"] == 20


def test_other_tests_and_fallback():
    methods, items, splits, _, _, scores = _study(1)
    lime = _per_item(methods, items, scores, "LIME")
    lrp = _per_item(methods, items, scores, "LRP")
    rows = summarize_scores(methods, items, scores, test="ttest", n_boot=0)
    row = next(r for r in rows if r["method"] == "LRP")
    assert row["p_value"] == pytest.approx(ttest_rel(lime, lrp).pvalue)
    rows = summarize_scores(methods, items, scores, test="mannwhitney", n_boot=0)
    row = next(r for r in rows if r["method"] == "LRP")
    assert row["p_value"] == pytest.approx(mannwhitneyu(lime, lrp, alternative="two-sided").pvalue)
    # methods on different texts cannot be paired: Mann–Whitney U instead
    shifted = [i + (1000 if m == "LRP" else 0) for m, i in zip(methods, items, strict=True)]
    row = next(r for r in summarize_scores(methods, shifted, scores, n_boot=0) if r["method"] == "LRP")
    assert row["test"] == "mannwhitney"
    with pytest.raises(ValueError, match="unknown test"):
        summarize_scores(methods, items, scores, test="anova")


def test_categories_and_fleiss_kappa_with_and_without_confidence():
    assert len(category_set(["A", "B"], True, True)) == 5 and len(category_set(["A", "B"], True, False)) == 3
    assert (
        len(category_set(["pos", "neg"], False, True)) == 4
        and len(category_set(["pos", "neg"], False, False)) == 2
    )
    assert answer_categories(["A", None, "B"], [True, False, False]) == [
        "A confident",
        NO_PREFERENCE,
        "B unconfident",
    ]
    methods, items, _, picked, confident, _ = _study(2)
    questions = [f"{m}:{i}" for m, i in zip(methods, items, strict=True)]
    out = forced_choice_kappa(questions, picked, confident, ["pos", "neg"], n_boot=100)
    for key, with_conf in (("with_confidence", True), ("without_confidence", False)):
        cats = category_set(["pos", "neg"], True, with_conf)
        labels = answer_categories(picked, confident, with_conf)
        table = np.array(
            [[cats.index(c) for c in labels[q * 3 : q * 3 + 3]] for q in range(len(labels) // 3)]
        )
        assert out[key].value == pytest.approx(sm_fleiss(aggregate_raters(table, n_cat=len(cats))[0]))
        assert out[key].n == 120
    assert out["without_confidence"].value > out["with_confidence"].value


def test_no_preference_sits_between_the_options_with_and_without_confidence():
    """The answer scale runs from the first option to the second with "no preference" in the middle
    (tasks 1-2: five categories with confidence, three without); task 3 has none."""
    assert category_set(["A", "B"], True, False) == ["A", NO_PREFERENCE, "B"]
    assert category_set(["A", "B"], True, True) == [
        "A confident",
        "A unconfident",
        NO_PREFERENCE,
        "B confident",
        "B unconfident",
    ]
    assert category_set(["A", "B"], False, False) == ["A", "B"]


def test_two_paired_texts_are_enough_for_the_paired_test():
    """Two methods scored on the same two texts are compared by the paired test asked for; the unpaired
    fallback (Mann-Whitney) is for methods with fewer than two texts in common."""
    best, other = {"t1": 0.9, "t2": 0.7}, {"t1": 0.2, "t2": 0.1}
    for test in ("ttest", "wilcoxon"):
        assert forced_choice._compare(best, other, test)[1] == test
    assert forced_choice._compare({"t1": 0.9}, {"t1": 0.2, "t3": 0.1}, "ttest")[1] == "mannwhitney"


# SciPy warns of the equal differences of the t-test case
@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")
@pytest.mark.parametrize("test", ["wilcoxon", "ttest", "mannwhitney"])
def test_every_comparison_gives_a_probability_or_none(test):
    """Each method but the best is compared with it and gets a p in [0, 1]: a method with one question is
    compared by Mann-Whitney U over its one score; a method below the best by the same amount on every
    text (differences without spread) is, for the paired t-test, certainly different (p 0, SciPy's
    infinite t); only a method with no question to compare gives no p."""
    one = forced_choice._compare({"t1": 0.9}, {"t1": 0.2, "t3": 0.1}, test)
    assert one == (
        pytest.approx(mannwhitneyu([0.9], [0.2, 0.1], alternative="two-sided").pvalue),
        "mannwhitney",
    )
    assert np.isnan(forced_choice._compare({}, {"t1": 0.2}, test)[0])
    methods = ["lime"] * 4 + ["lrp"] * 4
    items = ["t1", "t2", "t3", "t4"] * 2
    scores = [1.0, 0.5, 1.0, 0.5, 0.5, 0.0, 0.5, 0.0]  # lrp is 0.5 below lime on every text
    rows = summarize_scores(methods, items, scores, test=test, n_boot=0)
    other = next(r for r in rows if not r["best"])
    assert 0 <= other["p_value"] <= 1
    if test == "ttest":
        assert other["p_value"] == 0.0 and other["different_from_best"] is True


def test_answers_and_confidences_of_different_lengths_are_refused():
    """One confidence per picked option: lists of different lengths are refused, never cut to the shorter
    one (which would drop answers from the agreement)."""
    with pytest.raises(ValueError):
        answer_categories(["A", "B"], [True])
    with pytest.raises(ValueError, match="same length"):
        score_answers(["A", "B"], ["A", "A"], [True])
    with pytest.raises(ValueError):
        forced_choice_kappa(["q1", "q1"], ["A", "B"], [True], ["A", "B"])


def test_the_distributions_columns_are_exactly_the_scores_an_answer_can_give():
    """Figure 3's columns (``SCORE_VALUES``) are the five scores of Table 1, in order: every answer scores
    one of them and each of them is some answer's score."""
    picked = ["A", "A", "B", "B", None]
    given = score_answers(picked, ["A"] * 5, [True, False, False, True, False])
    assert sorted(set(given.tolist())) == list(forced_choice.SCORE_VALUES) == [-1.0, -0.5, 0.0, 0.5, 1.0]
    rows = forced_choice.score_distribution(["m"] * 5, given, ["m"])
    assert rows[0]["counts"] == [1, 1, 1, 1, 1]


def test_the_report_marks_a_method_clearly_worse_than_the_best_at_alpha_five_percent():
    """The results page's Table 4 marks a method different from the best at α = 0.05 (Lertvittayakumjorn
    & Toni 2019), as ``summarize_scores`` does by default: the report's rows are its rows."""
    texts = [f"t{i}" for i in range(12)]
    answers = {
        "questions": list(range(24)),
        "texts": texts * 2,
        "methods": ["lrp"] * 12 + ["lime"] * 12,
        "splits": ["correct"] * 24,
        "scores": [1.0, 0.5] * 6 + [-1.0, -0.5, 0.0] * 4,
        "picked": ["a"] * 24,
        "confident": [True] * 24,
    }
    report = forced_choice.forced_choice_report(
        **answers, options=["a", "b"], method_order=["lrp", "lime"], n_boot=0
    )
    lime = next(r for r in report["scores"] if r["method"] == "lime")
    assert lime["p_value"] < 0.05 and lime["different_from_best"] is True
    assert report["scores"] == summarize_scores(
        answers["methods"], answers["texts"], answers["scores"], answers["splits"], n_boot=0
    )
