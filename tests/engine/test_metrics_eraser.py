"""Token F1, IOU F1 and AUPRC checked against ERASER's scorer definitions (DeYoung et al. 2020 §4.1,
``rationale_benchmark/metrics.py``), written here from them on rationales as the scorer holds them:
``(annotation_id, docid, start_token, end_token)`` tuples."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from sklearn.metrics import auc, precision_recall_curve

from explain_engine.metrics.plausibility import (
    average_precision_per_text,
    eraser_plausibility,
    pr_curve_area_per_text,
    span_matches,
)


def _f1(p: float, r: float) -> float:
    return 0.0 if p == 0 or r == 0 else 2 * p * r / (p + r)


def _rationales(maps: list[list[int]]) -> set[tuple[int, str, int, int]]:
    """The scorer's hard rationales: one per maximal run of selected tokens."""
    out = set()
    for k, values in enumerate(maps):
        start = None
        for i, v in enumerate([*values, 0]):
            if v and start is None:
                start = i
            elif not v and start is not None:
                out.add((k, "d", start, i))
                start = None
    return out


def _keyed(rationales) -> dict[int, set]:
    by = defaultdict(set)
    for r in rationales:
        by[r[0]].add(r)
    return by


def reference_token_f1(truth_maps, pred_maps) -> float:
    """``score_hard_rationale_predictions`` on token-level rationales, ``instance_macro`` f1."""
    truth = {(r[0], r[1], t, t + 1) for r in _rationales(truth_maps) for t in range(r[2], r[3])}
    pred = {(r[0], r[1], t, t + 1) for r in _rationales(pred_maps) for t in range(r[2], r[3])}
    t_by, p_by = _keyed(truth), _keyed(pred)
    f1s = []
    for k in set(t_by) | set(p_by):
        prec = len(t_by[k] & p_by[k]) / len(p_by[k]) if p_by[k] else 0
        rec = len(t_by[k] & p_by[k]) / len(t_by[k]) if t_by[k] else 0
        f1s.append(_f1(prec, rec))
    return sum(f1s) / len(f1s)


def reference_iou_f1(truth_maps, pred_maps, threshold: float = 0.5) -> float:
    """``partial_match_score``, macro f1 at one threshold."""
    t_by, p_by = _keyed(_rationales(truth_maps)), _keyed(_rationales(pred_maps))
    num_pred = {k: len(v) for k, v in p_by.items()}
    num_truth = {k: len(v) for k, v in t_by.items()}
    tps = {}
    for k in set(t_by) | set(p_by):
        ious = []
        for p in p_by.get(k, ()):
            best = 0.0
            for t in t_by.get(k, ()):
                a, b = set(range(p[2], p[3])), set(range(t[2], t[3]))
                best = max(best, len(a & b) / len(a | b))
            ious.append(best)
        tps[k] = sum(int(x >= threshold) for x in ious)
    rs = [tps.get(k, 0) / n for k, n in num_truth.items()]
    ps = [tps.get(k, 0) / n for k, n in num_pred.items()]
    return _f1(sum(ps) / len(ps) if ps else 0, sum(rs) / len(rs) if rs else 0)


def reference_auprc(truth_maps, scores) -> float:
    """``_auprc``: per instance ``auc(recall, precision)`` of ``precision_recall_curve``, averaged."""
    return float(
        np.mean([auc(*precision_recall_curve(t, s)[1::-1]) for t, s in zip(truth_maps, scores, strict=True)])
    )


def _case(seed: int, n_texts: int = 40):
    rng = np.random.default_rng(seed)
    human, machine = [], []
    for _ in range(n_texts):
        n = int(rng.integers(3, 40))
        h = (rng.random(n) < 0.25).astype(int)
        h[int(rng.integers(0, n))] = 1
        human.append(h.tolist())
        machine.append(np.round(rng.random(n) + 0.6 * h, 1).tolist())  # ties, and some signal
    return human, machine


@pytest.mark.parametrize("seed", range(5))
def test_figures_equal_erasers_scorer_on_the_same_inputs(seed):
    human, machine = _case(seed)
    got = eraser_plausibility(human, machine, select="binary", n_boot=0)
    binary = [[int(v > 1.0) for v in m] for m in machine]
    got_b = eraser_plausibility(human, [[float(v) for v in b] for b in binary], select="binary", n_boot=0)
    assert got_b["token_f1"].value == pytest.approx(reference_token_f1(human, binary))
    assert got_b["iou_f1"].value == pytest.approx(reference_iou_f1(human, binary))
    assert got["auprc"].value == pytest.approx(reference_auprc(human, machine))


def test_the_figures_are_metrics_by_name():
    from explain_engine.metrics import METRICS

    human, machine = _case(5)
    figures = eraser_plausibility(human, machine, n_boot=0)
    assert METRICS["iou_f1"](human, machine, n_boot=0).value == figures["iou_f1"].value
    assert METRICS["eraser_auprc"](human, machine, n_boot=0).value == figures["auprc"].value
    assert METRICS["token_f1"](human, machine, n_boot=0).value == pytest.approx(figures["token_f1"].value)


