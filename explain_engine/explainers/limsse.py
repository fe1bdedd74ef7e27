"""LIMSSE: LIME for NLP with substring samples (Poerner et al. 2018 §3.6).

N = 3000 samples; each draws a length l ~ U{1..6} and a start s ~ U{0..L−l} and keeps only the
substring Z = [x_s .. x_{s+l−1}], which the model classifies on its own. To the linear model Z is
the binary vector z_t = [s ≤ t < s + l]. The weights v̂_k are the relevances:

* ``limsse_bb`` (black box): logistic loss on [f(Z) = k], f(Z) = argmax_k' p(k' | Z);
* ``limsse_ms_s`` / ``limsse_ms_p`` (magnitude-sensitive): squared loss against s(k, Z) / p(k | Z).

Written by hand (not in any library). A text of L units has at most ≈ 6L distinct substrings, so
each distinct one is classified once and weighted by how often it was drawn: the same losses, far
fewer forward passes on short texts. The design matrix is never built: its Gram matrices are
summed from the ≤ 36 unit pairs of each substring, and since a substring spans at most 6
consecutive units they are banded, so every solve is a banded Cholesky factorisation (O(L)).
Least squares uses the normal equations (a ridge of 1e-10 × the largest diagonal for stability; a
never-drawn unit gets 0); the logistic loss Newton's method with a small L2 penalty ``l2`` (the
black-box data are often separable, where the unpenalised optimum does not exist).
Units are canonical words by default (``unit="token"`` for model tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.linalg import solveh_banded
from scipy.linalg.lapack import dpbsv
from scipy.sparse import csr_matrix
from scipy.special import expit

from explain_engine.explainers.perturbation import (
    Perturbed,
    chunk_tokens,
    class_output,
    dropped,
    forward_logits,
    text_rng,
    unit_index,
    units_to_tokens,
)
from explain_engine.explainers.registry import FORWARD_BATCH, SEED, UNIT, Param, register
from explain_engine.models.base import EncodedBatch

LOSSES = ("bb", "ms_s", "ms_p")
#: What a caller may set (the loss is fixed by the method's name).
LIMSSE_PARAMS = {
    "n_samples": Param(int, 1, 20_000),
    "min_len": Param(int, 1, 50),
    "max_len": Param(int, 1, 50),
    "seed": SEED,
    "unit": UNIT,
    "l2": Param(float, 0.0, 1e6),
    "batch_size": FORWARD_BATCH,
}
LIMSSE_BATCH = 8192  # rows per forward chunk at most (see perturbation.chunk_tokens for the token budget)


def sample_substrings(
    rng: np.random.Generator, n_units: int, n_samples: int = 3000, min_len: int = 1, max_len: int = 6
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw substrings; return the distinct (start, length) pairs and how often each was drawn."""
    top = max(1, min(max_len, n_units))
    low = min(min_len, top)
    lengths = rng.integers(low, top + 1, size=n_samples)
    starts = (rng.random(n_samples) * (n_units - lengths + 1)).astype(np.int64)  # floor: all ≥ 0
    counts = np.bincount(starts * (top + 1) + lengths, minlength=n_units * (top + 1))
    keys = np.flatnonzero(counts)
    return keys // (top + 1), keys % (top + 1), counts[keys].astype(np.float64)


