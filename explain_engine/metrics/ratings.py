"""Sentence ratings: crowd labels, agreement between annotators and a model against the crowd
(Pappas & Popescu-Belis 2016, HATDOC).

* :func:`crowd_labels` — per sentence the majority answer and the crowd confidence, the trust-weighted
  share of the winning answer (§3);
* :func:`confidence_summary` — how confident the crowd is over a set of sentences (§3, Figure 3);
* :func:`rating_matrix` and :func:`pairwise_agreement` — Pearson r and a κ between each pair of
  annotators (§2, §3 and Table 1), by name (:data:`KAPPA_KINDS`): Cohen's chance-corrected κ weighted by
  the absolute difference of normalised values, or the paper's reported figure as we read it,
  :func:`distance_agreement` (the same weighted agreement without the chance correction);
* :func:`sentence_scores`, :func:`attention_levels` and :func:`confidence_curve` — a model's sentence
  attention against the crowd labels on subsets of rising crowd confidence (§5, Figure 4);
* :func:`replacement_std` — the reliability analysis of §5 (Figure 5): the change in the average
  standard deviation of the sentence labels when one judge per sentence is replaced at random, by the
  sentence mean (the least reliable judge) or by the model;
* :func:`marking_agreement` — Fleiss κ over words marked / not marked (token marking).

The majority and confidence are counted with ``np.add.at`` rather than with crowd-kit: crowd-kit's
``MajorityVote`` breaks ties at random, while a results page needs ties broken the same way every time
(:func:`explain_engine.metrics.aggregation.winning_category`: by the trust behind each answer, then
the lower level — the rule of the study-wide aggregation too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from explain_engine.metrics.aggregation import winning_category
from explain_engine.metrics.agreement import cohen_kappa, fleiss_kappa_from_counts, pearson_r
from explain_engine.metrics.bootstrap import LEVEL, Estimate, bootstrap

LEVELS = (1, 2, 3, 4, 5)
THRESHOLDS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
N_BOOT = 500  # fewer resamples than elsewhere: a results page computes one interval per annotator pair
#: The κ a pairwise table may report, by name (see :func:`pairwise_agreement`).
KAPPA_KINDS = ("cohen_absolute", "distance_agreement")
DEFAULT_KAPPA = "cohen_absolute"


@dataclass(frozen=True)
class CrowdLabels:
    """Per item (in the order of ``items``): answers, majority level, confidence, mean level."""

    items: np.ndarray
    responses: np.ndarray
    majority: np.ndarray
    confidence: np.ndarray
    mean: np.ndarray
    counts: np.ndarray


def crowd_labels(
    items: Sequence[int], ratings: Sequence[int], weights: Sequence[float], levels: Sequence[int] = LEVELS
) -> CrowdLabels:
    """Majority answer and trust-weighted confidence per item (Pappas & Popescu-Belis 2016 §3).

    ``items``, ``ratings``, ``weights``: one entry per answer (the item, the level, the trust of the
    worker who gave it). The majority is the most frequent level; a tie goes to the level with more
    trust behind it, then to the lower level. Confidence = trust of the workers who gave the majority
    level / trust of all who answered (NaN when that is 0).
    """
    items_a = np.asarray(items, dtype=np.int64)
    ratings_a = np.asarray(ratings)
    weights_a = np.asarray(weights, dtype=np.float64)
    if not (items_a.shape == ratings_a.shape == weights_a.shape):
        raise ValueError("items, ratings and weights need one entry per answer")
    levels_a = np.asarray(levels)
    codes = np.searchsorted(levels_a, ratings_a)
    if ratings_a.size and (codes.max() >= levels_a.size or not np.array_equal(levels_a[codes], ratings_a)):
        raise ValueError(f"ratings must be levels {list(levels)}")
    unique, inverse = np.unique(items_a, return_inverse=True)
    counts = np.zeros((unique.size, levels_a.size))
    trust = np.zeros_like(counts)
    np.add.at(counts, (inverse, codes), 1.0)
    np.add.at(trust, (inverse, codes), weights_a)
    winner = winning_category(counts, trust)
    rows = np.arange(unique.size)
    total = trust.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        confidence = np.where(total > 0, trust[rows, winner] / total, np.nan)
        mean = (counts * levels_a).sum(axis=1) / counts.sum(axis=1)
    return CrowdLabels(unique, counts.sum(axis=1).astype(int), levels_a[winner], confidence, mean, counts)


def rating_matrix(
    items: Sequence[int], workers: Sequence[int], ratings: Sequence[float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items × workers ratings (NaN where a worker did not rate an item), with the item and worker ids."""
    items_a, workers_a = np.asarray(items), np.asarray(workers)
    item_ids, rows = np.unique(items_a, return_inverse=True)
    worker_ids, cols = np.unique(workers_a, return_inverse=True)
    matrix = np.full((item_ids.size, worker_ids.size), np.nan)
    matrix[rows, cols] = np.asarray(ratings, dtype=np.float64)
    return matrix, item_ids, worker_ids


