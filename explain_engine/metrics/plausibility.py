"""Plausibility of a machine map against a human map: token precision / recall / F1, IoU and AUPRC.

These are the agreement-with-human-rationale scores researchers report beside Sen et al. 2020's metrics
(ERASER, DeYoung et al. 2020): F1 and IoU compare a binary selection (a continuous map selects its
top-k words, k = the number of human-selected words, as in Sen et al. 2020 §4.2), AUPRC ranks words by the
continuous scores. All are computed per text and averaged (macro); texts where a score is undefined
are skipped and counted. Everything is vectorised over texts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, bootstrap, mean_estimate
from explain_engine.metrics.ragged import Ragged, as_ragged, top_k_mask


def _binary(maps: Ragged | Sequence[Sequence[float]]) -> Ragged:
    r = as_ragged(maps)
    return r.with_values(r.values > 0)


def token_prf(
    human: Ragged | Sequence[Sequence[float]], predicted: Ragged | Sequence[Sequence[float]]
) -> dict[str, np.ndarray]:
    """Per text precision, recall and F1 of a binary ``predicted`` selection against ``human``.

    Precision is NaN when nothing was predicted, recall when the human selected nothing, F1 when both
    are empty (F1 = 2·tp / (|pred| + |human|)).
    """
    h, p = _binary(human), _binary(predicted)
    h.same_shape(p, "human and predicted maps")
    tp = h.sums(h.values & p.values)
    n_h, n_p = h.sums(), h.sums(p.values)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(n_p > 0, tp / n_p, np.nan)
        recall = np.where(n_h > 0, tp / n_h, np.nan)
        f1 = np.where(n_h + n_p > 0, 2.0 * tp / (n_h + n_p), np.nan)
    return {"precision": precision, "recall": recall, "f1": f1}


def iou_per_text(
    human: Ragged | Sequence[Sequence[float]], predicted: Ragged | Sequence[Sequence[float]]
) -> np.ndarray:
    """Per text |human ∩ predicted| / |human ∪ predicted| (NaN when both are empty)."""
    h, p = _binary(human), _binary(predicted)
    h.same_shape(p, "human and predicted maps")
    inter = h.sums(h.values & p.values)
    union = h.sums(h.values | p.values)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, np.nan)


def average_precision_per_text(
    human: Ragged | Sequence[Sequence[float]], scores: Ragged | Sequence[Sequence[float]]
) -> np.ndarray:
    """Per text area under the precision–recall curve as average precision, AP = Σ_t ΔR_t · P_t over
    the distinct score thresholds t (tied scores enter together, as in scikit-learn's
    ``average_precision_score``); NaN for a text with no human-selected word."""
    h, s = _binary(human), as_ragged(scores)
    h.same_shape(s, "human map and scores")
    seg = h.segments
    order = np.lexsort((-s.values, seg))  # by text, then by falling score
    sv, gv, yv = s.values[order], seg[order], h.values[order].astype(np.float64)
    n = order.shape[0]
    first = np.ones(n, dtype=bool)  # first element of each (text, score) tie group
    first[1:] = (gv[1:] != gv[:-1]) | (sv[1:] != sv[:-1])
    last = np.append(first[1:], True)
    group = np.cumsum(first) - 1
    positives_in_group = np.bincount(group, weights=yv)
    text_start = h.starts[gv]
    cum = np.cumsum(yv)
    tp = cum - (cum - yv)[text_start]  # true positives ranked at or above this one, within the text
    ranked = np.arange(n) - text_start + 1.0
    contrib = np.where(last, positives_in_group[group] * tp / ranked, 0.0)
    n_pos = h.sums()
    with np.errstate(divide="ignore", invalid="ignore"):
        ap = np.bincount(gv, weights=contrib, minlength=len(h)) / n_pos
    ap[n_pos == 0] = np.nan
    return ap


def plausibility(
    human: Ragged | Sequence[Sequence[float]],
    machine: Ragged | Sequence[Sequence[float]],
    select: str = "top_k",
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> dict[str, Estimate]:
    """Macro token F1, IoU and AUPRC of a machine map against human maps.

    ``select``: ``"top_k"`` (the machine's k highest words, k = the human count) or ``"binary"``
    (the machine map is already 0/1) for F1 and IoU; AUPRC always uses the raw machine scores.
    """
    h = as_ragged(human)
    m = as_ragged(machine)
    h.same_shape(m, "human and machine maps")
    if select == "top_k":
        pred = top_k_mask(m, h.sums().astype(np.int64))
    elif select == "binary":
        pred = m.with_values(m.values > 0)
    else:
        raise ValueError(f"unknown selection {select!r}; use 'top_k' or 'binary'")
    prf = token_prf(h, pred)
    return {
        "token_f1": mean_estimate(prf["f1"], n_boot, level, seed),
        "iou": mean_estimate(iou_per_text(h, pred), n_boot, level, seed),
        "auprc": mean_estimate(average_precision_per_text(h, m), n_boot, level, seed),
    }


def map_overlap(a: Sequence[int], b: Sequence[int], measure: str = "f1") -> float:
    """Overlap of two 0/1 maps: F1 (Dice, ``2|A∩B| / (|A|+|B|)``) or Jaccard (``|A∩B| / |A∪B|``), the
    token F1 and IoU above for one pair. Two empty maps overlap fully (1.0): both say no word shows the
    label."""
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    both = int(np.count_nonzero(x & y))
    if measure == "f1":
        total = int(np.count_nonzero(x)) + int(np.count_nonzero(y))
        return 1.0 if total == 0 else 2.0 * both / total
    if measure == "jaccard":
        union = int(np.count_nonzero(x | y))
        return 1.0 if union == 0 else both / union
    raise ValueError(f"unknown overlap measure {measure!r}; use 'f1' or 'jaccard'")


# ------------------------------------------------------------------ ERASER's definitions (DeYoung et al. 2020 §4)


def _runs(values: np.ndarray) -> list[tuple[int, int]]:
    """The maximal runs of True in a 1-D boolean array as ``[start, end)`` spans."""
    padded = np.concatenate(([False], values.astype(bool), [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def span_matches(
    human: Ragged | Sequence[Sequence[float]],
    predicted: Ragged | Sequence[Sequence[float]],
    threshold: float = 0.5,
) -> dict[str, np.ndarray]:
    """Per text the predicted spans (maximal runs of selected words) whose best intersection-over-union
    with a human span reaches ``threshold`` (``matched``), and the numbers of ``human`` and ``predicted``
    spans: the counts of ERASER's partial-match ("IOU F1") score (DeYoung et al. 2020 §4.1)."""
    h, p = _binary(human), _binary(predicted)
    h.same_shape(p, "human and predicted maps")
    n = len(h)
    matched, n_h, n_p = np.zeros(n), np.zeros(n), np.zeros(n)
    for i, (a, b) in enumerate(zip(h.starts, h.starts + h.lengths, strict=True)):
        truth, pred = _runs(h.values[a:b]), _runs(p.values[a:b])
        n_h[i], n_p[i] = len(truth), len(pred)
        for ps, pe in pred:
            best = max(
                (
                    (min(pe, te) - max(ps, ts)) / (max(pe, te) - min(ps, ts))
                    for ts, te in truth
                    if ps < te and ts < pe
                ),
                default=0.0,
            )
            matched[i] += best >= threshold
    return {"matched": matched, "human": n_h, "predicted": n_p}


def iou_f1_statistic(counts: dict[str, np.ndarray]):
    """ERASER's macro IOU F1 as a function of item weights: the F1 of the mean per-text precision
    (matched / predicted spans, over texts with a prediction) and the mean per-text recall (matched /
    human spans, over texts with a human span); 0 when both means are 0."""
    has_p, has_h = counts["predicted"] > 0, counts["human"] > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(has_p, counts["matched"] / counts["predicted"], 0.0)
        rec = np.where(has_h, counts["matched"] / counts["human"], 0.0)

    def stat(w: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.nan_to_num((w @ prec) / (w @ has_p.astype(np.float64)))
            r = np.nan_to_num((w @ rec) / (w @ has_h.astype(np.float64)))
            return np.where(p + r > 0, 2 * p * r / (p + r), 0.0)

    return stat


def pr_curve_area_per_text(
    human: Ragged | Sequence[Sequence[float]], scores: Ragged | Sequence[Sequence[float]]
) -> np.ndarray:
    """Per text the trapezoidal area under the precision–recall curve, as ERASER's soft-score AUPRC
    computes it (``auc(recall, precision)`` of scikit-learn's ``precision_recall_curve``: one point per
    distinct score, down to the first that reaches full recall, plus the point recall 0, precision 1);
    NaN for a text with no human-selected word."""
    h, s = _binary(human), as_ragged(scores)
    h.same_shape(s, "human map and scores")
    out = np.full(len(h), np.nan)
    for i, (a, b) in enumerate(zip(h.starts, h.starts + h.lengths, strict=True)):
        y, x = h.values[a:b].astype(np.float64), s.values[a:b].astype(np.float64)
        positives = y.sum()
        if positives == 0:
            continue
        order = np.argsort(-x, kind="mergesort")
        y, x = y[order], x[order]
        last = np.r_[np.flatnonzero(np.diff(x)), y.size - 1]  # last index of each distinct score
        tps = np.cumsum(y)[last]
        fps = (last + 1) - tps
        stop = int(np.searchsorted(tps, tps[-1])) + 1
        precision = np.r_[(tps / (tps + fps))[:stop][::-1], 1.0]
        recall = np.r_[(tps / positives)[:stop][::-1], 0.0]
        out[i] = -np.trapezoid(precision, recall)
    return out


def eraser_plausibility(
    human: Ragged | Sequence[Sequence[float]],
    machine: Ragged | Sequence[Sequence[float]],
    select: str = "top_k",
    threshold: float = 0.5,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> dict[str, Estimate]:
    """The plausibility figures as ERASER names them (DeYoung et al. 2020 §4.1), with bootstrap
    intervals over texts:

    * ``token_f1``: the mean per-text token F1 (a text enters when the human or the machine selected a
      word; precision or recall of an empty side is 0);
    * ``iou_f1``: the macro F1 of span matches at intersection-over-union ≥ ``threshold``;
    * ``auprc``: the mean per-text area under the precision–recall curve of the raw machine scores.

    ``select`` turns the machine map into a selection for the first two, as :func:`plausibility` does.
    """
    h, m = as_ragged(human), as_ragged(machine)
    h.same_shape(m, "human and machine maps")
    if select == "top_k":
        pred = top_k_mask(m, h.sums().astype(np.int64))
    elif select == "binary":
        pred = m.with_values(m.values > 0)
    else:
        raise ValueError(f"unknown selection {select!r}; use 'top_k' or 'binary'")
    counts = span_matches(h, pred, threshold)
    return {
        "token_f1": mean_estimate(token_prf(h, pred)["f1"], n_boot, level, seed),
        "iou_f1": bootstrap(
            iou_f1_statistic(counts), len(h), n_boot, level, seed, extra={"threshold": threshold}
        ),
        "auprc": mean_estimate(pr_curve_area_per_text(h, m), n_boot, level, seed),
    }


def ferret_k(human: Ragged | Sequence[Sequence[float]]) -> int:
    """ferret's K for its hard plausibility scores: the average size of the human rationales of the data
    set (Attanasio et al. 2023 §3.2, after DeYoung et al. 2020), over the texts with a marked word,
    rounded, at least 1."""
    sizes = _binary(human).sums()
    marked = sizes[sizes > 0]
    return max(1, round(float(marked.mean()))) if marked.size else 1


def ferret_plausibility(
    human: Ragged | Sequence[Sequence[float]],
    machine: Ragged | Sequence[Sequence[float]],
    k: int | None = None,
    only_positive: bool = False,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> dict[str, Estimate]:
    """ferret's plausibility set (Attanasio et al. 2023 §3.2), with bootstrap intervals over texts.

    The machine map's hard rationale is its ``k`` highest words for every text (``k`` one number for the
    data set, :func:`ferret_k` by default; with ``only_positive`` only words scored above 0 among them),
    unlike :func:`plausibility`'s k per text:

    * ``token_f1``: the mean per-text F1 of that rationale against the human words (texts where both
      sides are empty left out);
    * ``token_iou``: the mean per-text intersection over union of the two word sets;
    * ``auprc``: the mean per-text area under the precision–recall curve of the raw scores, the same
      trapezoidal area as ERASER's (:func:`pr_curve_area_per_text`).
    """
    h, m = as_ragged(human), as_ragged(machine)
    h.same_shape(m, "human and machine maps")
    k = ferret_k(h) if k is None else k
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    pred = top_k_mask(m, np.full(len(m), k, dtype=np.int64))
    if only_positive:
        pred = pred.with_values(pred.values & (m.values > 0))
    return {
        "token_f1": mean_estimate(token_prf(h, pred)["f1"], n_boot, level, seed, k=k),
        "token_iou": mean_estimate(iou_per_text(h, pred), n_boot, level, seed, k=k),
        "auprc": mean_estimate(pr_curve_area_per_text(h, m), n_boot, level, seed),
    }