def substring_rows(
    batch: EncodedBatch, units: torch.Tensor, doc: torch.Tensor, start: torch.Tensor, length: torch.Tensor
) -> Perturbed:
    """Rows holding only the tokens whose unit lies in ``[start, start + length)`` of text ``doc``.

    A unit's tokens are contiguous, so a substring is the token range from the first token of its
    first unit to the last token of its last unit. Tokens of no word (a transformer's [CLS] / [SEP])
    outside that range are added around it, in their order, so that every row keeps them.
    """
    n_texts, n_tokens = units.shape
    width_units = int(units.max()) + 2
    position = torch.arange(n_tokens, device=units.device).expand_as(units)
    slot = units.clamp_min(0) + (units < 0) * (width_units - 1)  # padding goes to a spare slot
    first = torch.full((n_texts, width_units), n_tokens, dtype=torch.long, device=units.device)
    first = first.scatter_reduce(1, slot, position, reduce="amin")
    end = torch.zeros((n_texts, width_units), dtype=torch.long, device=units.device)
    end = end.scatter_reduce(1, slot, position + 1, reduce="amax")
    begin = first[doc, start]
    stop = end[doc, start + length - 1]
    width = int((stop - begin).max())
    positions = begin[:, None] + torch.arange(width, device=units.device)[None, :]
    keep = positions < stop[:, None]
    pinned = batch.mask & (units < 0)
    if bool(pinned.any()):
        pinned_at = torch.where(pinned, position, n_tokens).sort(dim=1).values[:, : int(pinned.sum(1).max())]
        around = pinned_at[doc]
        before = around < begin[:, None]
        after = (around >= stop[:, None]) & (around < n_tokens)
        positions = torch.cat([around, positions, around], dim=1)
        keep = torch.cat([before, keep, after], dim=1)
    flat = doc[:, None] * n_tokens + positions.clamp_max(n_tokens - 1)
    ids = batch.ids.reshape(-1)[flat].masked_fill(~keep, 0)
    if bool(pinned.any()):
        return dropped(ids, keep, doc)
    return Perturbed(ids, keep, None, doc)


@dataclass
class SubstringDesign:
    """The distinct substrings drawn for a batch, and their binary design over units.

    ``doc``/``start``/``length``/``count`` ``(S,)`` describe each distinct substring (``count``: how
    often it was drawn); ``width`` is the widest text in units. Z is never built densely: it is
    held as a sparse matrix, and since a substring covers at most ``bands`` consecutive units, ZᵀDZ
    is banded and each substring adds its weight to at most 21 entries of the lower band (a second
    sparse matrix maps substring weights onto the band).
    """

    doc: np.ndarray
    start: np.ndarray
    length: np.ndarray
    count: np.ndarray
    n_docs: int
    width: int

    def __post_init__(self) -> None:
        self.bands = int(self.length.max()) if len(self.length) else 0
        # Z as a sparse (S, B·width) matrix: row n holds the units of substring n.
        self._z = _runs(
            self.doc * self.width + self.start, self.length, np.arange(self.bands), self.n_docs * self.width
        )
        # (S, B·bands·width): row n marks the lower-band entries [d, j] = G[j + d, j] of the pairs of
        # units it covers. Pairs (j + d, j) of the lower triangle in row-major order: a substring of
        # length l covers the first l(l + 1)/2 of them.
        rows, cols = np.tril_indices(self.bands)
        offsets = (rows - cols) * self.width + cols
        start = self.doc * self.bands * self.width + self.start
        pairs = self.length * (self.length + 1) // 2
        self._band = _runs(start, pairs, offsets, self.n_docs * self.bands * self.width)
        self._z_t, self._band_t = self._z.T, self._band.T  # made once: each ``.T`` is a new matrix

    def predict(self, v: np.ndarray) -> np.ndarray:
        """z_n · v_doc(n) for every substring, ``v`` ``(B, width)``."""
        return self._z @ v.reshape(-1)

    def moment(self, values: np.ndarray) -> np.ndarray:
        """Zᵀ values per text ``(B, width)``."""
        return (self._z_t @ values).reshape(self.n_docs, self.width)

    def gram(self, values: np.ndarray) -> np.ndarray:
        """Zᵀ diag(values) Z per text ``(B, width, width)`` (dense, from :meth:`band`)."""
        band = self.band(values)
        dense = np.zeros((self.n_docs, self.width, self.width))
        for d in range(self.bands):
            j = np.arange(self.width - d)
            dense[:, j + d, j] = dense[:, j, j + d] = band[:, d, : self.width - d]
        return dense

    def band(self, values: np.ndarray) -> np.ndarray:
        """Zᵀ diag(values) Z per text in lower banded storage ``(B, bands, width)``: ``[d, j] = G[j + d, j]``.

        A substring spans at most ``bands`` consecutive units, so G is zero further from the diagonal.
        """
        return (self._band_t @ values).reshape(self.n_docs, self.bands, self.width)


