"""Every bootstrap interval of the agreement and similarity metrics, recomputed from the same resamples.

The engine writes each statistic as a function of item weights and draws resample ``b`` as row ``b``
of ``np.random.default_rng(seed).integers(0, n, (n_boot, n))`` (one draw while ``n · n_boot`` fits one
chunk). Here the same rows are drawn, the items are taken by index (a twice-drawn item appears twice),
the statistic is recomputed by an independent implementation (statsmodels, scikit-learn, SciPy, the
``krippendorff`` package, or a plain formula where no library handles the case), and the engine's
interval must be the 2.5th and 97.5th percentiles of those values. The draws are identical, so the
only difference is floating-point rounding: the tolerance is 1e-9.

A bootstrap that forgets the weights in one part of a formula still gives the right point estimate
(unit weights) but a wrong interval — e.g. p̄ of Fleiss κ averaged without the weights shrinks the
YELP-HAT part 7 interval from about 0.08 to 0.01 — which is what these tests catch.

Data: the workers' sentiment answers and highlight maps of YELP-HAT (Sen et al. 2020 §3; parts 1
and 7, read from ``../shared/data/yelp-hat/raw``). Forced-choice answers (Lertvittayakumjorn & Toni
2019 §3) are simulated: no real forced-choice answers ship with the shared data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from explain_engine.datasets.yelphat import LABEL_CATEGORIES, read_raw
from explain_engine.metrics.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha, pearson_r
from explain_engine.metrics.behavioral import behavioral_similarity
from explain_engine.metrics.bootstrap import bootstrap
from explain_engine.metrics.forced_choice import forced_choice_kappa
from tests.conftest import require_shared_data

krippendorff = pytest.importorskip(
    "krippendorff", reason="the krippendorff package is the test reference (dev extra)"
)

SEED = 11
N_BOOT = 500
TOL = 1e-9
SENTIMENT_SCALE = ["negative", "cannot decide", "positive"]  # the answers read as an ordinal scale


def resample_rows(n: int, seed: int = SEED, n_boot: int = N_BOOT) -> np.ndarray:
    """The engine's resamples as item indices: row ``b`` lists the items drawn in resample ``b``."""
    assert n * n_boot <= 4_000_000, "larger bootstraps are drawn in several chunks"
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def percentiles(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(v, [tail, 100.0 - tail])
    return float(lo), float(hi)


def resampled_interval(n: int, statistic: Callable[[np.ndarray], float]) -> tuple[float, float]:
    """Percentile interval of ``statistic(indices)`` over the engine's resamples of ``n`` items."""
    return percentiles([statistic(idx) for idx in resample_rows(n)])


def assert_interval(est, expected: tuple[float, float]) -> None:
    assert (est.ci_low, est.ci_high) == pytest.approx(expected, abs=TOL), (
        f"engine interval [{est.ci_low:.6f}, {est.ci_high:.6f}] vs resampled "
        f"[{expected[0]:.6f}, {expected[1]:.6f}]"
    )
    assert est.ci_low < est.value < est.ci_high


@pytest.fixture(scope="module")
def part1() -> list[dict]:
    return read_raw(require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv"))


@pytest.fixture(scope="module")
def part7() -> list[dict]:
    return read_raw(require_shared_data("yelp-hat", "raw", "ham_part7.csv"))


def label_counts(records: list[dict], categories: Sequence[str]) -> np.ndarray:
    """Items × categories count of the workers' answers, items with fewer than two answers left out."""
    rows = [[[a["label"] for a in r["annotations"]].count(c) for c in categories] for r in records]
    table = np.array(rows, dtype=np.int64)
    return table[table.sum(axis=1) >= 2]


def fleiss_varying_raters(table: np.ndarray) -> float:
    """Fleiss κ with each item's own number of raters n_i: P_i over the item's own rater pairs,
    category shares pooled over all ratings (Fleiss 1971 when every n_i is equal)."""
    n_i = table.sum(axis=1)
    p_i = (table * (table - 1)).sum(axis=1) / (n_i * (n_i - 1))
    p_j = table.sum(axis=0) / n_i.sum()
    p_e = (p_j**2).sum()
    return (p_i.mean() - p_e) / (1.0 - p_e)


def test_the_engine_draws_the_resamples_reproduced_here():
    """The premise of every test below: resample b weighs item i by its count in row b."""
    seen: list[np.ndarray] = []

    def record(w: np.ndarray) -> np.ndarray:
        seen.append(w.copy())
        return w[:, 0]

    bootstrap(record, 37, n_boot=N_BOOT, seed=SEED)
    drawn = np.concatenate(seen[1:])  # seen[0] is the point estimate at unit weights
    counts = np.stack([np.bincount(row, minlength=37) for row in resample_rows(37)])
    np.testing.assert_array_equal(drawn, counts)


def test_fleiss_interval_on_part1_equals_statsmodels_on_the_same_resamples(part1):
    """Part 1: three answers on every review, so statsmodels' ``fleiss_kappa`` applies as it is."""
    complete = [r for r in part1 if all(a["label"] is not None for a in r["annotations"])]
    table = label_counts(complete, LABEL_CATEGORIES)
    assert table.shape == (297, 3) and (table.sum(axis=1) == 3).all()
    ratings = [[a["label"] for a in r["annotations"]] for r in complete]
    est = fleiss_kappa(ratings, LABEL_CATEGORIES, n_boot=N_BOOT, seed=SEED)
    assert est.value == pytest.approx(sm_fleiss_kappa(table), abs=TOL)
    assert_interval(est, resampled_interval(len(table), lambda idx: sm_fleiss_kappa(table[idx])))


def test_fleiss_interval_on_part7_equals_the_formula_on_the_same_resamples(part7):
    """Part 7: 2 to 4 answers per review (statsmodels assumes a fixed number of raters)."""
    table = label_counts(part7, LABEL_CATEGORIES)
    ratings = [[a["label"] for a in r["annotations"]] for r in part7]
    est = fleiss_kappa(ratings, LABEL_CATEGORIES, n_boot=N_BOOT, seed=SEED)
    assert est.n == len(table) and est.value == pytest.approx(fleiss_varying_raters(table), abs=TOL)
    expected = resampled_interval(len(table), lambda idx: fleiss_varying_raters(table[idx]))
    assert_interval(est, expected)
    assert 0.05 < expected[1] - expected[0] < 0.12  # about 0.08 wide: the sampling error is real


def test_forced_choice_kappa_intervals_equal_statsmodels_on_the_same_resamples():
    """Fleiss κ over forced-choice answers with and without confidence (Lertvittayakumjorn & Toni
    2019 §4, Table 4), on simulated answers: 3 workers × 120 questions, options A/B + no preference."""
    rng = np.random.default_rng(5)
    options = ["A", "B"]
    truth = rng.integers(0, 2, 120)
    questions, picked, confident = [], [], []
    for q, t in enumerate(truth):
        for _ in range(3):
            u = rng.random()
            questions.append(q)
            picked.append(None if u < 0.15 else options[t] if u < 0.8 else options[1 - t])
            confident.append(bool(rng.random() < 0.6))
    out = forced_choice_kappa(questions, picked, confident, options, n_boot=N_BOOT, seed=SEED)
    for key, with_conf in (("with_confidence", True), ("without_confidence", False)):
        cats = [
            "no preference"
            if p is None
            else (f"{p} {'confident' if c else 'unconfident'}" if with_conf else p)
            for p, c in zip(picked, confident, strict=True)
        ]
        names = sorted(set(cats))
        table = np.zeros((120, len(names)), dtype=np.int64)
        for q, c in zip(questions, cats, strict=True):
            table[q, names.index(c)] += 1
        assert out[key].value == pytest.approx(sm_fleiss_kappa(table), abs=TOL)
        assert_interval(out[key], resampled_interval(120, lambda idx, t=table: sm_fleiss_kappa(t[idx])))


def _slot_pairs(records: list[dict], key: Callable[[dict], object]) -> tuple[np.ndarray, np.ndarray]:
    """Values of annotator slots 1 and 2 per review, reviews where either is missing left out."""
    pairs = [(key(r["annotations"][0]), key(r["annotations"][1])) for r in records]
    pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
    return np.array([x for x, _ in pairs]), np.array([y for _, y in pairs])


def _highlight_band(annotation: dict) -> int:
    """Words highlighted in a 50-word review, in bands of five (an ordinal rating 1..7)."""
    return min(sum(annotation["map"]) // 5, 6) + 1


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_interval_on_sentiment_answers_equals_sklearn(part7, weights):
    """Slots 1 and 2 of part 7 on the scale negative < cannot decide < positive."""
    a, b = _slot_pairs(part7, lambda ann: ann["label"])
    est = cohen_kappa(
        [r["annotations"][0]["label"] for r in part7],
        [r["annotations"][1]["label"] for r in part7],
        SENTIMENT_SCALE,
        weights=weights,
        n_boot=N_BOOT,
        seed=SEED,
    )
    assert est.n == len(a) and est.extra["dropped"] > 0

    def kappa(idx: np.ndarray) -> float:
        return cohen_kappa_score(a[idx], b[idx], labels=SENTIMENT_SCALE, weights=weights)

    assert est.value == pytest.approx(kappa(np.arange(len(a))), abs=TOL)
    assert_interval(est, resampled_interval(len(a), kappa))


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_kappa_interval_on_highlight_bands_equals_sklearn(part1, weights):
    """Seven ordinal bands of how many words slots 1 and 2 highlighted in each part 1 review: more
    categories than the sentiment scale, so linear and quadratic weights differ more."""
    bands = list(range(1, 8))
    a, b = _slot_pairs(part1, _highlight_band)
    est = cohen_kappa(a.tolist(), b.tolist(), bands, weights=weights, n_boot=N_BOOT, seed=SEED)

    def kappa(idx: np.ndarray) -> float:
        return cohen_kappa_score(a[idx], b[idx], labels=bands, weights=weights)

    assert est.value == pytest.approx(kappa(np.arange(len(a))), abs=TOL)
    assert_interval(est, resampled_interval(len(a), kappa))


def test_pearson_interval_on_highlight_counts_equals_scipy(part1):
    """Pearson r of the number of words slots 1 and 2 highlighted per part 1 review."""
    x, y = _slot_pairs(part1, lambda ann: float(sum(ann["map"])))
    est = pearson_r(x.tolist(), y.tolist(), n_boot=N_BOOT, seed=SEED)
    assert est.value == pytest.approx(pearsonr(x, y).statistic, abs=TOL)
    assert_interval(est, resampled_interval(len(x), lambda idx: pearsonr(x[idx], y[idx]).statistic))


def test_krippendorff_nominal_interval_on_part7_equals_the_package(part7):
    """Nominal α over 2–4 sentiment answers per review; reviews with one answer are not pairable."""
    rows = [[a["label"] for a in r["annotations"]] for r in part7]
    code = {c: float(i) for i, c in enumerate(LABEL_CATEGORIES)}
    data = np.full((len(rows), 4), np.nan)
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            if v is not None:
                data[i, j] = code[v]
    data = data[np.isfinite(data).sum(axis=1) >= 2]
    est = krippendorff_alpha(rows, "nominal", LABEL_CATEGORIES, n_boot=N_BOOT, seed=SEED)
    assert est.n == len(data)

    def alpha(idx: np.ndarray) -> float:
        return krippendorff.alpha(
            reliability_data=data[idx].T, level_of_measurement="nominal", value_domain=[0.0, 1.0, 2.0]
        )

    assert est.value == pytest.approx(alpha(np.arange(len(data))), abs=TOL)
    assert_interval(est, resampled_interval(len(data), alpha))


@pytest.mark.parametrize("level", ["ordinal", "interval", "ratio"])
def test_krippendorff_alpha_interval_on_highlight_bands_equals_the_package(part1, level):
    """Ordinal, interval and ratio α over the highlight bands of all three slots of part 1."""
    data = np.array([[_highlight_band(a) for a in r["annotations"]] for r in part1], dtype=np.float64)
    domain = sorted(set(data.ravel().tolist()))
    est = krippendorff_alpha(data.astype(int).tolist(), level, n_boot=N_BOOT, seed=SEED)

    def alpha(idx: np.ndarray) -> float:
        return krippendorff.alpha(
            reliability_data=data[idx].T, level_of_measurement=level, value_domain=domain
        )

    assert est.value == pytest.approx(alpha(np.arange(len(data))), abs=TOL)
    assert_interval(est, resampled_interval(len(data), alpha))


@pytest.mark.parametrize("score", ["HAM2", "HAM2+HAM3"])
def test_behavioral_similarity_interval_equals_sklearn_aucs_resampled(part1, score):
    """Behavioral similarity (Sen et al. 2020 §4.1): the mean per-text ROC AUC of a score against
    HAM1. ``HAM2+HAM3`` (0, 1 or 2 per word) takes the engine's path for tied continuous scores.
    Texts whose HAM1 is all 0 or all 1 have no AUC and are left out before resampling."""
    truth = [r["annotations"][0]["map"] for r in part1]
    if score == "HAM2":
        scores = [r["annotations"][1]["map"] for r in part1]
    else:
        scores = [
            (np.array(r["annotations"][1]["map"]) + np.array(r["annotations"][2]["map"])).tolist()
            for r in part1
        ]
    est = behavioral_similarity(truth, scores, n_boot=N_BOOT, seed=SEED)
    aucs = np.array([roc_auc_score(t, s) for t, s in zip(truth, scores, strict=True) if 0 < sum(t) < len(t)])
    assert est.n == len(aucs) and est.extra["skipped"] == len(truth) - len(aucs)
    assert est.value == pytest.approx(aucs.mean(), abs=TOL)
    assert_interval(est, resampled_interval(len(aucs), lambda idx: aucs[idx].mean()))
