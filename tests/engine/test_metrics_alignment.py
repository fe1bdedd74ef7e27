"""Importance alignment (the NLI importance-alignment paper §3): oracles, per-example Fisher-z correlations, ΔA and its t-test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr, ttest_rel

from explain_engine.metrics.alignment import (
    expert_oracle,
    fisher_correlations,
    hard_oracle,
    hard_oracles,
    importance_alignment,
    random_derangement,
)


def test_hard_oracle_overlap_without_stop_words():
    tokens = ["The", "dog", "is", "running", "outside", "."]
    oracle = hard_oracle(tokens, "A dog runs outside, the hypothesis says it is running.")
    assert oracle.tolist() == [0, 1, 0, 1, 1, 0]  # "the" and "is" are stop words
    custom = hard_oracle(tokens, "the dog", stop_words=["dog"])
    assert custom.tolist() == [1, 0, 0, 0, 0, 0]


def test_expert_oracle_is_share_of_markers():
    marks = [[1, 0, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0]]
    assert expert_oracle(marks).tolist() == pytest.approx([1, 1 / 3, 1 / 3, 0])
    with pytest.raises(ValueError):
        expert_oracle([])


def test_random_derangement_has_no_fixed_point():
    for seed in range(20):
        perm = random_derangement(5, seed)
        assert sorted(perm.tolist()) == list(range(5)) and not (perm == np.arange(5)).any()
    with pytest.raises(ValueError):
        random_derangement(1)


def _example_set(n: int = 80, seed: int = 0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 25, n)
    oracles = [(rng.random(k) < 0.3).astype(float) for k in lengths]
    for o in oracles:
        o[0], o[1] = 1.0, 0.0  # never constant
    attributions = [o * rng.normal(2, 1, len(o)) + rng.normal(0, 0.7, len(o)) for o in oracles]
    return attributions, oracles


def test_fisher_correlations_match_scipy():
    attributions, oracles = _example_set()
    c = fisher_correlations([np.abs(a) for a in attributions], oracles)
    ref = [math.atanh(pearsonr(np.abs(a), o).statistic) for a, o in zip(attributions, oracles, strict=True)]
    assert np.allclose(c, ref)
    constant = fisher_correlations([[1.0, 2.0, 3.0], [0.1, 0.1, 0.1]], [[0, 1, 1], [1, 0, 0]])
    assert not np.isnan(constant[0]) and np.isnan(constant[1])


def test_importance_alignment_delta_a_and_t_test():
    attributions, oracles = _example_set()
    pairing = random_derangement(len(oracles), seed=1)
    random_oracles = []
    for i, j in enumerate(pairing):  # another example's oracle, cut or padded to this input's length
        o = np.resize(oracles[j], len(oracles[i]))
        random_oracles.append(o)
    res = importance_alignment(attributions, oracles, random_oracles, n_boot=300)
    c = np.array(
        [math.atanh(pearsonr(np.abs(a), o).statistic) for a, o in zip(attributions, oracles, strict=True)]
    )
    c_r = np.array(
        [
            math.atanh(pearsonr(np.abs(a), o).statistic)
            for a, o in zip(attributions, random_oracles, strict=True)
        ]
    )
    assert np.allclose(res.c, c) and np.allclose(res.c_random, c_r)
    assert res.delta_a.value == pytest.approx(math.tanh(np.mean(c - c_r)))
    ref = ttest_rel(c, c_r, alternative="greater")
    assert res.t_statistic == pytest.approx(ref.statistic) and res.p_value == pytest.approx(ref.pvalue)
    assert res.delta_a.value > 0.3 and res.p_value < 1e-6  # attributions were built from the oracles
    assert res.delta_a.ci_low < res.delta_a.value < res.delta_a.ci_high
    out = res.to_dict()
    assert out["delta_a"]["skipped"] == 0 and "paired t-test" in out["test"]


def test_alignment_skips_undefined_examples_and_hard_oracles_pairing():
    inputs = [["good", "movie", "overall"], ["bad", "plot", "twist"], ["fine", "acting", "here"]]
    explanations = ["the movie was good", "a plot twist ruins it", "acting"]
    own = hard_oracles(inputs, explanations)
    assert own.to_lists() == [[1, 1, 0], [0, 1, 1], [0, 1, 0]]
    other = hard_oracles(inputs, explanations, pairing=[1, 2, 0])
    assert other.to_lists() == [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
    res = importance_alignment([[0.9, 0.5, 0.1], [0.1, 0.7, 0.8], [0.2, 0.9, 0.1]], own, other, n_boot=0)
    assert np.isnan(res.c_random).all() and res.delta_a.extra["skipped"] == 3 and res.delta_a.n == 0
    assert math.isnan(res.p_value)
