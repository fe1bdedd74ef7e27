"""Crowd aggregation, worker trust and sentence-rating metrics, against independent references.

crowd-kit and statsmodels serve as references only; crowd-kit is a test-only dependency.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
from statsmodels.stats.proportion import proportion_confint

from explain_engine.metrics.aggregation import dawid_skene, majority_vote, winning_category
from explain_engine.metrics.alignment import marking_alignment, random_derangement
from explain_engine.metrics.ratings import (
    attention_levels,
    confidence_curve,
    confidence_summary,
    crowd_labels,
    distance_agreement,
    marking_agreement,
    pair_kappa,
    pairwise_agreement,
    rating_matrix,
    replacement_std,
    sentence_scores,
)
from explain_engine.metrics.trust import (
    EXCLUDED,
    PENDING,
    TRUSTED,
    answer_weights,
    leave_one_out_trust,
    trust_table,
    wilson_interval,
)


def _crowd(seed: int = 3, n_tasks: int = 60, n_workers: int = 9, k: int = 3):
    """Simulated answers: workers of different accuracy, five answers per task."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_tasks)
    skill = np.linspace(0.35, 0.95, n_workers)
    tasks, workers, labels = [], [], []
    for t in range(n_tasks):
        for w in rng.choice(n_workers, 5, replace=False):
            good = rng.random() < skill[w]
            tasks.append(f"t{t:03d}")
            workers.append(f"w{w}")
            labels.append(["neg", "neu", "pos"][truth[t] if good else rng.integers(0, k)])
    return tasks, workers, labels


def _frame(tasks, workers, labels) -> pd.DataFrame:
    return pd.DataFrame({"task": tasks, "worker": workers, "label": labels})


# ---------------------------------------------------------------------------------------- aggregation


