"""Agreement measures (Sen et al. 2020 §3.2; Pappas & Popescu-Belis 2016 §3), each checked against an independent computation on real answers."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from explain_engine.datasets.yelphat import LABEL_CATEGORIES, read_raw
from explain_engine.metrics.agreement import (
    _alpha_statistic,
    _cohen_statistic,
    category_counts,
    cohen_kappa,
    encode_ratings,
    fleiss_kappa,
    kappa_disagreement_weights,
    krippendorff_alpha,
    majority_agreement,
    observed_agreement,
    pairwise_table,
    pearson_r,
)
from tests.conftest import require_shared_data

LIKERT = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def part7_labels() -> list[list]:
    """Worker labels of YELP-HAT part7: 2 to 4 answers per review, some missing."""
    path = require_shared_data("yelp-hat", "raw", "ham_part7.csv")
    return [[a["label"] for a in r["annotations"]] for r in read_raw(path)]


@pytest.fixture(scope="module")
def part1_labels() -> list[list]:
    path = require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv")
    return [[a["label"] for a in r["annotations"]] for r in read_raw(path)]


@pytest.fixture(scope="module")
def part1_k() -> np.ndarray:
    """Words highlighted by each of the 3 slots per review (numeric ratings for r and α)."""
    path = require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv")
    return np.array([[sum(a["map"]) for a in r["annotations"]] for r in read_raw(path)], dtype=float)


def _fleiss_by_loop(rows: list[list], categories) -> float:
    """Fleiss κ with per-item rater counts, item by item (independent of the vectorised code)."""
    items = [[c for c in r if c is not None] for r in rows]
    items = [r for r in items if len(r) >= 2]
    total = sum(len(r) for r in items)
    p_j = {c: sum(r.count(c) for r in items) / total for c in categories}
    p_i = [sum(r.count(c) * (r.count(c) - 1) for c in categories) / (len(r) * (len(r) - 1)) for r in items]
    p_bar, p_e = sum(p_i) / len(p_i), sum(v * v for v in p_j.values())
    return (p_bar - p_e) / (1 - p_e)


def test_fleiss_matches_statsmodels_on_complete_answers(part1_labels):
    complete = [r for r in part1_labels if None not in r]
    assert len(complete) == 297
    est = fleiss_kappa(complete, LABEL_CATEGORIES, n_boot=200)
    table, _ = aggregate_raters(np.array([[LABEL_CATEGORIES.index(c) for c in r] for r in complete]))
    assert est.value == pytest.approx(sm_fleiss(table), abs=1e-12)
    assert est.value == pytest.approx(_fleiss_by_loop(complete, LABEL_CATEGORIES), abs=1e-12)
    assert est.n == 297 and est.ci_low < est.value < est.ci_high
    assert 0.85 < est.value < 0.95  # workers rarely disagree on the sentiment of 50-word reviews


def test_fleiss_with_varying_raters(part7_labels):
    est = fleiss_kappa(part7_labels, LABEL_CATEGORIES, n_boot=200)
    assert est.value == pytest.approx(_fleiss_by_loop(part7_labels, LABEL_CATEGORIES), abs=1e-12)
    kept = [r for r in part7_labels if sum(c is not None for c in r) >= 2]
    assert est.n == len(kept) and est.extra["dropped"] == len(part7_labels) - len(kept)
    assert 2.0 < est.extra["raters_per_item"] < 4.0


def test_fleiss_agrees_with_krippendorff_nominal_for_large_n(part7_labels):
    """Fleiss κ and nominal α differ only by a small-sample correction."""
    kappa = fleiss_kappa(part7_labels, LABEL_CATEGORIES, n_boot=0).value
    alpha = krippendorff_alpha(part7_labels, "nominal", LABEL_CATEGORIES, n_boot=0).value
    assert abs(kappa - alpha) < 0.01


def test_fleiss_bootstrap_is_reproducible_and_shrinks_with_n(part7_labels):
    a = fleiss_kappa(part7_labels, LABEL_CATEGORIES, n_boot=300, seed=3)
    b = fleiss_kappa(part7_labels, LABEL_CATEGORIES, n_boot=300, seed=3)
    small = fleiss_kappa(part7_labels[:100], LABEL_CATEGORIES, n_boot=300, seed=3)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    assert (a.ci_high - a.ci_low) < (small.ci_high - small.ci_low)


def test_cohen_kappa_matches_sklearn_on_real_labels(part1_labels):
    a = [r[0] for r in part1_labels]
    b = [r[1] for r in part1_labels]
    both = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    for weights in (None, "linear", "quadratic"):
        est = cohen_kappa(a, b, LABEL_CATEGORIES, weights=weights, n_boot=200)
        ref = cohen_kappa_score(
            [x for x, _ in both], [y for _, y in both], labels=list(LABEL_CATEGORIES), weights=weights
        )
        assert est.value == pytest.approx(ref, abs=1e-12)
        assert est.n == len(both) and est.extra["dropped"] == len(a) - len(both)


def _weighted_kappa_by_hand(a, b, values) -> float:
    """Pappas & Popescu-Belis 2016: disagreement = |normalised value difference|, κ = 1 − Σ w·O / Σ w·E."""
    lo, hi = min(values), max(values)
    norm = {v: (v - lo) / (hi - lo) for v in values}
    n = len(a)
    observed = sum(abs(norm[x] - norm[y]) for x, y in zip(a, b, strict=True)) / n
    pa = {v: a.count(v) / n for v in values}
    pb = {v: b.count(v) / n for v in values}
    expected = sum(pa[x] * pb[y] * abs(norm[x] - norm[y]) for x in values for y in values)
    return 1 - observed / expected


def test_absolute_weights_of_paper_001():
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, 400)
    a = np.clip(truth + rng.integers(-1, 2, 400), 1, 5).tolist()
    b = np.clip(truth + rng.integers(-1, 2, 400), 1, 5).tolist()
    # on an evenly spaced 1..5 scale the absolute weights are sklearn's linear weights
    est = cohen_kappa(a, b, LIKERT, weights="absolute", n_boot=0)
    assert est.value == pytest.approx(cohen_kappa_score(a, b, weights="linear"), abs=1e-12)
    assert est.value == pytest.approx(_weighted_kappa_by_hand(a, b, LIKERT), abs=1e-12)
    # on an uneven scale they use the values, not the positions
    values = [0.0, 0.1, 0.5, 0.9, 1.0]
    ua = [values[x - 1] for x in a]
    ub = [values[x - 1] for x in b]
    uneven = cohen_kappa(ua, ub, values, weights="absolute", n_boot=0)
    assert uneven.value == pytest.approx(_weighted_kappa_by_hand(ua, ub, values), abs=1e-12)
    assert uneven.value != pytest.approx(est.value, abs=1e-3)
    w = kappa_disagreement_weights(values, "absolute")
    assert w[0, 4] == 1.0 and w[1, 2] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="numeric"):
        kappa_disagreement_weights(["a", "b"], "absolute")
    with pytest.raises(ValueError, match="unknown weights"):
        kappa_disagreement_weights(LIKERT, "cubic")


def test_pearson_r_matches_scipy_and_numpy(part1_k):
    est = pearson_r(part1_k[:, 0], part1_k[:, 1], n_boot=300)
    assert est.value == pytest.approx(pearsonr(part1_k[:, 0], part1_k[:, 1]).statistic, abs=1e-12)
    assert est.value == pytest.approx(np.corrcoef(part1_k[:, 0], part1_k[:, 1])[0, 1], abs=1e-12)
    assert est.ci_low < est.value < est.ci_high and est.n == 300
    assert est.extra["p_value"] == pytest.approx(pearsonr(part1_k[:, 0], part1_k[:, 1]).pvalue)
    from explain_engine.metrics.bootstrap import weighted_pearson

    assert weighted_pearson(part1_k[:, 0], part1_k[:, 1])(np.ones((1, 300)))[0] == pytest.approx(est.value)
    with_missing = pearson_r([1, 2, None, 4, 5], [2, 1, 3, float("nan"), 6], n_boot=0)
    assert with_missing.n == 3 and with_missing.extra["dropped"] == 2


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_alpha_hand_bootstrap_form_equals_package(part1_k, level):
    """The engine's own α (and its weighted form, at unit weights) equals the GPL package, a test-only reference."""
    krippendorff = pytest.importorskip("krippendorff")
    ratings = np.minimum(part1_k // 5, 6).astype(int) + 1  # 1..7 bands of highlighted-word counts
    rows = ratings.tolist()
    rows[0][1] = None  # a missing rating
    est = krippendorff_alpha(rows, level, n_boot=200)
    data = np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=float).T
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert est.value == pytest.approx(ref, abs=1e-9)
    cats = sorted({v for r in rows for v in r if v is not None})
    table = category_counts(encode_ratings(rows, cats), len(cats))
    numeric = np.array(cats, float) if level in ("interval", "ratio") else None
    hand = _alpha_statistic(table[table.sum(axis=1) >= 2], level, numeric)(np.ones((1, 300)))[0]
    assert hand == pytest.approx(ref, abs=1e-9)
    assert est.ci_low < est.value < est.ci_high


