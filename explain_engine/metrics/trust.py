"""Worker trust from gold (test) questions: the share passed, with a Wilson score interval.

Pappas & Popescu-Belis (2016 §3) and Lertvittayakumjorn & Toni (2019 §5) keep only the judges who
answered at least 70 % of the hidden gold questions correctly. A worker who has answered fewer than
``min_golds`` golds is *pending*: too little evidence either way, so their answers wait — they count
once the worker qualifies, and never while pending (:func:`answer_weights`, the one weighting rule of
every results path). The interval is Wilson's
(statsmodels' ``proportion_confint(method="wilson")``, which is vectorised), since it stays inside
[0, 1] and behaves at the small counts a worker's gold record has.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from statsmodels.stats.proportion import proportion_confint

PENDING = "pending"
TRUSTED = "trusted"
EXCLUDED = "excluded"
DEFAULT_THRESHOLD = 0.70


@dataclass(frozen=True)
class TrustTable:
    """Per-worker arrays (same order as the inputs)."""

    seen: np.ndarray
    passed: np.ndarray
    trust: np.ndarray
    low: np.ndarray
    high: np.ndarray
    status: np.ndarray


def wilson_interval(passed, seen, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of ``passed / seen``, element-wise; ``[0, 1]`` where ``seen`` is 0."""
    passed = np.asarray(passed, dtype=float)
    seen = np.asarray(seen, dtype=float)
    if np.any(passed < 0) or np.any(passed > seen):
        raise ValueError("passed must lie between 0 and seen")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie strictly between 0 and 1")
    safe = np.where(seen > 0, seen, 1.0)
    low, high = proportion_confint(passed, safe, alpha=1.0 - confidence, method="wilson")
    empty = seen == 0
    return np.where(empty, 0.0, low), np.where(empty, 1.0, high)


def trust_table(
    passed,
    seen,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_golds: int = 4,
    confidence: float = 0.95,
) -> TrustTable:
    """Trust (share of golds passed; NaN before any gold), its Wilson interval, and each worker's status:
    ``pending`` below ``min_golds`` golds, else ``trusted`` when trust >= ``threshold``, else ``excluded``."""
    passed = np.asarray(passed, dtype=int)
    seen = np.asarray(seen, dtype=int)
    if passed.shape != seen.shape:
        raise ValueError("passed and seen must have the same shape")
    low, high = wilson_interval(passed, seen, confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        trust = np.where(seen > 0, passed / np.where(seen > 0, seen, 1), np.nan)
    # A tiny tolerance so that e.g. 7/10 counts as meeting a 0.70 threshold despite float rounding.
    meets = np.nan_to_num(trust, nan=0.0) >= threshold - 1e-12
    status = np.where(seen < max(min_golds, 1), PENDING, np.where(meets, TRUSTED, EXCLUDED))
    return TrustTable(seen=seen, passed=passed, trust=trust, low=low, high=high, status=status)


def answer_weights(status, trust, *, judged: bool = True) -> np.ndarray:
    """The weight of each worker's answers in a crowd label: the one rule every results path uses.

    Pappas & Popescu-Belis (2016 §3) keep only the answers of judges with at least 70 % of the gold
    questions right, and weigh each kept answer by its judge's trust (the crowd confidence). So:
    ``trusted`` → the worker's trust; ``excluded`` → 0 (left out); ``pending`` → 0 (the answers wait
    until the worker has met the minimum number of golds and passes). ``judged=False`` is a study
    without gold questions: nobody can be judged, so a worker without a status weighs 1.0 (every
    answer counts equally) and only an ``excluded`` status (from golds since retired) still leaves out.
    """
    status_a = np.asarray(status, dtype=object)
    trust_a = np.asarray(trust, dtype=np.float64)
    if status_a.shape != trust_a.shape:
        raise ValueError("status and trust need one entry per worker")
    unknown = set(status_a.tolist()) - {PENDING, TRUSTED, EXCLUDED}
    if unknown:
        raise ValueError(f"unknown trust status {sorted(map(str, unknown))[0]!r}")
    trusted = status_a == TRUSTED
    if np.any(trusted & ~np.isfinite(trust_a)):
        raise ValueError("a trusted worker needs a finite trust")
    waiting = 0.0 if judged else 1.0
    with np.errstate(invalid="ignore"):
        return np.where(trusted, np.nan_to_num(trust_a), np.where(status_a == PENDING, waiting, 0.0))


def leave_one_out_trust(passed_total, seen_total, passed_here) -> np.ndarray:
    """Each worker's trust on the *other* golds, for judging one gold item by the workers who saw it
    (``passed_here`` is 1 where they passed it, 0 where they missed it); NaN where no other gold is left."""
    passed_total = np.asarray(passed_total, dtype=float)
    seen_total = np.asarray(seen_total, dtype=float)
    rest = seen_total - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            rest > 0,
            (passed_total - np.asarray(passed_here, dtype=float)) / np.where(rest > 0, rest, 1),
            np.nan,
        )


def gold_review_counts(
    *,
    items: list,
    workers: list,
    passed: list[bool],
    passed_total: list[int],
    seen_total: list[int],
    in_totals: list[bool],
    counted_golds: int,
    min_golds: int,
    threshold: float,
    excluded: list,
) -> dict:
    """Per gold item ``(seen, missed, trusted_seen, trusted_missed)``: who answered it and who of them
    was trusted on the *other* golds (leave-one-out trust at least ``threshold`` over at least
    ``min_golds`` of them, capped at how many others there are), so that a wrong gold cannot hide by
    pulling its own judges' trust down.

    One entry per graded answer to a gold: ``items``, ``workers``, ``passed``, the worker's totals over
    the counted golds (``passed_total``, ``seen_total``) and whether this gold is one of them
    (``in_totals``: a retired gold is not); ``counted_golds``: how many golds count; ``excluded``:
    workers who judge no gold."""
    if not items:
        return {}
    items_a, workers_a = np.asarray(items), np.asarray(workers)
    passed_a = np.asarray(passed, dtype=bool)
    passed_t = np.asarray(passed_total, dtype=float)
    seen_t = np.asarray(seen_total, dtype=float)
    inside = np.asarray(in_totals, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        loo = np.where(
            inside,
            leave_one_out_trust(passed_t, seen_t, passed_a),
            np.where(seen_t > 0, passed_t / np.maximum(seen_t, 1), np.nan),
        )
    rest = np.where(inside, seen_t - 1, seen_t)
    needed = np.minimum(min_golds, np.where(inside, counted_golds - 1, counted_golds))
    trusted = (
        (rest >= needed)
        & (np.nan_to_num(loo, nan=0.0) >= threshold - 1e-12)
        & ~np.isin(workers_a, np.asarray(list(excluded)))
    )
    out = {}
    for item in dict.fromkeys(items):
        mine = items_a == item
        out[item] = (
            int(mine.sum()),
            int((mine & ~passed_a).sum()),
            int((mine & trusted).sum()),
            int((mine & trusted & ~passed_a).sum()),
        )
    return out


__all__ = [
    "DEFAULT_THRESHOLD",
    "EXCLUDED",
    "PENDING",
    "TRUSTED",
    "TrustTable",
    "answer_weights",
    "gold_review_counts",
    "leave_one_out_trust",
    "trust_table",
    "wilson_interval",
]