def test_top_k_selection_is_scored_as_the_selected_maps():
    human, machine = _case(7)
    top = eraser_plausibility(human, machine, select="top_k", n_boot=0)
    chosen = []
    for h, m in zip(human, machine, strict=True):
        k = sum(h)
        order = sorted(range(len(m)), key=lambda i: (-m[i], i))[:k]
        chosen.append([int(i in order) for i in range(len(m))])
    assert top["token_f1"].value == pytest.approx(reference_token_f1(human, chosen))
    assert top["iou_f1"].value == pytest.approx(reference_iou_f1(human, chosen))


def test_iou_threshold_and_the_edge_cases_the_scorer_defines():
    human = [[1, 1, 1, 1, 0, 0], [0, 0, 0], [1, 0, 1]]
    pred = [[0, 1, 1, 0, 0, 0], [1, 0, 0], [0, 0, 0]]
    counts = span_matches(human, pred)
    # [1, 3) against [0, 4): IoU 0.5 matches at 0.5; a prediction on an unmarked text matches nothing
    assert counts["matched"].tolist() == [1, 0, 0]
    assert counts["human"].tolist() == [1, 0, 2] and counts["predicted"].tolist() == [1, 1, 0]
    got = eraser_plausibility(human, pred, select="binary", n_boot=0)
    assert got["iou_f1"].value == pytest.approx(reference_iou_f1(human, pred))
    assert eraser_plausibility(human, pred, select="binary", threshold=0.6, n_boot=0)["iou_f1"].value == 0.0
    assert got["token_f1"].value == pytest.approx(reference_token_f1(human, pred))


def test_intervals_bracket_the_figures_and_differ_from_average_precision():
    human, machine = _case(3, 120)
    got = eraser_plausibility(human, machine, n_boot=500, seed=1)
    for key in ("token_f1", "iou_f1", "auprc"):
        e = got[key]
        assert e.ci_low <= e.value <= e.ci_high and e.ci_low < e.ci_high and e.n == 120
    # ERASER's AUPRC is the trapezoid under the curve, not scikit-learn's step-wise average precision
    area = pr_curve_area_per_text(human, machine)
    assert area.shape == (120,) and not np.allclose(area, average_precision_per_text(human, machine))
    assert np.isnan(pr_curve_area_per_text([[0, 0]], [[0.1, 0.2]])[0])


# ----------------------------------------------------------------- ferret's plausibility set, from its definitions


def _ferret_reference(human, scores, k, only_positive=False):
    """ferret's hard and soft plausibility scores per Attanasio et al. 2023 §3.2, on index sets: the top-k
    scored tokens (ties to the earlier token), token F1 and IOU of the sets, macro over texts; AUPRC as
    scikit-learn's auc of the precision–recall curve of the scores."""
    f1s, ious, areas = [], [], []
    for h, s in zip(human, scores, strict=True):
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))[:k]
        chosen = {i for i in order if not only_positive or s[i] > 0}
        truth = {i for i, v in enumerate(h) if v}
        if truth or chosen:
            f1s.append(2 * len(truth & chosen) / (len(truth) + len(chosen)))
            ious.append(len(truth & chosen) / len(truth | chosen))
        if truth:
            precision, recall, _ = precision_recall_curve(h, s)
            areas.append(auc(recall, precision))
    return np.mean(f1s), np.mean(ious), np.mean(areas)


@pytest.mark.parametrize("seed", range(4))
def test_ferrets_set_equals_its_definitions_on_the_same_inputs(seed):
    from explain_engine.metrics.plausibility import ferret_k, ferret_plausibility

    human, machine = _case(seed)
    k = ferret_k(human)
    sizes = [sum(h) for h in human if sum(h)]
    assert k == max(1, round(sum(sizes) / len(sizes)))  # one K for the data set: the mean rationale size
    for only_positive in (False, True):
        shifted = [[v - 1.0 for v in m] for m in machine]  # some scores negative, for only_positive
        got = ferret_plausibility(human, shifted, only_positive=only_positive, n_boot=0)
        f1, iou, area = _ferret_reference(human, shifted, k, only_positive)
        assert got["token_f1"].value == pytest.approx(f1)
        assert got["token_iou"].value == pytest.approx(iou)
        assert got["auprc"].value == pytest.approx(area)
    # a K for the data set differs from the per-text K of Sen et al. 2020 §4.2 whenever sizes differ
    per_text = eraser_plausibility(human, machine, n_boot=0)["token_f1"].value
    assert len(set(sizes)) == 1 or ferret_plausibility(human, machine, n_boot=0)["token_f1"].value != per_text


def test_ferrets_set_is_a_metric_by_name_with_an_interval():
    from explain_engine.metrics import METRICS
    from explain_engine.metrics.plausibility import ferret_plausibility

    human, machine = _case(9)
    figures = ferret_plausibility(human, machine, n_boot=200)
    assert METRICS["ferret_token_f1"](human, machine, n_boot=200).value == figures["token_f1"].value
    assert METRICS["ferret_token_iou"](human, machine, n_boot=0).value == figures["token_iou"].value
    assert METRICS["ferret_auprc"](human, machine, n_boot=0).value == figures["auprc"].value
    low, high = figures["token_iou"].ci_low, figures["token_iou"].ci_high
    assert low <= figures["token_iou"].value <= high and low < high
    with pytest.raises(ValueError, match="k must be at least 1"):
        ferret_plausibility(human, machine, k=0)