def test_krippendorff_nominal_matches_crowd_kit(part7_labels):
    alpha_krippendorff = pytest.importorskip("crowdkit.metrics.data").alpha_krippendorff
    records = [
        {"task": i, "worker": j, "label": lab}
        for i, row in enumerate(part7_labels)
        for j, lab in enumerate(row)
        if lab is not None
    ]
    ref = alpha_krippendorff(pd.DataFrame.from_records(records))
    est = krippendorff_alpha(part7_labels, "nominal", LABEL_CATEGORIES, n_boot=0)
    assert est.value == pytest.approx(ref, abs=1e-9)


def test_pairwise_table_rows(part1_labels):
    rows = pairwise_table(part1_labels, "cohen", LABEL_CATEGORIES, names=["A", "B", "C"], n_boot=100)
    assert [(r["a"], r["b"]) for r in rows] == [("A", "B"), ("A", "C"), ("B", "C")]
    for r, (i, j) in zip(rows, combinations(range(3), 2), strict=True):
        pairs = [(x[i], x[j]) for x in part1_labels if x[i] is not None and x[j] is not None]
        ref = cohen_kappa_score([p for p, _ in pairs], [q for _, q in pairs], labels=list(LABEL_CATEGORIES))
        assert r["value"] == pytest.approx(ref, abs=1e-12) and r["n"] == len(pairs)
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
    rs = pairwise_table([[1, 2, 3], [2, 2, 4], [3, 5, 5], [4, 4, 6]], "pearson", n_boot=0)
    assert rs[0]["value"] == pytest.approx(np.corrcoef([1, 2, 3, 4], [2, 2, 5, 4])[0, 1])
    with pytest.raises(ValueError, match="unknown pairwise metric"):
        pairwise_table([[1, 2]], "spearman")