def distance_agreement(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    levels: Sequence[int] = LEVELS,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> Estimate:
    """Agreement as 1 − the mean absolute difference of the two raters' normalised values,
    1 − mean |a − b| / (max level − min level): the observed part of a linear-weighted κ, with no
    correction for chance.

    Pappas & Popescu-Belis (2016 §2) report "Cohen's kappa … [with] a distance measure, namely the
    absolute differences of normalized values between annotators", and their Table 1 has κ above
    Pearson r in all twelve cells (0.60 against 0.44 where r is lowest). A chance-corrected weighted κ
    cannot do that on such data: with quadratic weights it is at most r (it is Lin's concordance
    correlation), and with linear weights it falls further below on 5-level ratings, while this
    uncorrected agreement stays high wherever most answers differ by a level or less. So this is our
    reading of the figure the paper reports; ``"cohen_absolute"`` in :func:`pairwise_agreement` is the
    chance-corrected κ. Pairs with a missing value are left out (``extra["dropped"]``).
    """
    av = np.array([math.nan if v is None else v for v in a], dtype=np.float64)
    bv = np.array([math.nan if v is None else v for v in b], dtype=np.float64)
    if av.shape != bv.shape:
        raise ValueError(f"a and b differ in length ({av.size} vs {bv.size})")
    lv = np.asarray(levels, dtype=np.float64)
    span = float(lv.max() - lv.min()) if lv.size else 0.0
    if span <= 0:
        raise ValueError("levels need at least two different values")
    ok = np.isfinite(av) & np.isfinite(bv)
    outside = ok & (~np.isin(av, lv) | ~np.isin(bv, lv))
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise ValueError(f"rating pair {i} ({av[i]:g}, {bv[i]:g}) is not on the levels {lv.tolist()}")
    close = 1.0 - np.abs(av[ok] - bv[ok]) / span

    def stat(w: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (w @ close) / w.sum(axis=1)

    extra = {"dropped": int((~ok).sum()), "kind": "distance_agreement"}
    value = float(close.mean()) if close.size else math.nan
    return bootstrap(stat, int(close.size), n_boot, level, seed, value=value, extra=extra)


def pair_kappa(
    a: np.ndarray,
    b: np.ndarray,
    kind: str = DEFAULT_KAPPA,
    levels: Sequence[int] = LEVELS,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> Estimate:
    """The κ named ``kind`` (:data:`KAPPA_KINDS`) between two raters' levels."""
    if kind == "distance_agreement":
        return distance_agreement(a, b, levels, n_boot=n_boot, seed=seed)
    if kind == "cohen_absolute":
        return cohen_kappa(
            np.asarray(a).astype(int).tolist(),
            np.asarray(b).astype(int).tolist(),
            list(levels),
            weights="absolute",
            n_boot=n_boot,
            seed=seed,
        )
    raise ValueError(f"unknown kappa {kind!r}; use one of {list(KAPPA_KINDS)}")


def pairwise_agreement(
    matrix: np.ndarray,
    names: Sequence[str],
    min_shared: int = 3,
    max_pairs: int = 30,
    levels: Sequence[int] = LEVELS,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
    kappa: str = DEFAULT_KAPPA,
) -> list[dict]:
    """Pappas & Popescu-Belis 2016 §3, Table 1: Pearson r and the κ named ``kappa`` for each pair of
    annotators over the items both rated: ``"distance_agreement"`` (the paper's figure as we read it,
    :func:`distance_agreement`) or ``"cohen_absolute"`` (Cohen's chance-corrected κ weighted by the
    absolute difference of normalised values).

    Only pairs with at least ``min_shared`` common items count, and of those the ``max_pairs`` with
    the most common items (crowd studies have many annotators who rarely meet). Rows are
    ``{"a", "b", "n", "r", "r_low", "r_high", "kappa", "kappa_low", "kappa_high"}``.
    """
    if kappa not in KAPPA_KINDS:
        raise ValueError(f"unknown kappa {kappa!r}; use one of {list(KAPPA_KINDS)}")
    rated = ~np.isnan(matrix)
    shared = rated.T.astype(np.int64) @ rated.astype(np.int64)
    pairs = [(int(shared[i, j]), i, j) for i, j in combinations(range(matrix.shape[1]), 2)]
    pairs = sorted((p for p in pairs if p[0] >= min_shared), key=lambda p: (-p[0], p[1], p[2]))[:max_pairs]
    rows = []
    for n, i, j in pairs:
        both = rated[:, i] & rated[:, j]
        a, b = matrix[both, i], matrix[both, j]
        r = pearson_r(a, b, n_boot=n_boot, seed=seed)
        k = pair_kappa(a, b, kappa, levels, n_boot=n_boot, seed=seed)
        rows.append(
            {
                "a": names[i],
                "b": names[j],
                "n": n,
                "r": _num(r.value),
                "r_low": _num(r.ci_low),
                "r_high": _num(r.ci_high),
                "kappa": _num(k.value),
                "kappa_low": _num(k.ci_low),
                "kappa_high": _num(k.ci_high),
            }
        )
    return rows


def mean_of(rows: list[dict], key: str) -> float | None:
    """Mean of ``key`` over the rows where it is a number (Pappas & Popescu-Belis 2016 report the average over pairs)."""
    values = [row[key] for row in rows if row.get(key) is not None]
    return float(np.mean(values)) if values else None


def sentence_scores(word_scores: Sequence[float], sentences: Sequence[Sequence[int]]) -> np.ndarray:
    """Sum of the word scores over each ``[first_word, end_word)`` sentence (e.g. a model's attention)."""
    scores = np.asarray(word_scores, dtype=np.float64)
    bounds = np.asarray(sentences, dtype=np.int64).reshape(-1, 2)
    if bounds.size and (bounds.min() < 0 or bounds.max() > scores.size):
        raise ValueError(f"sentences run past the {scores.size} word scores")
    cumulative = np.concatenate([[0.0], np.cumsum(scores)])
    return cumulative[bounds[:, 1]] - cumulative[bounds[:, 0]]


def attention_levels(scores: Sequence[float] | np.ndarray, levels: int = len(LEVELS)) -> np.ndarray:
    """A document's sentence scores as answer levels 1..``levels``.

    Pappas & Popescu-Belis (2016 §5) compare their system's sentence weights with the crowd's five levels without saying how
    weights become levels; here a sentence's score is divided by the document's largest one and the
    range [0, 1] is cut into ``levels`` equal bins (the top sentence gets the top level). Negative or
    zero scores get level 1.
    """
    s = np.asarray(scores, dtype=np.float64)
    top = s.max() if s.size else 0.0
    relative = np.clip(s / top, 0.0, 1.0) if top > 0 else np.zeros_like(s)
    return np.minimum(np.floor(relative * levels).astype(int) + 1, levels)


def confidence_curve(
    crowd_level: Sequence[int],
    confidence: Sequence[float],
    machine_level: Sequence[int],
    machine_score: Sequence[float],
    thresholds: Sequence[float] = THRESHOLDS,
    levels: int = len(LEVELS),
) -> list[dict]:
    """Pappas & Popescu-Belis 2016 §5, Figure 4: on the sentences whose crowd confidence is at least each threshold, the share
    whose machine level equals the crowd label (accuracy), the share within one level (§5's relaxed
    match), and Pearson r between the machine's sentence score and the crowd label."""
    crowd = np.asarray(crowd_level, dtype=np.float64)
    conf = np.asarray(confidence, dtype=np.float64)
    machine = np.asarray(machine_level, dtype=np.float64)
    score = np.asarray(machine_score, dtype=np.float64)
    keep = conf[None, :] >= np.asarray(thresholds, dtype=np.float64)[:, None] - 1e-12  # thresholds × items
    n = keep.sum(axis=1)
    exact = (keep & (machine == crowd)[None, :]).sum(axis=1)
    near = (keep & (np.abs(machine - crowd) <= 1)[None, :]).sum(axis=1)
    rows = []
    for t, k, n_t, e, w in zip(thresholds, keep, n, exact, near, strict=True):
        r = None
        x, y = score[k], crowd[k]
        if n_t >= 2 and x.std() > 0 and y.std() > 0:
            r = float(np.corrcoef(x, y)[0, 1])
        rows.append(
            {
                "threshold": float(t),
                "n": int(n_t),
                "accuracy": float(e / n_t) if n_t else None,
                "accuracy_within_1": float(w / n_t) if n_t else None,
                "pearson_r": r,
                "random": 1.0 / levels,
            }
        )
    return rows


def confidence_summary(confidence: Sequence[float | None]) -> dict:
    """Mean crowd confidence and the shares of sentences at or above 0.5 and 0.8 (§3, Figure 3);
    ``None`` and NaN entries (no trust behind the answers) are left out, and ``None`` is returned for
    every figure when nothing is left."""
    conf = np.array([math.nan if c is None else c for c in confidence], dtype=np.float64)
    conf = conf[np.isfinite(conf)]
    if not conf.size:
        return {"n": 0, "mean_confidence": None, "share_confidence_05": None, "share_confidence_08": None}
    return {
        "n": int(conf.size),
        "mean_confidence": float(conf.mean()),
        "share_confidence_05": float((conf >= 0.5).mean()),
        "share_confidence_08": float((conf >= 0.8).mean()),
    }


def replacement_std(
    matrix: np.ndarray,
    machine: Sequence[float],
    levels: Sequence[int] = LEVELS,
    seed: int | None = 0,
) -> dict:
    """The reliability analysis of §5 (Figure 5) on an items × judges ``matrix`` (NaN: not rated).

    Over the sentences rated by at least two judges: the average standard deviation of their labels
    (``std``), and its change (replaced − original) when, per sentence, one label is replaced

    * ``random``: a randomly chosen label by a random level;
    * ``human``: the label farthest from the sentence mean (the least reliable judge) by that mean
      (ties: the first judge);
    * ``model``: a randomly chosen label by the model's level ``machine[i]``.

    A smaller change means the replacement is closer to the crowd. ``seed`` fixes the random choices.
    """
    m = np.asarray(matrix, dtype=np.float64)
    machine_a = np.asarray(machine, dtype=np.float64)
    if m.ndim != 2 or machine_a.shape != (m.shape[0],):
        raise ValueError("matrix must be items × judges and machine hold one level per item")
    rated = np.isfinite(m)
    keep = rated.sum(axis=1) >= 2
    m, rated, machine_a = m[keep], rated[keep], machine_a[keep]
    n = int(m.shape[0])
    if n == 0:
        return {"n": 0, "std": None, "random": None, "human": None, "model": None}
    rng = np.random.default_rng(seed)
    rows = np.arange(n)
    # A random rated judge per sentence: the argmax of random keys over the rated cells.
    pick = np.argmax(np.where(rated, rng.random(m.shape), -1.0), axis=1)
    mean = np.nanmean(m, axis=1)
    far = np.argmax(np.where(rated, np.abs(m - mean[:, None]), -1.0), axis=1)
    base = np.nanstd(m, axis=1)

    def replaced(cols: np.ndarray, values: np.ndarray) -> float:
        out = m.copy()
        out[rows, cols] = values
        return float(np.nanstd(out, axis=1).mean() - base.mean())

    random_levels = np.asarray(levels, dtype=np.float64)[rng.integers(0, len(levels), n)]
    return {
        "n": n,
        "std": float(base.mean()),
        "random": replaced(pick, random_levels),
        "human": replaced(far, mean),
        "model": replaced(pick, machine_a),
    }


def marking_agreement(markings: Sequence[Sequence[Sequence[int]]], n_boot: int = N_BOOT) -> Estimate | None:
    """Fleiss κ over words with the categories marked / not marked, every word of an item marked by at
    least two annotators a unit (``markings``: per item, annotators × words 0/1); None without such an
    item."""
    tables = []
    for marked in markings:
        if len(marked) >= 2:
            m = np.asarray(marked, dtype=np.int64)
            on = m.sum(axis=0)
            tables.append(np.stack([m.shape[0] - on, on], axis=1))
    if not tables:
        return None
    return fleiss_kappa_from_counts(np.concatenate(tables), n_boot=n_boot)


def _num(value) -> float | None:
    """A finite float, or ``None`` (NaN and infinities are not JSON)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


__all__ = [
    "CrowdLabels",
    "DEFAULT_KAPPA",
    "KAPPA_KINDS",
    "LEVELS",
    "THRESHOLDS",
    "attention_levels",
    "confidence_curve",
    "confidence_summary",
    "crowd_labels",
    "distance_agreement",
    "marking_agreement",
    "mean_of",
    "pair_kappa",
    "pairwise_agreement",
    "rating_matrix",
    "replacement_std",
    "sentence_scores",
]


#: The aspect name of the figures over all aspects together.
ALL_ASPECTS = "all"


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def rating_report(
    *,
    sentences: Sequence[dict],
    items: Sequence[int],
    workers: Sequence[int],
    ratings: Sequence[int],
    weights: Sequence[float],
    worker_names: dict,
    aspects: Sequence[str],
    min_judges: int,
    n_boot: int = N_BOOT,
    kappa: str = DEFAULT_KAPPA,
    attention: dict | None = None,
) -> dict:
    """Everything a sentence-rating results page shows (Pappas & Popescu-Belis 2016), as plain data.

    ``sentences``: one dict per rated sentence, in the page's order, with ``item``, ``aspect``,
    ``document`` and ``sentence`` (its index in the document); ``items``, ``workers``, ``ratings``,
    ``weights``: one entry per answer (the worker's trust as weight); ``worker_names``: ``{worker:
    name}``; ``attention``: with a model, ``{document: (word attention, sentence spans)}``.

    Returns ``labels`` (per sentence: ``responses``, ``majority``, ``confidence``, ``mean``, ``counts``,
    ``enough_judges``; §3), ``summary`` (per aspect and :data:`ALL_ASPECTS`: sentences, labelled,
    judgments, the confidence summary and the majority distribution; Figure 3), ``agreement`` (pairwise
    r and κ with their averages per aspect; Table 1) and, with ``attention``, ``machine`` (the Figure 4
    comparison: per compared sentence its ``machine_score`` and ``machine_level``, how many were
    ``skipped`` and the confidence ``curve`` per aspect; §5).
    """
    crowd = crowd_labels(items, ratings, weights)
    labelled = {int(item): k for k, item in enumerate(crowd.items)}
    labels = []
    for sentence in sentences:
        k = labelled.get(sentence["item"])
        row = {
            "item": sentence["item"],
            "responses": 0 if k is None else int(crowd.responses[k]),
            "majority": None if k is None else int(crowd.majority[k]),
            "confidence": None if k is None else _finite(crowd.confidence[k]),
            "mean": None if k is None else _finite(crowd.mean[k]),
            "counts": [0] * len(LEVELS) if k is None else [int(c) for c in crowd.counts[k]],
        }
        row["enough_judges"] = row["responses"] >= min_judges
        labels.append(row)
    aspect_of = {s["item"]: s["aspect"] for s in sentences}
    every = [*aspects, ALL_ASPECTS]
    report = {
        "labels": labels,
        "summary": [_aspect_summary(a, sentences, labels) for a in every],
        "agreement": _rating_agreement(
            items, workers, ratings, aspect_of, worker_names, every, n_boot, kappa
        ),
    }
    if attention is not None:
        report["machine"] = _machine_comparison(sentences, labels, attention, every)
    return report


def _aspect_summary(aspect: str, sentences: Sequence[dict], labels: list[dict]) -> dict:
    chosen = [r for s, r in zip(sentences, labels, strict=True) if aspect in (ALL_ASPECTS, s["aspect"])]
    done = [r for r in chosen if r["responses"]]
    confidence = confidence_summary([r["confidence"] for r in done])
    return {
        "aspect": aspect,
        "sentences": len(chosen),
        "labelled": len(done),
        "judgments": sum(r["responses"] for r in done),
        "enough_judges": sum(1 for r in done if r["enough_judges"]),
        "mean_confidence": confidence["mean_confidence"],
        "share_confidence_05": confidence["share_confidence_05"],
        "share_confidence_08": confidence["share_confidence_08"],
        "distribution": [sum(1 for r in done if r["majority"] == level) for level in LEVELS],
    }


def _rating_agreement(items, workers, ratings, aspect_of, names, aspects, n_boot, kappa) -> dict:
    out: dict = {"pairs": [], "averages": []}
    for aspect in aspects:
        chosen = [
            (i, w, r)
            for i, w, r in zip(items, workers, ratings, strict=True)
            if aspect == ALL_ASPECTS or aspect_of.get(i) == aspect
        ]
        if not chosen:
            out["averages"].append({"aspect": aspect, "pairs": 0, "r": None, "kappa": None})
            continue
        matrix, _, worker_ids = rating_matrix(*zip(*chosen, strict=True))
        rows = pairwise_agreement(matrix, [names[w.item()] for w in worker_ids], n_boot=n_boot, kappa=kappa)
        out["pairs"] += [{"aspect": aspect, **row} for row in rows]
        out["averages"].append(
            {"aspect": aspect, "pairs": len(rows), "r": mean_of(rows, "r"), "kappa": mean_of(rows, "kappa")}
        )
    return out


def _machine_comparison(sentences, labels, attention: dict, aspects: Sequence[str]) -> dict:
    per_doc = {}
    for document, (weights, spans) in attention.items():
        scores = sentence_scores(np.nan_to_num(np.asarray(weights, dtype=float)), spans)
        per_doc[document] = (scores, attention_levels(scores))
    compared, skipped = [], 0
    for sentence, row in zip(sentences, labels, strict=True):
        if row["majority"] is None:
            continue
        found = per_doc.get(sentence["document"])
        if found is None or sentence["sentence"] >= found[0].size:
            skipped += 1
            continue
        compared.append(
            {
                "item": sentence["item"],
                "aspect": sentence["aspect"],
                "majority": row["majority"],
                "confidence": row["confidence"],
                "machine_score": float(found[0][sentence["sentence"]]),
                "machine_level": int(found[1][sentence["sentence"]]),
            }
        )
    curve = []
    for aspect in aspects:
        chosen = [r for r in compared if aspect in (ALL_ASPECTS, r["aspect"])]
        for point in confidence_curve(
            [r["majority"] for r in chosen],
            [r["confidence"] if r["confidence"] is not None else -1.0 for r in chosen],
            [r["machine_level"] for r in chosen],
            [r["machine_score"] for r in chosen],
        ):
            curve.append({"aspect": aspect, **point})
    return {"compared": compared, "skipped": skipped, "curve": curve}