def _runs(base: np.ndarray, count: np.ndarray, offsets: np.ndarray, columns: int) -> csr_matrix:
    """A 0/1 sparse matrix whose row n has ones at columns ``base[n] + offsets[:count[n]]``."""
    indptr = np.zeros(len(count) + 1, dtype=np.int64)
    np.cumsum(count, out=indptr[1:])
    within = np.arange(indptr[-1]) - np.repeat(indptr[:-1], count)
    indices = np.repeat(base, count) + offsets[within]
    return csr_matrix((np.ones(len(indices)), indices, indptr), shape=(len(count), columns))


def _solve(band: np.ndarray, rhs: np.ndarray, ridge: float) -> np.ndarray:
    """(G + ridge I) x = rhs per text, G banded and positive semi-definite (banded Cholesky, O(width));
    units no substring covers (zero diagonal) get x = 0.

    The texts' matrices are independent blocks of one block-diagonal banded matrix (a band entry
    never reaches past its own text), so all texts are solved in one call; when that matrix is
    numerically singular, each text is solved on its own and a singular one by least squares.
    """
    band = band.copy()
    diag = band[:, 0]
    drawn = diag > 0
    scale = np.maximum(diag.max(axis=1, keepdims=True), 1.0)
    band[:, 0] = np.where(drawn, diag + ridge * scale, 1.0)
    rhs = np.where(drawn, rhs, 0.0)
    n_docs, bands, width = band.shape
    for d in range(1, bands):
        band[:, d, width - d :] = 0.0  # outside the matrix: would couple a text to the next
    stacked = band.transpose(1, 0, 2).reshape(bands, n_docs * width)
    _, solution, info = dpbsv(stacked, rhs.reshape(-1, 1), lower=1)  # LAPACK directly: no checks
    if info == 0:
        return solution.reshape(rhs.shape)
    out = np.empty_like(rhs)
    for b in range(n_docs):
        try:
            out[b] = solveh_banded(band[b], rhs[b], lower=True, check_finite=False)
        except np.linalg.LinAlgError:  # numerically singular: the minimum-norm solution
            dense = np.zeros((width, width))
            for d in range(bands):
                idx = np.arange(width - d)
                dense[idx + d, idx] = dense[idx, idx + d] = band[b, d, : len(idx)]
            out[b] = np.linalg.lstsq(dense, rhs[b], rcond=None)[0]
    return out