def test_encode_ratings_rejects_unknown_categories():
    with pytest.raises(ValueError, match="'maybe' .*item 1, rater 0"):
        encode_ratings([["positive"], ["maybe"]], LABEL_CATEGORIES)
    codes = encode_ratings(
        [["positive", None], ["negative", float("nan"), "cannot decide"]], LABEL_CATEGORIES
    )
    assert codes.tolist() == [[0, -1, -1], [1, -1, 2]]


def test_perfect_and_chance_agreement():
    perfect = fleiss_kappa([["a", "a"], ["b", "b"], ["a", "a"]], ["a", "b"], n_boot=0)
    assert perfect.value == pytest.approx(1.0)
    one_category = fleiss_kappa([["a", "a"], ["a", "a"]], ["a", "b"], n_boot=0)
    assert math.isnan(one_category.value)


def test_weighted_kappa_on_real_answers_with_paper_001_scale(part7_labels):
    """Workers' sentiment answers as an ordinal scale negative < cannot decide < positive."""
    a = [r[0] for r in part7_labels]
    b = [r[1] for r in part7_labels]
    scale = ["negative", "cannot decide", "positive"]
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    even = cohen_kappa(a, b, scale, weights="absolute", values=[0.0, 0.5, 1.0], n_boot=200)
    assert even.value == pytest.approx(
        cohen_kappa_score([x for x, _ in pairs], [y for _, y in pairs], labels=scale, weights="linear"),
        abs=1e-12,
    )
    values = {"negative": 0.0, "cannot decide": 0.3, "positive": 1.0}
    uneven = cohen_kappa(a, b, scale, weights="absolute", values=list(values.values()), n_boot=0)
    hand = _weighted_kappa_by_hand(
        [values[x] for x, _ in pairs], [values[y] for _, y in pairs], [0.0, 0.3, 1.0]
    )
    assert uneven.value == pytest.approx(hand, abs=1e-12)
    assert even.n == len(pairs) and even.ci_low < even.value < even.ci_high


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_bootstrap_form_at_unit_weights_is_sklearns_kappa(weights):
    """The interval of Cohen's κ is drawn from the hand-written weighted form: at unit item weights it must
    be scikit-learn's κ with the same disagreement weights (|i − j|, (i − j)², 0/1), or the interval is
    around another figure than the value it is printed with."""
    rng = np.random.default_rng(11)
    truth = rng.integers(0, 5, 300)
    a = np.clip(truth + rng.integers(-1, 2, 300), 0, 4)
    b = np.clip(truth + rng.integers(-2, 3, 300), 0, 4)
    d = kappa_disagreement_weights(LIKERT, weights)
    assert (np.diag(d) == 0).all() and (d == d.T).all()
    hand = _cohen_statistic(a, b, d)(np.ones((1, a.size)))[0]
    assert hand == pytest.approx(cohen_kappa_score(a, b, labels=range(5), weights=weights), abs=1e-12)
    est = cohen_kappa((a + 1).tolist(), (b + 1).tolist(), LIKERT, weights=weights, n_boot=300)
    assert est.ci_low < est.value < est.ci_high


