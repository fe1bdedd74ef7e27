"""Agreement between annotators (Sen et al. 2020 §3.2; Pappas & Popescu-Belis 2016 §3;
Lertvittayakumjorn & Toni 2019 §5): Fleiss κ, Cohen κ (plain and weighted), Pearson r,
Krippendorff α — each an :class:`~explain_engine.metrics.bootstrap.Estimate` with its n and a
bootstrap confidence interval over items — and pairwise tables across annotators.

Ratings are given as an items × raters table of category labels; ``None`` (or NaN) marks a
missing rating, and rows may be of different lengths. Categories are given explicitly, in order
(the order matters for weighted κ and ordinal α).

Point estimates come from the well-kept libraries where they apply (statsmodels' ``fleiss_kappa``,
scikit-learn's ``cohen_kappa_score``, SciPy's ``pearsonr``); Krippendorff's α is computed here from
Krippendorff (2011), since the ``krippendorff`` package is GPL and serves only as the tests' reference. The
bootstrap needs each statistic as a function of item weights (see
:mod:`explain_engine.metrics.bootstrap`); those weighted forms are written here by hand from the
same formulas, and at unit weights they equal the library values (the tests check this).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from itertools import combinations
from typing import Any

import numpy as np
from scipy.stats import pearsonr
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, bootstrap, weighted_pearson

KAPPA_WEIGHTS = (None, "linear", "quadratic", "absolute")
ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def is_missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def encode_ratings(ratings: Sequence[Sequence[Hashable]], categories: Sequence[Hashable]) -> np.ndarray:
    """Items × raters integer codes (index into ``categories``; -1 where a rating is missing).

    Raises ``ValueError`` naming the first rating that is not one of ``categories``.
    """
    index = {c: i for i, c in enumerate(categories)}
    if len(index) != len(categories):
        raise ValueError(f"categories must be distinct, got {list(categories)}")
    width = max((len(r) for r in ratings), default=0)
    codes = np.full((len(ratings), width), -1, dtype=np.int64)
    for i, row in enumerate(ratings):
        for j, v in enumerate(row):
            if is_missing(v):
                continue
            try:
                codes[i, j] = index[v]
            except (KeyError, TypeError):
                raise ValueError(
                    f"rating {v!r} (item {i}, rater {j}) is not one of {list(categories)}"
                ) from None
    return codes


def category_counts(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """Items × categories table: how many raters put each item in each category."""
    n = codes.shape[0]
    ok = codes >= 0
    rows = np.broadcast_to(np.arange(n)[:, None], codes.shape)[ok]
    return np.bincount(rows * n_categories + codes[ok], minlength=n * n_categories).reshape(n, n_categories)


# ---------------------------------------------------------------------------------------------- Fleiss


def _fleiss_statistic(table: np.ndarray):
    """Fleiss κ of an items × categories count table as a function of item weights.

    Items may have different numbers of raters (each needs ≥ 2): P_i uses the item's own n_i and the
    category shares p_j pool all ratings, which is Fleiss (1971) when every n_i is equal.
    """
    t = table.astype(np.float64)
    n_i = t.sum(axis=1)
    p_item = ((t * t).sum(axis=1) - n_i) / (n_i * (n_i - 1.0))

    def stat(w: np.ndarray) -> np.ndarray:
        p_bar = (w @ p_item) / w.sum(axis=1)
        p_j = (w @ t) / (w @ n_i)[:, None]
        p_e = (p_j * p_j).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (p_bar - p_e) / (1.0 - p_e)

    return stat


def fleiss_kappa(
    ratings: Sequence[Sequence[Hashable]],
    categories: Sequence[Hashable],
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> Estimate:
    """Fleiss' κ (Fleiss 1971) over items rated by any number of raters into ``categories``.

    Items with fewer than two ratings are left out (``extra["dropped"]``). With the same number of
    raters on every item the value is statsmodels' ``fleiss_kappa``; with varying numbers it is the
    usual generalisation (per-item agreement over the item's own rater pairs).
    """
    codes = encode_ratings(ratings, categories)
    return fleiss_kappa_from_counts(category_counts(codes, len(categories)), n_boot, level, seed)


def fleiss_kappa_from_counts(
    table: np.ndarray, n_boot: int = N_BOOT, level: float = LEVEL, seed: int | None = 0
) -> Estimate:
    """:func:`fleiss_kappa` from an items × categories count table."""
    table = np.asarray(table)
    n_i = table.sum(axis=1)
    keep = n_i >= 2
    table = table[keep]
    extra = {
        "dropped": int((~keep).sum()),
        "raters_per_item": float(n_i[keep].mean()) if keep.any() else math.nan,
        "categories": int(table.shape[1]),
    }
    stat = _fleiss_statistic(table)
    value = None
    if table.shape[0] and np.all(table.sum(axis=1) == table[0].sum()):
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(sm_fleiss(table, method="fleiss"))
    return bootstrap(stat, int(table.shape[0]), n_boot, level, seed, value=value, extra=extra)


# ----------------------------------------------------------------------------------------------- Cohen


def kappa_disagreement_weights(
    categories: Sequence[Hashable], weights: str | None = None, values: Sequence[float] | None = None
) -> np.ndarray:
    """K × K disagreement weights for (weighted) Cohen κ.

    ``None``: 0 on the diagonal, 1 elsewhere. ``"linear"`` |i − j| and ``"quadratic"`` (i − j)² over
    category positions (as scikit-learn). ``"absolute"``: Pappas & Popescu-Belis 2016's "absolute differences of
    normalized values", |v_i − v_j| / (max v − min v) over the categories' numeric values ``values``
    (default: the categories themselves); equal to ``"linear"`` on an evenly spaced scale.
    """
    k = len(categories)
    pos = np.arange(k, dtype=np.float64)
    if weights is None:
        return 1.0 - np.eye(k)
    if weights == "linear":
        return np.abs(pos[:, None] - pos[None, :])
    if weights == "quadratic":
        return (pos[:, None] - pos[None, :]) ** 2
    if weights == "absolute":
        try:
            v = np.asarray(categories if values is None else values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("weights='absolute' needs numeric category values (pass values=...)") from None
        if v.shape != (k,):
            raise ValueError(f"values needs one number per category ({k})")
        span = v.max() - v.min()
        return np.abs(v[:, None] - v[None, :]) / (span if span else 1.0)
    raise ValueError(f"unknown weights {weights!r}; use one of {KAPPA_WEIGHTS}")


def _cohen_statistic(a: np.ndarray, b: np.ndarray, disagreement: np.ndarray):
    k = disagreement.shape[0]
    cells = np.zeros((a.shape[0], k * k))
    cells[np.arange(a.shape[0]), a * k + b] = 1.0
    d = disagreement.ravel()

    def stat(w: np.ndarray) -> np.ndarray:
        observed = w @ cells  # (B, K*K) counts
        total = observed.sum(axis=1, keepdims=True)
        o = observed.reshape(-1, k, k)
        expected = (o.sum(axis=2)[:, :, None] * o.sum(axis=1)[:, None, :]).reshape(-1, k * k) / total
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 - (observed @ d) / (expected @ d)

    return stat


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    categories: Sequence[Hashable],
    weights: str | None = None,
    values: Sequence[float] | None = None,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> Estimate:
    """Cohen's κ (Cohen 1960) between two raters, optionally weighted (Cohen 1968).

    ``weights``: see :func:`kappa_disagreement_weights` (``"absolute"`` is Pappas & Popescu-Belis 2016's scale).
    Items where either rating is missing are left out. The point estimate is scikit-learn's
    ``cohen_kappa_score`` for the weights it knows; ``"absolute"`` is computed here.
    """
    codes = encode_ratings([[x, y] for x, y in zip(a, b, strict=True)], categories)
    codes = codes.reshape(-1, 2)
    both = (codes >= 0).all(axis=1)
    ca, cb = codes[both, 0], codes[both, 1]
    d = kappa_disagreement_weights(categories, weights, values)
    value = None
    if weights in (None, "linear", "quadratic") and ca.size:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(cohen_kappa_score(ca, cb, labels=np.arange(len(categories)), weights=weights))
    extra = {"weights": weights, "dropped": int((~both).sum())}
    return bootstrap(_cohen_statistic(ca, cb, d), int(ca.size), n_boot, level, seed, value=value, extra=extra)


# --------------------------------------------------------------------------------------------- Pearson


def pearson_r(
    x: Sequence[float],
    y: Sequence[float],
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> Estimate:
    """Pearson's r (Pearson 1895) of paired numeric ratings (Pappas & Popescu-Belis 2016 §2), via ``scipy.stats.pearsonr``.

    Pairs with a missing value (None / NaN) are left out; ``extra["p_value"]`` is SciPy's test of r = 0.
    """
    xv = np.array([math.nan if is_missing(v) else float(v) for v in x])
    yv = np.array([math.nan if is_missing(v) else float(v) for v in y])
    if xv.shape != yv.shape:
        raise ValueError(f"x and y differ in length ({xv.size} vs {yv.size})")
    ok = np.isfinite(xv) & np.isfinite(yv)
    xv, yv = xv[ok], yv[ok]
    value, p = math.nan, math.nan
    if xv.size >= 2 and xv.std() > 0 and yv.std() > 0:
        res = pearsonr(xv, yv)
        value, p = float(res.statistic), float(res.pvalue)
    extra = {"p_value": None if math.isnan(p) else p, "dropped": int((~ok).sum())}
    return bootstrap(weighted_pearson(xv, yv), int(xv.size), n_boot, level, seed, value=value, extra=extra)


# ---------------------------------------------------------------------------------------- Krippendorff


def _alpha_statistic(table: np.ndarray, level: str, values: np.ndarray | None):
    """Krippendorff's α from a units × values count table, as a function of unit weights.

    Coincidences o_ck = Σ_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1) summed with the unit weights;
    α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck (Krippendorff 2011), δ² by level.
    """
    t = table.astype(np.float64)
    m = t.sum(axis=1)
    k = t.shape[1]
    per_unit = (t[:, :, None] * t[:, None, :] - t[:, :, None] * np.eye(k)[None]) / (m - 1.0)[:, None, None]
    per_unit = per_unit.reshape(t.shape[0], k * k)
    if level == "nominal":
        fixed = 1.0 - np.eye(k)
    elif level in ("interval", "ratio"):
        v = np.asarray(values, dtype=np.float64)
        diff = v[:, None] - v[None, :]
        if level == "interval":
            fixed = diff**2
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                fixed = np.nan_to_num((diff / (v[:, None] + v[None, :])) ** 2)
    elif level == "ordinal":
        fixed = None
    else:
        raise ValueError(f"unknown level {level!r}; use one of {ALPHA_LEVELS}")
    lo = np.minimum.outer(np.arange(k), np.arange(k))
    hi = np.maximum.outer(np.arange(k), np.arange(k))

    def stat(w: np.ndarray) -> np.ndarray:
        o = (w @ per_unit).reshape(-1, k, k)
        n_c = o.sum(axis=2)
        total = n_c.sum(axis=1)
        if fixed is None:  # ordinal: δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²
            cum = np.cumsum(n_c, axis=1)
            between = cum[:, hi] - cum[:, lo] + n_c[:, lo]
            delta = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2.0) ** 2
        else:
            delta = np.broadcast_to(fixed, o.shape)
        observed = (o * delta).sum(axis=(1, 2))
        expected = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 - (total - 1.0) * observed / expected

    return stat


def krippendorff_alpha(
    ratings: Sequence[Sequence[Hashable]],
    level: str = "nominal",
    categories: Sequence[Hashable] | None = None,
    n_boot: int = N_BOOT,
    level_ci: float = LEVEL,
    seed: int | None = 0,
) -> Estimate:
    """Krippendorff's α over items × raters (any raters per item, missing allowed).

    ``level``: ``"nominal"``, ``"ordinal"`` (``categories`` in scale order), ``"interval"`` or
    ``"ratio"`` (ratings are numbers; ``categories`` default to their sorted distinct values).
    Units with < 2 ratings are not pairable. α is computed here (the ``krippendorff`` package, GPL,
    is only the tests' reference); it is NaN when fewer than two values occur.
    """
    if level not in ALPHA_LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {ALPHA_LEVELS}")
    if categories is None:
        seen: set[Any] = {v for row in ratings for v in row if not is_missing(v)}
        categories = sorted(seen)
    numeric = None
    if level in ("interval", "ratio"):
        try:
            numeric = np.asarray(categories, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"level {level!r} needs numeric ratings") from None
    codes = encode_ratings(ratings, categories)
    table = category_counts(codes, len(categories))
    pairable = table.sum(axis=1) >= 2
    table = table[pairable]
    extra = {"level": level, "unpairable": int((~pairable).sum())}
    stat = _alpha_statistic(table, level, numeric)
    value = math.nan
    if table.shape[0] and np.count_nonzero(table.sum(axis=0)) >= 2:
        value = float(stat(np.ones((1, table.shape[0])))[0])
    return bootstrap(stat, int(table.shape[0]), n_boot, level_ci, seed, value=value, extra=extra)


# ------------------------------------------------------------------------------------------- pairwise


def pairwise_table(
    ratings: Sequence[Sequence[Hashable]],
    metric: str = "cohen",
    categories: Sequence[Hashable] | None = None,
    names: Sequence[str] | None = None,
    **kwargs,
) -> list[dict]:
    """One row per pair of raters (columns of ``ratings``): the metric over the items both rated.

    ``metric``: ``"cohen"`` (``weights=`` / ``values=`` pass through), ``"pearson"`` or
    ``"krippendorff"`` (``level=``). Rows: ``{"a", "b", **Estimate.to_dict()}``.
    """
    width = max((len(r) for r in ratings), default=0)
    padded = [list(r) + [None] * (width - len(r)) for r in ratings]
    names = list(names) if names is not None else [f"rater {i + 1}" for i in range(width)]
    rows = []
    for i, j in combinations(range(width), 2):
        a: list[Any] = [r[i] for r in padded]
        b: list[Any] = [r[j] for r in padded]
        if metric == "cohen":
            if categories is None:
                raise ValueError("metric 'cohen' needs categories")
            est = cohen_kappa(a, b, categories, **kwargs)
        elif metric == "pearson":
            est = pearson_r(a, b, **kwargs)
        elif metric == "krippendorff":
            est = krippendorff_alpha(
                [[x, y] for x, y in zip(a, b, strict=True)], categories=categories, **kwargs
            )
        else:
            raise ValueError(f"unknown pairwise metric {metric!r}; use 'cohen', 'pearson' or 'krippendorff'")
        rows.append({"a": names[i], "b": names[j], **est.to_dict()})
    return rows


def observed_agreement(counts: np.ndarray) -> float | None:
    """Share of agreeing rater pairs, averaged over items with two or more ratings (the P̄ of Fleiss
    1971, without the chance correction): Σ_j n_ij (n_ij − 1) / (n_i (n_i − 1)) over an items ×
    categories count table; None without such an item."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum(axis=1)
    keep = n >= 2
    if not keep.any():
        return None
    per_item = ((counts[keep] * (counts[keep] - 1.0)).sum(axis=1)) / (n[keep] * (n[keep] - 1.0))
    return float(per_item.mean())


def majority_agreement(
    items: Sequence[int],
    codes: Sequence[int],
    workers: Sequence[Hashable],
    own: Sequence[bool],
    counts: np.ndarray | Sequence[Sequence[int]],
) -> dict:
    """Per worker ``(answers equal to the majority of the other answers, answers with such a majority)``.

    One entry per answer: ``items`` (its row of ``counts``, an items × categories table of the counted
    answers), ``codes`` (its category), ``workers`` and ``own`` (whether the answer is one of those
    counted in ``counts``: it is then left out of its own majority). The majority must be unique; an
    answer counts only when the others' answers have one."""
    if not len(items):
        return {}
    item_idx, code, worker = np.asarray(items), np.asarray(codes), np.asarray(workers)
    others = np.asarray(counts)[item_idx].astype(np.int64)
    others[np.arange(len(item_idx)), code] -= np.asarray(own, dtype=np.int64)
    top = others.max(axis=1)
    unique = (top > 0) & ((others == top[:, None]).sum(axis=1) == 1)
    agree = unique & (others.argmax(axis=1) == code)
    ids, inverse = np.unique(worker, return_inverse=True)
    hits = np.bincount(inverse, weights=agree.astype(np.float64), minlength=len(ids))
    eligible = np.bincount(inverse, weights=unique.astype(np.float64), minlength=len(ids))
    return {w.item(): (int(h), int(e)) for w, h, e in zip(ids, hits, eligible, strict=True)}