def _banded_cholesky(band: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """:func:`_solve` for a positive definite ``band`` (every diagonal entry > 0, nothing outside the
    matrix), without its preparation; falls back to :func:`_solve` if the factorisation fails."""
    n_docs, bands, width = band.shape
    stacked = band.transpose(1, 0, 2).reshape(bands, n_docs * width)
    _, solution, info = dpbsv(stacked, rhs.reshape(-1, 1), lower=1)
    return solution.reshape(rhs.shape) if info == 0 else _solve(band, rhs, 0.0)


def fit_least_squares(design: SubstringDesign, y: np.ndarray, ridge: float = 1e-10) -> np.ndarray:
    """argmin_v Σ_n c_n (z_n · v − y_n)² per text (c: draw counts), ``(B, width)``."""
    return _solve(design.band(design.count), design.moment(design.count * y), ridge)


def fit_logistic(
    design: SubstringDesign, y: np.ndarray, l2: float = 1e-2, iterations: int = 25, tol: float = 1e-6
) -> np.ndarray:
    """argmin_v Σ_n c_n · logloss(σ(z_n · v), y_n) + l2/2 ‖v‖² per text, Newton's method (no intercept)."""
    v = np.zeros((design.n_docs, design.width))
    count_y = design.count * y
    for _ in range(iterations):
        p = expit(design.predict(v))
        weighted = design.count * p  # c_n p_n
        grad = design.moment(weighted - count_y)
        grad += l2 * v
        hess = design.band(weighted - weighted * p)  # c_n p_n (1 − p_n)
        hess[:, 0] += l2
        step = _banded_cholesky(hess, grad)
        v -= step
        if np.abs(step).max() < tol:
            break
    return v


def limsse_rows(
    batch: EncodedBatch,
    *,
    n_samples: int = 3000,
    min_len: int = 1,
    max_len: int = 6,
    seed: int = 0,
    unit: str = "word",
) -> tuple[Perturbed, SubstringDesign, torch.Tensor]:
    """Draw the substrings of every text; return their rows, their design and the token units."""
    units, n_units = unit_index(batch, unit)
    docs, starts, lengths, counts = [], [], [], []
    for b, text in enumerate(batch.texts):
        s, n, c = sample_substrings(text_rng(seed, text), int(n_units[b]), n_samples, min_len, max_len)
        docs.append(np.full(len(s), b))
        starts.append(s)
        lengths.append(n)
        counts.append(c)
    design = SubstringDesign(
        np.concatenate(docs),
        np.concatenate(starts),
        np.concatenate(lengths),
        np.concatenate(counts),
        len(batch.texts),
        max(1, int(n_units.max())),
    )
    device = batch.ids.device
    rows = substring_rows(
        batch,
        units,
        torch.as_tensor(design.doc, device=device),
        torch.as_tensor(design.start, device=device),
        torch.as_tensor(design.length, device=device),
    )
    return rows, design, units


def limsse(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    *,
    loss: str = "ms_s",
    n_samples: int = 3000,
    min_len: int = 1,
    max_len: int = 6,
    seed: int = 0,
    unit: str = "word",
    l2: float = 1e-2,
    batch_size: int = LIMSSE_BATCH,
) -> torch.Tensor:
    """LIMSSE relevance per token (the unit's weight on its first token)."""
    if loss not in LOSSES:
        raise ValueError(f"unknown LIMSSE loss {loss!r}; use one of {LOSSES}")
    rows, design, units = limsse_rows(
        batch, n_samples=n_samples, min_len=min_len, max_len=max_len, seed=seed, unit=unit
    )
    logits = forward_logits(bundle.model, rows, batch_size, chunk_tokens(bundle.model, batch.ids.device))
    tgt = target[rows.doc]
    if loss == "bb":
        y = (logits.argmax(1) == tgt).double().cpu().numpy()
        relevance = fit_logistic(design, y, l2)
    else:
        y = class_output(logits, tgt, "s" if loss == "ms_s" else "p").double().cpu().numpy()
        relevance = fit_least_squares(design, y)
    return units_to_tokens(torch.as_tensor(relevance, dtype=torch.float32, device=batch.ids.device), units)


def _register(loss: str) -> None:
    def method(bundle: Any, batch: EncodedBatch, target: torch.Tensor, **params: Any) -> torch.Tensor:
        return limsse(bundle, batch, target, loss=loss, **params)

    kind = "black-box (logistic)" if loss == "bb" else f"magnitude-sensitive on {loss[-1]}"
    method.__doc__ = f"LIMSSE, {kind} loss (Poerner et al. 2018 §3.6)."
    method.__name__ = f"limsse_{loss}"
    title = "LIMSSE, black-box loss" if loss == "bb" else f"LIMSSE, magnitude-sensitive on {loss[-1]}"
    register(
        f"limsse_{loss}", title=title, source="Poerner et al. 2018 §3.6", samples=True, params=LIMSSE_PARAMS
    )(method)


for _loss in LOSSES:
    _register(_loss)