def test_absolute_weights_of_a_scale_without_spread_are_all_zero():
    """Categories whose values are all equal are never in disagreement: every absolute weight is 0, not NaN
    (no division by the zero span)."""
    with np.errstate(all="raise"):
        w = kappa_disagreement_weights(["low", "also low"], "absolute", values=[2.0, 2.0])
    assert (w == 0).all()


def test_observed_agreement_is_the_share_of_agreeing_rater_pairs():
    """Fleiss's P̄ without chance correction: per item the agreeing pairs over all n(n − 1) ordered pairs,
    averaged over items with two or more ratings; None when no item has two."""
    counts = [[3, 0], [2, 1], [1, 1], [1, 0]]  # 3 of 3 agree, 1 of 3 pairs, 0 of 1 pair, one rating alone
    assert observed_agreement(counts) == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert observed_agreement([[4, 0, 0], [0, 2, 2]]) == pytest.approx((1 + 1 / 3) / 2)
    assert observed_agreement([[1, 0], [0, 1]]) is None


def test_majority_agreement_counts_only_answers_whose_others_have_one_majority():
    """An answer agrees when it equals the unique majority of the other answers to its item; a tie among
    the others (or no other answer) makes it count neither as agreeing nor as eligible, even when it
    equals one of the tied categories."""
    counts = np.array([[2, 1], [1, 1], [1, 0]])  # item 0: 2 × a, 1 × b; item 1: a tie once one leaves
    got = majority_agreement(
        items=[0, 0, 0, 1, 1, 2],
        codes=[0, 0, 1, 0, 1, 0],
        workers=["u", "v", "w", "u", "v", "w"],
        own=[True] * 6,
        counts=counts,
    )
    # item 0: u and v each see {a, b} (a tie: not counted), w sees {a, a} and answered b (eligible, wrong);
    # item 1: u sees {b}, answered a (eligible, wrong), v sees {a}, answered b; item 2: w alone
    assert got == {"u": (0, 1), "v": (0, 1), "w": (0, 1)}
    tie = majority_agreement([0], [0], ["x"], [False], np.array([[1, 1]]))
    assert tie == {"x": (0, 0)}
    assert majority_agreement([0], [0], ["z"], [False], np.array([[2, 1]])) == {"z": (1, 1)}
