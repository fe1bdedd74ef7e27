"""Importance alignment against imported human maps, with a permutation null (after Prasad et al. 2021 §3).

Prasad et al. 2021 compare a model's importances I(x) = |IG(x)| with an expert oracle O(x), the share of
annotators who marked each word (eq. 4): C(x) = arctanh(r(I(x), O(x))) (eq. 5). Their baseline C_R(x)
(eq. 6) correlates I(x) with the marks annotators made on the *same input* shown with a random other
example's explanation — control items that a public rationale set (Zaidan et al. 2007, ERASER,
YELP-HAT, HateXplain) does not have, and a random other input's oracle cannot stand in for them (its
words are different words).

So the baseline here is a different, documented null, **not the paper's C_R**: the same oracle's values
permuted over the input's words, ``n_permutations`` seeded permutations, C_null(x) = the mean over them of
arctanh(r(I(x), O_π(x))). It asks whether the model's importances follow *where* people marked beyond
what any arrangement of the same number of marks would give; its expectation is 0 (a permuted oracle is
uncorrelated with anything fixed), so C itself is read against 0 and ΔA = tanh(mean(C − C_null)) stays
close to tanh(mean C). Every figure has a percentile bootstrap interval over examples
(:mod:`explain_engine.metrics.bootstrap`, the same resamples as the other figures).

The permutations of all examples are drawn in one sort per permutation set (no loop over examples).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from explain_engine.metrics.alignment import expert_oracle, fisher_correlations
from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, bootstrap, mean_estimate
from explain_engine.metrics.ragged import Ragged, as_ragged

N_PERMUTATIONS = 20
_CHUNK_VALUES = 2_000_000  # words × permutations correlated in one pass (memory, not results)
NULL_DESCRIPTION = (
    "C_null: the same oracle's values permuted over the input's words (seeded permutations, averaged), "
    "not Prasad et al. 2021's C_R, which needs marks made against a random other explanation (control "
    "items) that an imported rationale set does not have; its expectation is 0"
)


def permute_within(values: Ragged, n_permutations: int, seed: int | None = 0) -> np.ndarray:
    """``(n_permutations, total words)``: each row the values permuted within every example (one argsort
    per row of keys ``example index + U(0, ½)``, which keeps every example's words in its own block)."""
    if n_permutations < 1:
        raise ValueError("n_permutations must be at least 1")
    rng = np.random.default_rng(seed)
    seg = values.segments.astype(np.float64)
    keys = seg[None, :] + 0.5 * rng.random((n_permutations, seg.shape[0]))
    return values.values[np.argsort(keys, axis=1, kind="stable")]


def null_correlations(
    importance: Ragged, oracle: Ragged, n_permutations: int = N_PERMUTATIONS, seed: int | None = 0
) -> np.ndarray:
    """Per example the mean over permutations of arctanh(r(importance, permuted oracle)); NaN where no
    permutation gives a defined r (a constant importance or oracle)."""
    importance.same_shape(oracle, "importance and oracle")
    permuted = permute_within(oracle, n_permutations, seed)
    chunk = max(1, _CHUNK_VALUES // max(1, oracle.values.shape[0]))  # permutations correlated at once
    parts = []
    for start in range(0, n_permutations, chunk):
        rows = permuted[start : start + chunk]
        lengths = np.tile(oracle.lengths, rows.shape[0])
        tiled = Ragged(np.tile(importance.values, rows.shape[0]), lengths)
        parts.append(fisher_correlations(tiled, Ragged(rows.ravel(), lengths)).reshape(-1, len(oracle)))
    c = np.concatenate(parts)
    ok = np.isfinite(c)
    counts = ok.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, np.where(ok, c, 0.0).sum(axis=0) / counts, np.nan)


@dataclass(frozen=True)
class PermutationAlignment:
    """Per-example C and C_null; mean C, mean C_null and ΔA with bootstrap intervals."""

    c: np.ndarray
    c_null: np.ndarray
    mean_c: Estimate
    mean_c_null: Estimate
    delta_a: Estimate
    n_permutations: int

    def to_dict(self) -> dict:
        return {
            "mean_c": self.mean_c.to_dict(),
            "mean_c_null": self.mean_c_null.to_dict(),
            "delta_a": self.delta_a.to_dict(),
            "permutations": self.n_permutations,
            "examples": int(self.c.shape[0]),
            "null": NULL_DESCRIPTION,
        }


def permutation_alignment(
    attributions: Ragged | Sequence[Sequence[float] | np.ndarray],
    oracle: Ragged | Sequence[Sequence[float] | np.ndarray],
    n_permutations: int = N_PERMUTATIONS,
    absolute: bool = True,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> PermutationAlignment:
    """C (Prasad et al. 2021 eq. 5) of each example's importances against its oracle, and the permutation
    null C_null (see the module's docstring: not the paper's C_R). ``absolute``: |attributions| (eq. 1).

    Examples where C or C_null is undefined (a constant vector) are left out of the three figures and
    counted in their ``skipped``."""
    imp = as_ragged(attributions)
    orc = as_ragged(oracle)
    imp.same_shape(orc, "attributions and oracle")
    if absolute:
        imp = imp.with_values(np.abs(imp.values))
    c = fisher_correlations(imp, orc)
    c_null = null_correlations(imp, orc, n_permutations, seed)
    ok = np.isfinite(c) & np.isfinite(c_null)
    extra = {"skipped": int((~ok).sum()), "examples": int(c.shape[0])}
    diff = (c - c_null)[ok]

    def delta(w: np.ndarray) -> np.ndarray:
        return np.tanh((w @ diff) / w.sum(axis=1))

    return PermutationAlignment(
        c,
        c_null,
        mean_estimate(c[ok], n_boot, level, seed, **extra),
        mean_estimate(c_null[ok], n_boot, level, seed, **extra),
        bootstrap(delta, int(ok.sum()), n_boot, level, seed, extra=extra),
        n_permutations,
    )


def shared_marks_alignment(
    markings: Sequence[Sequence[Sequence[int]] | np.ndarray],
    attributions: Sequence[Sequence[float] | np.ndarray],
    n_permutations: int = N_PERMUTATIONS,
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> dict:
    """:func:`permutation_alignment` with the expert oracle (eq. 4, the share of annotators who marked each
    word) of each example's human maps (annotators × words, one or more annotators) as
    :meth:`PermutationAlignment.to_dict`."""
    if len(markings) != len(attributions):
        raise ValueError("markings and attributions need one entry per example")
    oracles = [expert_oracle(m) for m in markings]
    for i, (o, a) in enumerate(zip(oracles, attributions, strict=True)):
        if len(a) != o.shape[0]:
            raise ValueError(f"example {i}: attributions need one value per word of the human maps")
    return permutation_alignment(
        attributions, oracles, n_permutations=n_permutations, n_boot=n_boot, seed=seed
    ).to_dict()
