"""Scoring sentence ratings and token markings: pure functions over numpy arrays (no Django).

* :func:`crowd_labels` — per sentence the majority answer and the crowd confidence, the trust-weighted
  share of the winning answer (Pappas & Popescu-Belis 2016, §3).
* :func:`rating_matrix` and :func:`pairwise_agreement` — Pearson r and Cohen κ weighted by the absolute
  difference of normalised values between each pair of annotators (Pappas & Popescu-Belis 2016, §2 and Table 1).
* :func:`sentence_scores`, :func:`attention_levels` and :func:`confidence_curve` — a model's sentence
  attention against the crowd labels on subsets of rising crowd confidence (Pappas & Popescu-Belis 2016, §5, Figure 4).
* :func:`marking_alignment` — the NLI importance-alignment paper's importance alignment of model attributions with the expert
  oracle built from token markings.

The majority and confidence are counted here with ``np.add.at`` rather than with crowd-kit: crowd-kit's
``MajorityVote`` breaks ties at random and takes seconds to import, while a results page needs ties
broken the same way every time (by the trust behind each answer, then the lower level).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from explain_engine.metrics.agreement import cohen_kappa, pearson_r
from explain_engine.metrics.alignment import (
    expert_oracle,
    hard_oracle,
    importance_alignment,
    random_derangement,
)

LEVELS = (1, 2, 3, 4, 5)
THRESHOLDS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
N_BOOT = 500


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
    """Majority answer and trust-weighted confidence per item (Pappas & Popescu-Belis 2016, §3).

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
    tied = counts == counts.max(axis=1, keepdims=True) if unique.size else counts.astype(bool)
    winner = np.argmax(np.where(tied, trust, -np.inf), axis=1)
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


def pairwise_agreement(
    matrix: np.ndarray,
    names: Sequence[str],
    min_shared: int = 3,
    max_pairs: int = 30,
    levels: Sequence[int] = LEVELS,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> list[dict]:
    """Paper 001, Table 1: Pearson r and weighted Cohen κ (``weights="absolute"``: absolute difference
    of normalised values) for each pair of annotators over the items both rated.

    Only pairs with at least ``min_shared`` common items count, and of those the ``max_pairs`` with
    the most common items (crowd studies have many annotators who rarely meet). Rows are
    ``{"a", "b", "n", "r", "r_low", "r_high", "kappa", "kappa_low", "kappa_high"}``.
    """
    rated = ~np.isnan(matrix)
    shared = rated.T.astype(np.int64) @ rated.astype(np.int64)
    pairs = [(int(shared[i, j]), i, j) for i, j in combinations(range(matrix.shape[1]), 2)]
    pairs = sorted((p for p in pairs if p[0] >= min_shared), key=lambda p: (-p[0], p[1], p[2]))[:max_pairs]
    rows = []
    for n, i, j in pairs:
        both = rated[:, i] & rated[:, j]
        a, b = matrix[both, i], matrix[both, j]
        r = pearson_r(a, b, n_boot=n_boot, seed=seed)
        kappa = cohen_kappa(
            a.astype(int).tolist(),
            b.astype(int).tolist(),
            list(levels),
            weights="absolute",
            n_boot=n_boot,
            seed=seed,
        )
        rows.append(
            {
                "a": names[i],
                "b": names[j],
                "n": n,
                "r": _num(r.value),
                "r_low": _num(r.ci_low),
                "r_high": _num(r.ci_high),
                "kappa": _num(kappa.value),
                "kappa_low": _num(kappa.ci_low),
                "kappa_high": _num(kappa.ci_high),
            }
        )
    return rows


def mean_of(rows: list[dict], key: str) -> float | None:
    """Mean of ``key`` over the rows where it is a number (Pappas & Popescu-Belis 2016, reports the average over pairs)."""
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


def attention_levels(scores: Sequence[float], levels: int = len(LEVELS)) -> np.ndarray:
    """A document's sentence scores as answer levels 1..``levels``.

    Paper 001 compares its system's sentence weights with the crowd's five levels without saying how
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
    """Paper 001, Figure 4: on the sentences whose crowd confidence is at least each threshold, the share
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


def marking_alignment(
    words: Sequence[Sequence[str]],
    explanations: Sequence[str],
    markings: Sequence[Sequence[Sequence[int]]],
    attributions: Sequence[Sequence[float]],
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> dict:
    """Paper 003, §3.3 over examples that have token markings and model attributions.

    For each example ``i``: the expert oracle is the share of annotators who marked each word (eq. 4);
    the hard oracle is the overlap of the words with its explanation (eq. 2). The random baseline C_R
    (eq. 6) pairs the input with the explanation of a random other example (a derangement, ``seed``);
    expert markings exist only for an input's own explanation, so C_R uses the hard oracle of that
    random explanation for both oracles. ΔA = tanh(mean(C − C_R)) with a paired t-test (eq. 7).

    Returns ``{"expert": {...}, "hard": {...}, "examples": [{"c_expert", "c_hard", "c_random"}]}`` with
    each oracle's :meth:`AlignmentResult.to_dict`.
    """
    n = len(words)
    if not (n == len(explanations) == len(markings) == len(attributions)):
        raise ValueError("words, explanations, markings and attributions need one entry per example")
    for i in range(n):
        if len(attributions[i]) != len(words[i]) or np.asarray(markings[i]).shape[-1] != len(words[i]):
            raise ValueError(f"example {i}: attributions and markings need one value per word")
    pairing = random_derangement(n, seed=seed)
    expert = [expert_oracle(m) for m in markings]
    hard = [hard_oracle(words[i], explanations[i]) for i in range(n)]
    random_oracle = [hard_oracle(words[i], explanations[pairing[i]]) for i in range(n)]
    attr = [np.asarray(a, dtype=np.float64) for a in attributions]
    by_expert = importance_alignment(attr, expert, random_oracle, n_boot=n_boot, seed=seed)
    by_hard = importance_alignment(attr, hard, random_oracle, n_boot=n_boot, seed=seed)
    return {
        "expert": by_expert.to_dict(),
        "hard": by_hard.to_dict(),
        "pairing": pairing.tolist(),
        "examples": [
            {"c_expert": _num(ce), "c_hard": _num(ch), "c_random": _num(cr)}
            for ce, ch, cr in zip(by_expert.c, by_hard.c, by_expert.c_random, strict=True)
        ],
    }


def _num(value) -> float | None:
    """A finite float, or ``None`` (NaN and infinities are not JSON)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