def test_majority_vote_matches_crowd_kit_and_breaks_ties_by_category_order():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    tasks, workers, labels = _crowd()
    ours = majority_vote(tasks, workers, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = crowdkit.MajorityVote().fit(_frame(tasks, workers, labels))
    assert list(ours.tasks) == list(ref.labels_.index)
    assert ours.answers.tolist() == [5] * len(ours.tasks)
    assert ours.label == list(ref.labels_)
    np.testing.assert_allclose(ours.probabilities, ref.probas_[ours.categories].to_numpy(), atol=1e-12)
    tie = majority_vote(["a", "a"], [1, 2], ["pos", "neg"])
    assert tie.label == ["neg"] and tie.probability[0] == 0.5
    assert majority_vote(["a", "a"], [1, 2], ["pos", "neg"], categories=["pos", "neg"]).label == ["pos"]


def test_weighted_majority_vote_matches_crowd_kit_skills():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    tasks, workers, labels = _crowd(seed=5)
    skills = {f"w{w}": 0.1 * (w + 1) for w in range(9)}
    ours = majority_vote(tasks, workers, labels, weights=[skills[w] for w in workers])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = crowdkit.MajorityVote().fit(_frame(tasks, workers, labels), skills=pd.Series(skills))
    np.testing.assert_allclose(ours.probabilities, ref.probas_[ours.categories].to_numpy(), atol=1e-12)
    nobody = majority_vote(["a"], [1], ["pos"], weights=[0.0])
    assert nobody.label == [None] and math.isnan(nobody.probability[0])


@pytest.mark.parametrize("seed", [3, 8])
def test_dawid_skene_matches_crowd_kit(seed):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    tasks, workers, labels = _crowd(seed=seed)
    ours = dawid_skene(tasks, workers, labels, n_iter=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = crowdkit.DawidSkene(n_iter=100).fit(_frame(tasks, workers, labels))
    assert ours.iterations == len(ref.loss_history_)
    np.testing.assert_allclose(ours.probabilities, ref.probas_[ours.categories].to_numpy(), atol=1e-8)
    assert ours.label == list(ref.labels_)


def test_dawid_skene_learns_that_a_careless_majority_says_nothing():
    # Four careless workers always say "pos"; three careful ones always give the truth.
    truth = ["neg", "pos", "pos"] * 8
    tasks, workers, labels = [], [], []
    for t, z in enumerate(truth):
        for w in ("c1", "c2", "c3", "c4"):
            tasks.append(t), workers.append(w), labels.append("pos")
        for w in ("g1", "g2", "g3"):
            tasks.append(t), workers.append(w), labels.append(z)
    assert majority_vote(tasks, workers, labels).label == ["pos"] * len(truth)
    assert dawid_skene(tasks, workers, labels).label == truth


# --------------------------------------------------------------------------------------------- trust


def test_wilson_interval_matches_statsmodels_and_handles_no_golds():
    passed, seen = np.array([0, 3, 7, 10, 0]), np.array([4, 4, 10, 10, 0])
    low, high = wilson_interval(passed, seen, 0.9)
    ref_low, ref_high = proportion_confint(passed[:4], seen[:4], alpha=0.1, method="wilson")
    np.testing.assert_allclose(low[:4], ref_low)
    np.testing.assert_allclose(high[:4], ref_high)
    assert (low[4], high[4]) == (0.0, 1.0)
    with pytest.raises(ValueError, match="between 0 and seen"):
        wilson_interval([5], [4])


def test_trust_table_statuses_and_leave_one_out():
    table = trust_table([7, 6, 1], [10, 10, 2], threshold=0.7, min_golds=4)
    assert table.status.tolist() == [TRUSTED, EXCLUDED, PENDING]
    np.testing.assert_allclose(table.trust, [0.7, 0.6, 0.5])
    np.testing.assert_allclose(leave_one_out_trust([7, 1], [10, 1], [1, 1]), [6 / 9, np.nan])


def wilson_by_formula(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_wilson_interval_matches_the_closed_form():
    passed, seen = np.array([7, 0, 10, 3]), np.array([10, 5, 10, 4])
    low, high = wilson_interval(passed, seen, 0.95)
    for i in range(4):
        expected = wilson_by_formula(int(passed[i]), int(seen[i]), 1.959963984540054)
        assert low[i] == pytest.approx(expected[0], abs=1e-9)
        assert high[i] == pytest.approx(expected[1], abs=1e-9)
    assert np.all(low >= 0) and np.all(high <= 1)
    low0, high0 = wilson_interval([0], [0])
    assert (low0[0], high0[0]) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval([3], [2])


def test_trust_table_statuses_before_any_gold_and_at_a_higher_confidence():
    table = trust_table([7, 6, 2, 0], [10, 10, 3, 0], threshold=0.7, min_golds=4)
    assert list(table.status) == ["trusted", "excluded", "pending", "pending"]
    assert table.trust[0] == pytest.approx(0.7) and math.isnan(table.trust[3])
    wider = trust_table([7], [10], confidence=0.99)
    assert wider.low[0] < table.low[0] and wider.high[0] > table.high[0]


def test_leave_one_out_trust_on_the_other_golds():
    loo = leave_one_out_trust([8, 3, 1], [10, 4, 1], [0, 1, 1])
    assert loo[0] == pytest.approx(8 / 9) and loo[1] == pytest.approx(2 / 3) and math.isnan(loo[2])


# ------------------------------------------------------------------------------------------- ratings


def test_crowd_labels_majority_ties_and_confidence():
    # item 1: levels 2, 2, 4 → majority 2, confidence by trust; item 2: 3 vs 5 tied → more trust wins.
    labels = crowd_labels([1, 1, 1, 2, 2], [2, 2, 4, 3, 5], [1.0, 0.5, 1.0, 0.2, 0.9])
    assert labels.items.tolist() == [1, 2]
    assert labels.majority.tolist() == [2, 5]
    np.testing.assert_allclose(labels.confidence, [1.5 / 2.5, 0.9 / 1.1])
    np.testing.assert_allclose(labels.mean, [8 / 3, 4.0])
    assert crowd_labels([1, 1], [3, 2], [1.0, 1.0]).majority.tolist() == [2]  # full tie: lower level
    with pytest.raises(ValueError, match="levels"):
        crowd_labels([1], [7], [1.0])


def test_confidence_summary_ignores_missing():
    summary = confidence_summary([0.4, None, 0.9, math.nan, 0.5])
    assert summary == pytest.approx(
        {"n": 3, "mean_confidence": 0.6, "share_confidence_05": 2 / 3, "share_confidence_08": 1 / 3}
    )
    assert confidence_summary([])["mean_confidence"] is None


def test_pairwise_agreement_uses_shared_items_and_matches_pearson():
    rng = np.random.default_rng(0)
    base = rng.integers(1, 6, 40)
    a = base
    b = np.clip(base + rng.integers(-1, 2, 40), 1, 5)
    c = rng.integers(1, 6, 40)
    items = np.tile(np.arange(40), 3)
    workers = np.repeat([10, 20, 30], 40)
    ratings = np.concatenate([a, b, c]).astype(float)
    matrix, item_ids, worker_ids = rating_matrix(items[:-5], workers[:-5], ratings[:-5])
    assert matrix.shape == (40, 3) and np.isnan(matrix[-5:, 2]).all() and worker_ids.tolist() == [10, 20, 30]
    rows = pairwise_agreement(matrix, ["A", "B", "C"], n_boot=50)
    assert [(r["a"], r["b"], r["n"]) for r in rows] == [("A", "B", 40), ("A", "C", 35), ("B", "C", 35)]
    assert rows[0]["r"] == pytest.approx(pearsonr(a, b)[0])
    assert rows[0]["kappa"] > rows[1]["kappa"]


def test_sentence_scores_levels_and_confidence_curve():
    np.testing.assert_allclose(sentence_scores([1, 2, 3, 4], [[0, 1], [1, 4]]), [1, 9])
    with pytest.raises(ValueError, match="run past"):
        sentence_scores([1, 2], [[0, 3]])
    assert attention_levels([0.0, 0.5, 1.0, -1.0]).tolist() == [1, 3, 5, 1]
    curve = confidence_curve(
        [5, 3, 1, 2], [0.9, 0.6, 0.3, 1.0], [5, 2, 1, 5], [0.9, 0.5, 0.1, 0.2], (0.0, 0.5)
    )
    assert [p["n"] for p in curve] == [4, 3]
    assert curve[0]["accuracy"] == 0.5 and curve[0]["accuracy_within_1"] == 0.75
    assert curve[1]["accuracy"] == pytest.approx(1 / 3) and curve[1]["random"] == 0.2


# ----------------------------------------------------------------------------- ratings, by hand


def test_majority_and_trust_weighted_confidence():
    # item 1: levels 4, 4, 2, 5 with trusts 1, 0.5, 1, 1 -> majority 4, confidence 1.5 / 3.5
    # item 2: 3, 3, 1, 1 with trusts 1, 1, 0.8, 0.8 -> tie broken by trust: 3, confidence 2 / 3.6
    # item 3: 2, 5 with equal trust -> tie broken towards the lower level
    labels = crowd_labels(
        [1, 1, 1, 1, 2, 2, 2, 2, 3, 3], [4, 4, 2, 5, 3, 3, 1, 1, 5, 2], [1, 0.5, 1, 1, 1, 1, 0.8, 0.8, 1, 1]
    )
    assert labels.items.tolist() == [1, 2, 3]
    assert labels.majority.tolist() == [4, 3, 2]
    assert labels.confidence == pytest.approx([1.5 / 3.5, 2 / 3.6, 0.5])
    assert labels.mean == pytest.approx([3.75, 2.0, 3.5])
    assert labels.responses.tolist() == [4, 4, 2]
    with pytest.raises(ValueError, match="levels"):
        crowd_labels([1], [7], [1.0])


def test_pairwise_r_and_absolute_weighted_kappa_by_hand():
    # a = 1 2 3 4, b = 1 2 4 4. r = 5.5 / sqrt(5 * 6.75) = 0.946729.
    # κ with |i - j| / 4 disagreement: observed 0.25 / 4 = 0.0625; expected 0.34375 -> 1 - 0.0625 / 0.34375.
    matrix, items, workers = rating_matrix(
        [1, 2, 3, 4, 1, 2, 3, 4, 1], [7, 7, 7, 7, 8, 8, 8, 8, 9], [1, 2, 3, 4, 1, 2, 4, 4, 5]
    )
    assert items.tolist() == [1, 2, 3, 4] and workers.tolist() == [7, 8, 9]
    assert np.isnan(matrix[1, 2])
    rows = pairwise_agreement(matrix, ["a", "b", "c"], min_shared=3, n_boot=50)
    assert len(rows) == 1  # c shares one item only
    row = rows[0]
    assert (row["a"], row["b"], row["n"]) == ("a", "b", 4)
    assert row["r"] == pytest.approx(5.5 / np.sqrt(33.75))
    assert row["kappa"] == pytest.approx(1 - 0.0625 / 0.34375)
    assert row["r_low"] <= row["r"] <= row["r_high"]


def test_distance_agreement_is_the_uncorrected_weighted_agreement_by_hand():
    # Absolute differences 0 1 2 1 0 0 0 1: mean 5 / 8 = 0.625 levels, normalised by the range 4:
    # 0.15625, so the agreement is 0.84375. Pearson r is 0.745 and the chance-corrected κ with the
    # same weights 0.545: like Pappas & Popescu-Belis 2016 Table 1, the distance agreement exceeds r.
    a, b = [1, 1, 2, 5, 3, 1, 1, 2], [1, 2, 4, 4, 3, 1, 1, 1]
    est = distance_agreement(a, b, n_boot=200)
    assert est.value == pytest.approx(0.84375) and est.n == 8
    assert est.ci_low <= est.value <= est.ci_high
    r = np.corrcoef(a, b)[0, 1]
    corrected = pair_kappa(np.array(a), np.array(b), "cohen_absolute", n_boot=0).value
    assert corrected == pytest.approx(0.5454545, abs=1e-6) and corrected < r < est.value
    matrix, _, _ = rating_matrix(list(range(8)) * 2, [1] * 8 + [2] * 8, a + b)
    named = pairwise_agreement(matrix, ["a", "b"], n_boot=0, kappa="distance_agreement")
    assert named[0]["kappa"] == pytest.approx(0.84375)
    assert pairwise_agreement(matrix, ["a", "b"], n_boot=0)[0]["kappa"] == pytest.approx(corrected)
    assert distance_agreement([1, None], [2, 3], n_boot=0).extra["dropped"] == 1
    with pytest.raises(ValueError, match="unknown kappa 'fleiss'"):
        pairwise_agreement(matrix, ["a", "b"], kappa="fleiss")
    with pytest.raises(ValueError, match=r"rating pair 0 \(7, 2\)"):
        distance_agreement([7], [2])


def test_sentence_scores_and_levels():
    assert sentence_scores([0.1, 0.2, 0.3, 0.4, 0.0], [[0, 2], [2, 5]]) == pytest.approx([0.3, 0.7])
    # relative to the top sentence: 0.3 / 0.7 = 0.43 -> bin 3; 1.0 -> 5; 0 -> 1
    assert attention_levels([0.3, 0.7, 0.0]).tolist() == [3, 5, 1]
    assert attention_levels([0.0, 0.0]).tolist() == [1, 1]
    with pytest.raises(ValueError, match="run past"):
        sentence_scores([0.5], [[0, 2]])


def test_confidence_curve_by_hand():
    rows = confidence_curve(
        [3, 5, 1, 2], [0.5, 0.9, 0.3, 0.8], [3, 4, 1, 5], [0.3, 0.6, 0.1, 0.2], [0.0, 0.5, 0.85]
    )
    assert [r["n"] for r in rows] == [4, 3, 1]
    assert [r["accuracy"] for r in rows] == pytest.approx([0.5, 1 / 3, 0.0])
    assert [r["accuracy_within_1"] for r in rows] == pytest.approx([0.75, 2 / 3, 1.0])
    assert rows[0]["pearson_r"] == pytest.approx(1.1 / np.sqrt(0.14 * 8.75))
    assert rows[2]["pearson_r"] is None and rows[0]["random"] == 0.2


def test_replacement_std_by_hand():
    matrix = np.array([[1.0, 1.0, 5.0], [2.0, 4.0, np.nan], [3.0, np.nan, np.nan]])
    out = replacement_std(matrix, machine=[1.0, 3.0, 3.0], seed=0)
    base = (np.std([1, 1, 5]) + np.std([2, 4])) / 2
    assert out["n"] == 2 and out["std"] == pytest.approx(base)
    # The least reliable judge (5 in row 0; the first of the tied 2 and 4 in row 1) becomes the mean.
    human = (np.std([1, 1, 7 / 3]) + np.std([3, 4])) / 2 - base
    assert out["human"] == pytest.approx(human)
    assert out["model"] <= 0 and out["random"] is not None
    assert replacement_std(matrix[2:], [1.0])["std"] is None


def test_marking_agreement_matches_statsmodels():
    markings = [[[1, 0, 0, 1], [1, 0, 1, 1], [1, 0, 0, 0]], [[0, 1], [1, 1], [0, 1]], [[1, 1, 1]]]
    counts = []
    for m in markings[:2]:
        on = np.sum(m, axis=0)
        counts.extend(zip(len(m) - on, on, strict=True))
    est = marking_agreement(markings, n_boot=0)
    assert est.n == 6 and est.value == pytest.approx(sm_fleiss(np.array(counts)))
    assert marking_agreement([[[1, 0]]]) is None


def test_marking_alignment_rewards_attributions_on_marked_words():
    words = [
        ["good", "food", "bad", "service"],
        ["bad", "service", "good", "food"],
        ["food", "good", "bad", "view"],
    ]
    explanations = ["good food", "bad service", "bad view"]
    markings = [[[1, 1, 0, 0], [1, 0, 0, 0]], [[1, 1, 0, 0]], [[0, 0, 1, 1], [0, 0, 1, 0]]]
    good = [[0.9, 0.5, 0.1, 0.0], [0.8, 0.7, 0.0, 0.1], [0.0, 0.1, 0.9, 0.4]]
    out = marking_alignment(words, explanations, markings, good, n_boot=0, seed=1)
    assert out["hard"]["delta_a"]["value"] > 0
    assert sorted(out["pairing"]) == [0, 1, 2] and all(i != p for i, p in enumerate(out["pairing"]))
    # no marks against a random explanation: no expert C_R, and nothing put in its place
    assert out["expert"] is None and "control items" in out["expert_unavailable"]
    assert all(e["c_expert"] is None and e["c_random_expert"] is None for e in out["examples"])
    # controls: the same inputs marked against another input's explanation
    controls = ["bad view", "good food", "bad service"]
    control_marks = [[[0, 0, 1, 0]], [[0, 0, 1, 1]], [[0, 1, 0, 0]]]
    out = marking_alignment(
        words, explanations, markings, good, n_boot=0, seed=1,
        random_explanations=controls, random_markings=control_marks,
    )  # fmt: skip
    assert out["expert"]["delta_a"]["value"] > 0 and out["pairing"] is None
    with pytest.raises(ValueError, match="example 1: random_markings need"):
        marking_alignment(
            words, explanations, markings, good,
            random_explanations=controls, random_markings=[control_marks[0], [], control_marks[2]],
        )  # fmt: skip
    with pytest.raises(ValueError, match="one value per word"):
        marking_alignment(words, explanations, markings, [[0.0], *good[1:]])


def test_marking_alignment_by_hand():
    words = [["red", "big", "cat"], ["red", "small", "dog"], ["blue", "big", "dog"]]
    explanations = ["the red cat", "a small dog", "big and blue"]
    markings = [[[1, 0, 1], [1, 0, 0]], [[0, 1, 1]], [[1, 1, 0], [1, 0, 0], [0, 1, 0]]]
    attributions = [[0.9, -0.3, 0.4], [0.1, -0.8, 0.6], [0.7, 0.2, -0.1]]
    pairing = random_derangement(3, seed=0)
    random_expl = [explanations[j] for j in pairing]
    # annotators' marks of each input against its random explanation: the expert oracle's C_R
    control_marks = [[[0, 1, 0], [0, 1, 1]], [[1, 0, 0]], [[0, 0, 1], [1, 0, 1]]]
    result = marking_alignment(
        words, explanations, markings, attributions, n_boot=50,
        random_explanations=random_expl, random_markings=control_marks,
    )  # fmt: skip
    plain = marking_alignment(words, explanations, markings, attributions, n_boot=50)
    assert plain["pairing"] == pairing.tolist() and plain["hard"] == result["hard"]
    expert = [np.mean(m, axis=0) for m in markings]  # shares: [1, 0, .5], [0, 1, 1], [2/3, 2/3, 0]
    assert expert[2] == pytest.approx([2 / 3, 2 / 3, 0])
    hard = [[1, 0, 1], [0, 1, 1], [1, 1, 0]]
    vocab = [set(e.split()) - {"the", "a", "and"} for e in explanations]
    random_hard = [[float(w in vocab[pairing[i]]) for w in words[i]] for i in range(3)]

    def c(attr, oracle):
        if np.ptp(oracle) == 0:
            return np.nan
        return np.arctanh(np.corrcoef(np.abs(attr), oracle)[0, 1])

    c_expert = np.array([c(a, o) for a, o in zip(attributions, expert, strict=True)])
    c_hard = np.array([c(a, o) for a, o in zip(attributions, hard, strict=True)])
    c_random = np.array([c(a, o) for a, o in zip(attributions, random_hard, strict=True)])
    c_random_expert = np.array(
        [c(a, np.mean(m, axis=0)) for a, m in zip(attributions, control_marks, strict=True)]
    )
    got = result["examples"]
    assert [e["c_expert"] for e in got] == pytest.approx(c_expert.tolist(), nan_ok=True)
    assert [e["c_random_expert"] for e in got] == pytest.approx(c_random_expert.tolist(), nan_ok=True)
    assert [e["c_hard"] for e in got] == pytest.approx(c_hard.tolist(), nan_ok=True)
    assert [e["c_random_hard"] for e in got] == pytest.approx(c_random.tolist(), nan_ok=True)
    ok = np.isfinite(c_expert) & np.isfinite(c_random_expert)
    expected = np.tanh(np.mean((c_expert - c_random_expert)[ok]))
    assert result["expert"]["delta_a"]["value"] == pytest.approx(expected)
    assert result["expert"]["delta_a"]["n"] == int(ok.sum()) == 3
    ok_hard = np.isfinite(c_hard) & np.isfinite(c_random)
    assert result["hard"]["delta_a"]["value"] == pytest.approx(np.tanh(np.mean((c_hard - c_random)[ok_hard])))
    with pytest.raises(ValueError, match="one value per word"):
        marking_alignment(words, explanations, markings, [[0.1], [0.2, 0.1, 0.0], [0.0, 0.1, 0.2]])


def test_answer_weights_count_trusted_only_where_golds_judge():
    status = ["trusted", "pending", "excluded", "trusted"]
    trust = [0.75, 0.67, 0.2, 1.0]
    assert answer_weights(status, trust).tolist() == [0.75, 0.0, 0.0, 1.0]
    # a study without golds judges nobody: a pending worker weighs 1.0, an excluded one stays out
    assert answer_weights(status, trust, judged=False).tolist() == [0.75, 1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="unknown trust status 'blocked'"):
        answer_weights(["blocked"], [1.0])
    with pytest.raises(ValueError, match="finite trust"):
        answer_weights(["trusted"], [math.nan])


def test_winning_category_most_answers_then_trust_then_first():
    counts = np.array([[2, 2, 0], [2, 2, 0], [1, 3, 0], [0, 1, 1]])
    trust = np.array([[1.5, 1.75, 0], [1.75, 1.75, 0], [0.9, 0.6, 0], [0, 0.5, 0.5]])
    assert winning_category(counts, trust).tolist() == [1, 0, 1, 1]
    labelled = majority_vote([1, 1, 2, 2], ["a", "b", "a", "b"], ["neg", "pos", "neg", "pos"],
                             tie_weights=[0.7, 0.9, 0.9, 0.7])  # fmt: skip
    assert labelled.label == ["pos", "neg"] and labelled.probability.tolist() == [0.5, 0.5]
