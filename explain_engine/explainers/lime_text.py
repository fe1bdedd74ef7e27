"""LIME for text (Ribeiro et al. 2016), 5000 samples as in Lertvittayakumjorn & Toni 2019 §4.3.

As the ``lime`` package's ``LimeTextExplainer`` does: sample s ~ U{1..d} units to remove (d = the
number of units), remove a uniformly chosen set of that size, keep the unperturbed text as the
first sample; weight each sample by the kernel √exp(−D²/σ²), σ = 25, with D = 100 × the cosine
distance between its binary vector and the all-ones vector; fit a ridge regression (α = 1, with
intercept) of p(k | sample) on the binary vectors. The coefficients are the relevances.

Written by hand so that it runs on token ids: samples are drawn as one array per text, removed
units are deleted from the id tensor (``mode="drop"``, as the package's default bag-of-words mode
deletes words) or replaced by zero embeddings (``mode="zero"``), all samples run through the model
in length-sorted batches, and the weighted ridge regression is solved in closed form. No strings
are built and no text is re-tokenised, and a sample drawn more than once (the empty text, say, or
the same single word removed) is run through the model once. Units are canonical words by default
(``unit="token"`` for model tokens). Captum's ``Lime`` perturbs a fixed-shape input through a
baseline, so it cannot delete words, and the ``lime`` package works on strings; the package is the
reference in the tests (same sampling, kernel and regression).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

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
from explain_engine.explainers.registry import FORWARD_BATCH, OUTPUT, SEED, UNIT, Param, register
from explain_engine.models.base import EncodedBatch

LIME_BATCH = 1024  # rows per forward chunk at most (see perturbation.chunk_tokens for the token budget)


def sample_masks(rng: np.random.Generator, n_units: int, n_samples: int = 5000) -> np.ndarray:
    """Binary ``(n_samples, d)`` array: row 0 all ones, each other row with s ~ U{1..d} zeros."""
    sizes = rng.integers(1, n_units + 1, size=n_samples - 1)
    keys = rng.random((n_samples - 1, n_units))
    threshold = np.take_along_axis(np.sort(keys, axis=1), (sizes - 1)[:, None], axis=1)
    masks = np.ones((n_samples, n_units), dtype=bool)
    masks[1:] = keys > threshold
    return masks


def kernel_weights(masks: np.ndarray, kernel_width: float = 25.0) -> np.ndarray:
    """√exp(−D²/σ²) with D = 100 × cosine distance to the all-ones vector (LIME's text defaults)."""
    active = masks.sum(1)
    distance = (1.0 - np.sqrt(active / masks.shape[1])) * 100.0
    return np.sqrt(np.exp(-(distance**2) / kernel_width**2))


def weighted_ridge(
    x: np.ndarray, y: np.ndarray, weight: np.ndarray, alpha: float = 1.0
) -> tuple[np.ndarray, float]:
    """Coefficients and intercept of argmin Σ w_n (y_n − x_n·β − b)² + α‖β‖² (closed form)."""
    total = weight.sum()
    x_mean = weight @ x / total
    y_mean = weight @ y / total
    xc = x - x_mean
    yc = y - y_mean
    gram = (xc * weight[:, None]).T @ xc + alpha * np.eye(x.shape[1])
    beta = np.linalg.solve(gram, (xc * weight[:, None]).T @ yc)
    return beta, float(y_mean - x_mean @ beta)


def _doc_rows(batch: EncodedBatch, units: torch.Tensor, doc: int, masks: np.ndarray, mode: str) -> Perturbed:
    """The samples of text ``doc`` as perturbed rows (unit masks → token rows)."""
    device = batch.ids.device
    keep_units = torch.as_tensor(masks, device=device)
    u = units[doc]
    real = u >= 0
    present = batch.mask[doc]
    pinned = present & ~real  # tokens of no word (special tokens) stay in every sample
    keep = (keep_units[:, u.clamp_min(0)] & real[None, :]) | pinned[None, :]
    rows = torch.full((len(masks),), doc, dtype=torch.long, device=device)
    ids = batch.ids[doc].expand(len(masks), -1)
    if mode == "drop":
        return dropped(ids, keep, rows)
    if mode == "zero":
        return Perturbed(ids.clone(), present[None, :].expand_as(keep).clone(), real[None, :] & ~keep, rows)
    raise ValueError(f"unknown LIME mode {mode!r}; use 'drop' or 'zero'")


def distinct_masks(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a binary ``(n, d)`` array (in order of first appearance) and, per row,
    the index of its distinct row."""
    packed = np.packbits(masks, axis=1)
    _, first, inverse = np.unique(packed, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return masks[first[order]], rank[inverse.reshape(-1)]


def lime_rows(
    batch: EncodedBatch, *, n_samples: int = 5000, mode: str = "drop", unit: str = "word", seed: int = 0
) -> tuple[Perturbed, list[np.ndarray], torch.Tensor, np.ndarray]:
    """Draw every text's samples; return the rows of the distinct samples, the unit masks per text
    (every sample), the token units, and for every sample (texts one after another) its row."""
    units, n_units = unit_index(batch, unit)
    all_masks = [
        sample_masks(text_rng(seed, text), int(n_units[b]), n_samples) for b, text in enumerate(batch.texts)
    ]
    rows, sample_row, offset = [], [], 0
    for b, masks in enumerate(all_masks):
        distinct, row = distinct_masks(masks)
        rows.append(_doc_rows(batch, units, b, distinct, mode))
        sample_row.append(row + offset)
        offset += len(distinct)
    width = max(r.ids.shape[1] for r in rows)
    merged = Perturbed(
        torch.cat([torch.nn.functional.pad(r.ids, (0, width - r.ids.shape[1])) for r in rows]),
        torch.cat([torch.nn.functional.pad(r.mask, (0, width - r.mask.shape[1])) for r in rows]),
        _merge_zero(rows, width),
        torch.cat([r.doc for r in rows]),
    )
    return merged, all_masks, units, np.concatenate(sample_row)


@register(
    "lime",
    title="LIME",
    source="Ribeiro et al. 2016",
    samples=True,
    params={
        "n_samples": Param(int, 1, 20_000),
        "kernel_width": Param(float, 1e-6, 1e6),
        "alpha": Param(float, 0.0, 1e6),
        "mode": Param(str, choices=("drop", "zero")),
        "output": OUTPUT,
        "unit": UNIT,
        "seed": SEED,
        "batch_size": FORWARD_BATCH,
    },
)
def lime(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    *,
    n_samples: int = 5000,
    kernel_width: float = 25.0,
    alpha: float = 1.0,
    mode: str = "drop",
    output: str = "p",
    unit: str = "word",
    seed: int = 0,
    batch_size: int = LIME_BATCH,
) -> torch.Tensor:
    """LIME (Ribeiro et al. 2016): weighted ridge regression of p(k | sample) on unit masks."""
    rows, all_masks, units, sample_row = lime_rows(
        batch, n_samples=n_samples, mode=mode, unit=unit, seed=seed
    )
    logits = forward_logits(bundle.model, rows, batch_size, chunk_tokens(bundle.model, batch.ids.device))
    scores = class_output(logits, target[rows.doc], output).double().cpu().numpy()[sample_row]
    relevance = np.zeros((len(batch.texts), max(m.shape[1] for m in all_masks)))
    offset = 0
    for b, masks in enumerate(all_masks):
        y = scores[offset : offset + len(masks)]
        offset += len(masks)
        beta, _ = weighted_ridge(masks.astype(np.float64), y, kernel_weights(masks, kernel_width), alpha)
        relevance[b, : len(beta)] = beta
    return units_to_tokens(torch.as_tensor(relevance, dtype=torch.float32, device=batch.ids.device), units)


def _merge_zero(rows: list[Perturbed], width: int) -> torch.Tensor | None:
    if all(r.zero is None for r in rows):
        return None
    parts = [
        torch.nn.functional.pad(
            r.zero if r.zero is not None else torch.zeros_like(r.mask), (0, width - r.mask.shape[1])
        )
        for r in rows
    ]
    return torch.cat(parts)
