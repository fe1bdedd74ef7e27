"""Token F1, IoU and AUPRC of machine maps against human maps, checked against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, f1_score, jaccard_score, precision_score, recall_score

from explain_engine.metrics.plausibility import (
    average_precision_per_text,
    iou_per_text,
    plausibility,
    token_prf,
)


def _maps(seed: int = 0, n: int = 80):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 30, n)
    human = [rng.integers(0, 2, k) for k in lengths]
    predicted = [rng.integers(0, 2, k) for k in lengths]
    scores = [rng.integers(0, 5, k).astype(float) for k in lengths]  # with ties
    return human, predicted, scores


def test_token_prf_and_iou_match_sklearn():
    human, predicted, _ = _maps()
    prf = token_prf(human, predicted)
    iou = iou_per_text(human, predicted)
    for i, (h, p) in enumerate(zip(human, predicted, strict=True)):
        if p.sum():
            assert prf["precision"][i] == pytest.approx(precision_score(h, p, zero_division=0))
        else:
            assert np.isnan(prf["precision"][i])
        if h.sum():
            assert prf["recall"][i] == pytest.approx(recall_score(h, p))
        if h.sum() + p.sum():
            assert prf["f1"][i] == pytest.approx(f1_score(h, p))
            assert iou[i] == pytest.approx(jaccard_score(h, p))
        else:
            assert np.isnan(prf["f1"][i]) and np.isnan(iou[i])


def test_average_precision_matches_sklearn_with_ties():
    human, _, scores = _maps(1)
    ap = average_precision_per_text(human, scores)
    for h, s, a in zip(human, scores, ap, strict=True):
        if h.sum():
            assert a == pytest.approx(average_precision_score(h, s), abs=1e-12)
        else:
            assert np.isnan(a)


def test_plausibility_summary_uses_top_k():
    human = [[1, 1, 0, 0], [0, 1, 0]]
    machine = [[0.9, 0.1, 0.8, 0.0], [0.2, 0.7, 0.1]]
    out = plausibility(human, machine, n_boot=50)
    # top-2 of text 1 = words 0 and 2 (F1 0.5, IoU 1/3); top-1 of text 2 = word 1 (F1 1, IoU 1)
    assert out["token_f1"].value == pytest.approx(0.75)
    assert out["iou"].value == pytest.approx((1 / 3 + 1) / 2)
    assert out["auprc"].value == pytest.approx((average_precision_score([1, 1, 0, 0], machine[0]) + 1) / 2)
    binary = plausibility(human, [[1, 1, 0, 0], [1, 1, 1]], select="binary", n_boot=0)
    assert binary["token_f1"].value == pytest.approx((1 + 0.5) / 2)
    with pytest.raises(ValueError, match="unknown selection"):
        plausibility(human, machine, select="half")
