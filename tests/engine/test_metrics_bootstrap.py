"""Bootstrap estimates, ragged arrays and the metrics registry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from explain_engine.jsonsafe import json_safe
from explain_engine.metrics import METRICS
from explain_engine.metrics.bootstrap import (
    Estimate,
    bootstrap,
    mean_estimate,
    percentile_interval,
    resample_weights,
    weighted_mean,
)
from explain_engine.metrics.ragged import Ragged


def test_resample_weights_are_draw_counts():
    w = resample_weights(50, 200, np.random.default_rng(0))
    assert w.shape == (200, 50) and (w.sum(axis=1) == 50).all() and (w >= 0).all()
    assert abs(w.mean() - 1.0) < 1e-12


def test_mean_estimate_interval_matches_a_resampling_loop():
    rng = np.random.default_rng(1)
    values = rng.normal(3.0, 1.0, 400)
    est = mean_estimate(values, n_boot=2000, seed=5)
    assert est.value == pytest.approx(values.mean()) and est.n == 400
    loop = [values[rng.integers(0, 400, 400)].mean() for _ in range(2000)]
    lo, hi = percentile_interval(np.array(loop))
    assert est.ci_low == pytest.approx(lo, abs=0.03) and est.ci_high == pytest.approx(hi, abs=0.03)
    se = values.std(ddof=1) / 20
    assert est.ci_high - est.ci_low == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_nan_values_are_skipped_and_counted():
    est = mean_estimate(np.array([1.0, np.nan, 3.0]), n_boot=10)
    assert est.value == 2.0 and est.n == 2 and est.extra["skipped"] == 1


def test_chunked_bootstrap_equals_unchunked(monkeypatch):
    values = np.arange(30, dtype=float)
    a = bootstrap(weighted_mean(values), 30, n_boot=100, seed=2)
    import explain_engine.metrics.bootstrap as b

    monkeypatch.setattr(b, "_CHUNK_CELLS", 30 * 7)  # 7 resamples per chunk
    c = bootstrap(weighted_mean(values), 30, n_boot=100, seed=2)
    assert a.value == c.value and a.n == c.n
    assert (c.ci_low, c.ci_high) == pytest.approx((a.ci_low, a.ci_high))  # same random stream
    assert c.ci_low < c.value < c.ci_high


def test_estimate_round_trip_and_text():
    e = Estimate(0.5, 10, 0.4, 0.6, extra={"skipped": 1})
    assert Estimate.from_dict(e.to_dict()) == e
    assert str(e) == "0.500 [0.400, 0.600] (n=10)"
    assert str(Estimate(math.nan, 0)) == "n/a (n=0)"
    assert json_safe({"a": [np.float64(math.nan), np.int64(3)]}) == {"a": [None, 3]}


def test_json_safe_covers_reports_and_stored_rows():
    value = {1: (np.float32(0.5), np.inf, -np.inf), "v": np.array([[1, 2]]), "b": np.bool_(True), "s": "x"}
    assert json_safe(value) == {"1": [0.5, None, None], "v": [[1, 2]], "b": True, "s": "x"}
    assert json_safe(np.array([math.nan, 1.0])) == [None, 1.0]


def test_ragged_checks_shapes():
    with pytest.raises(ValueError, match="lengths sum"):
        Ragged(np.zeros(3), np.array([1, 1]))
    r = Ragged.from_lists([[1, 0], [], [1, 1, 1]])
    assert r.sums().tolist() == [1, 0, 3] and r.positions.tolist() == [0, 1, 0, 1, 2]
    assert r.take([]).to_lists() == [] and len(Ragged.from_lists([])) == 0


def test_metrics_offered_by_name_share_one_call_shape():
    human = Ragged.from_lists([[1, 0, 0, 1], [0, 1, 0], [1, 1, 0, 0, 0]])
    machine = Ragged.from_lists([[0.9, 0.1, 0.3, 0.8], [0.2, 0.7, 0.1], [0.5, 0.6, 0.1, 0.2, 0.0]])
    inputs = {
        "maps": (human, machine),
        "values": ([1.0, 2.0, 3.0, 4.0, 5.0], [1.5, 1.9, 3.2, 3.9, 5.5]),
        "labels": (["a", "b", "a", "b", "a"], ["a", "b", "b", "b", "a"]),
    }
    assert {"behavioral_similarity", "token_f1", "iou", "auprc", "pearson_r", "cohen_kappa"} <= set(METRICS)
    for name, metric in METRICS.items():
        h, m = inputs[METRICS.meta(name)["compares"]]
        est = metric(h, m, n_boot=50, seed=1)
        assert isinstance(est, Estimate) and est.n > 0 and math.isfinite(est.value), name
        assert est == metric(h, m, n_boot=50, seed=1)
    assert METRICS["auprc"](human, machine, n_boot=0).value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown metric 'bleu'; known: .*auprc"):
        METRICS["bleu"]
