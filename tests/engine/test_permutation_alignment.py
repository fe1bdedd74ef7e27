"""Alignment against imported human maps (after Prasad et al. 2021 §3) with the permutation null: the null
is near 0 on random data, C is high when the attributions are the oracle, the permutations stay inside
each example, and the interval agrees with an independent resampling written as a plain loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr

from explain_engine.metrics.permutation_alignment import (
    NULL_DESCRIPTION,
    permutation_alignment,
    permute_within,
    shared_marks_alignment,
)
from explain_engine.metrics.ragged import Ragged


def _random_texts(rng: np.random.Generator, n: int, low: int = 8, high: int = 30) -> list[np.ndarray]:
    return [rng.random(int(k)) for k in rng.integers(low, high, size=n)]


def test_permutations_stay_inside_each_example_and_follow_the_seed():
    values = Ragged.from_lists([[1.0, 2.0, 3.0], [10.0, 20.0], [7.0, 8.0, 9.0, 6.0]])
    rows = permute_within(values, 50, seed=4)
    for row in rows:
        parts = np.split(row, values.starts[1:])
        assert [sorted(p.tolist()) for p in parts] == [[1, 2, 3], [10, 20], [6, 7, 8, 9]]
    assert len({tuple(r) for r in rows}) > 5  # they do permute
    assert np.array_equal(rows, permute_within(values, 50, seed=4))
    with pytest.raises(ValueError, match="n_permutations"):
        permute_within(values, 0)


def test_the_null_is_near_zero_on_random_data_and_c_too():
    rng = np.random.default_rng(1)
    attributions = _random_texts(rng, 300)
    oracles = [rng.integers(0, 4, size=a.shape[0]) / 3 for a in attributions]
    out = permutation_alignment(attributions, oracles, n_permutations=20, n_boot=200)
    assert abs(out.mean_c_null.value) < 0.02
    assert out.mean_c_null.ci_low < 0 < out.mean_c_null.ci_high or abs(out.mean_c_null.value) < 0.01
    assert abs(out.mean_c.value) < 0.1 and out.mean_c.ci_low < 0 < out.mean_c.ci_high
    assert out.delta_a.ci_low < 0 < out.delta_a.ci_high


def test_c_is_high_when_the_attributions_are_the_oracle():
    rng = np.random.default_rng(2)
    oracles = [rng.integers(0, 4, size=int(k)) / 3 for k in rng.integers(8, 30, size=60)]
    signed = [o * rng.choice([-1.0, 1.0], size=o.shape[0]) for o in oracles]  # |IG| is compared
    out = permutation_alignment(signed, oracles, n_boot=100)
    assert out.mean_c.value > 5  # arctanh of r = 1 (clipped)
    assert abs(out.mean_c_null.value) < 0.1
    assert out.delta_a.value > 0.99 and out.delta_a.ci_low > 0.99
    assert out.mean_c.extra["skipped"] == 0


def test_per_example_c_is_arctanh_of_pearson_and_null_the_mean_over_permutations():
    rng = np.random.default_rng(3)
    attributions = _random_texts(rng, 5)
    oracles = [rng.random(a.shape[0]) for a in attributions]
    out = permutation_alignment(attributions, oracles, n_permutations=7, n_boot=0, seed=9)
    rows = permute_within(Ragged.from_lists(oracles), 7, seed=9)
    starts = np.cumsum([0] + [a.shape[0] for a in attributions])
    for i, a in enumerate(attributions):
        assert out.c[i] == pytest.approx(math.atanh(pearsonr(a, oracles[i])[0]))
        null = [math.atanh(pearsonr(a, row[starts[i] : starts[i + 1]])[0]) for row in rows]
        assert out.c_null[i] == pytest.approx(np.mean(null))


def test_constant_oracles_are_skipped_and_counted():
    out = permutation_alignment([[0.1, 0.5, 0.2], [0.3, 0.1, 0.9]], [[1, 1, 1], [0, 1, 0]], n_boot=0)
    assert math.isnan(out.c[0]) and math.isnan(out.c_null[0])
    assert out.mean_c.n == 1 and out.mean_c.extra["skipped"] == 1


def test_interval_agrees_with_an_independent_resampling():
    rng = np.random.default_rng(5)
    attributions = _random_texts(rng, 80)
    oracles = [0.6 * a + 0.4 * rng.random(a.shape[0]) for a in attributions]
    out = permutation_alignment(attributions, oracles, n_permutations=10, n_boot=2000, seed=0)
    c = out.c
    own = np.random.default_rng(12345)  # not the package's resamples
    means = [c[own.integers(0, c.shape[0], size=c.shape[0])].mean() for _ in range(4000)]
    low, high = np.percentile(means, [2.5, 97.5])
    width = high - low
    assert out.mean_c.value == pytest.approx(c.mean())
    assert out.mean_c.ci_low == pytest.approx(low, abs=0.1 * width)
    assert out.mean_c.ci_high == pytest.approx(high, abs=0.1 * width)


def test_shared_marks_use_the_share_of_annotators_and_say_which_null():
    marks = [np.array([[1, 0, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 0, 0, 0]]), np.array([[0, 1, 1, 0]])]
    share = [[1, 1 / 3, 1 / 3, 0, 0], [0, 1, 1, 0]]
    got = shared_marks_alignment(marks, share, n_boot=0)
    assert got["mean_c"]["value"] > 5 and got["examples"] == 2 and got["null"] == NULL_DESCRIPTION
    assert "not Prasad et al. 2021's C_R" in got["null"]
    with pytest.raises(ValueError, match="example 1: attributions need one value per word"):
        shared_marks_alignment(marks, [share[0], [0.1, 0.2]])


def test_the_null_does_not_depend_on_how_many_permutations_are_correlated_at_once(monkeypatch):
    from explain_engine.metrics import permutation_alignment as module

    rng = np.random.default_rng(8)
    attributions = _random_texts(rng, 30)
    oracles = [rng.random(a.shape[0]) for a in attributions]
    whole = permutation_alignment(attributions, oracles, n_permutations=9, n_boot=0).c_null
    monkeypatch.setattr(module, "_CHUNK_VALUES", 1)  # one permutation at a time
    assert np.array_equal(
        permutation_alignment(attributions, oracles, n_permutations=9, n_boot=0).c_null, whole
    )
