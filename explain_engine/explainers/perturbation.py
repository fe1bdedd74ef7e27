"""Input perturbation: omission and occlusion of N-grams (Poerner et al. 2018 §3.5), and the machinery that
every perturbation method (omission, occlusion, LIMSSE, LIME) shares.

φ_[omit|occ]N(t, k, X) = 1/N Σ_{j=1..N} [ s(k, X) − s(k, X with the j-th N-gram containing t removed) ]

Omission deletes the N-gram (the sequence gets shorter); occlusion replaces it with N all-zero
embeddings. N-grams that run over an edge of the text are clipped to it, so every unit lies in
exactly N N-grams and all N are averaged. Units are canonical words by default (``unit="word"``:
all tokens of a word go together) or model tokens (``unit="token"``); a unit's score is placed on
its first token, so pooling to words (sum) returns it unchanged. Tokens of no word (owner ``-1``, a
transformer's special tokens) are no unit: every perturbed row keeps them.

Written by hand (Captum's ``Occlusion`` works on fixed-shape sliding windows and has no
omission); perturbed inputs are built as whole tensors and run in length-sorted chunks, the
unperturbed texts among them. A Kim CNN runs them through :func:`cnn_lookup_logits`, the same
function computed from a per-token lookup table.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from explain_engine.explainers._forward import run_chunk
from explain_engine.explainers.registry import FORWARD_BATCH, OUTPUT, UNIT, register
from explain_engine.models.base import EncodedBatch, TextClassifier
from explain_engine.models.cnn import KimCNN

NGRAM_SIZES = (1, 3, 7)
NGRAM_BATCH = 512  # rows per forward chunk at most (and see chunk_tokens)
CPU_CHUNK_TOKENS = 4096
CNN_CHUNK_TOKENS = 16384


def text_rng(seed: int, text: str) -> np.random.Generator:
    """A generator that depends only on ``seed`` and the text, not on batching or order."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(text.encode("utf-8"))])


def unit_index(batch: EncodedBatch, unit: str = "word") -> tuple[torch.Tensor, torch.Tensor]:
    """Unit of every token ``(B, T)`` and the number of units per text ``(B,)``.

    The unit is −1 on padding and on tokens of no word (owner −1), which perturbations never remove.
    """
    if unit not in ("word", "token"):
        raise ValueError(f"unknown unit {unit!r}; use 'word' or 'token'")
    mask = batch.mask
    table = np.full(mask.shape, -1, dtype=np.int64)
    counts = np.fromiter((len(o) for o in batch.owners), dtype=np.int64, count=len(batch.owners))
    rows = np.repeat(np.arange(len(counts)), counts)
    cols = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    table[rows, cols] = np.fromiter(
        (w for owners in batch.owners for w in owners), dtype=np.int64, count=len(rows)
    )
    units = torch.from_numpy(table).to(mask.device).masked_fill(~mask, -1)
    if unit == "token":  # the word tokens, numbered in order
        in_word = units >= 0
        units = torch.where(in_word, torch.cumsum(in_word, dim=1) - 1, -1)
    return units, (units.max(dim=1).values + 1).clamp_min(0)


def units_to_tokens(unit_scores: torch.Tensor, units: torch.Tensor) -> torch.Tensor:
    """``(B, U)`` unit scores → ``(B, T)`` token scores: each unit's score on its first token."""
    first = units >= 0
    first[:, 1:] &= units[:, 1:] != units[:, :-1]
    gathered = unit_scores.gather(1, units.clamp_min(0))
    return torch.where(first, gathered, torch.zeros_like(gathered))


@dataclass
class Perturbed:
    """Perturbed copies of a batch's texts, one per row.

    ``ids``/``mask`` ``(R, T)``; ``zero`` ``(R, T)`` marks positions whose embedding is replaced by
    the all-zero vector (None: none); ``doc`` ``(R,)`` is the text each row perturbs.
    """

    ids: torch.Tensor
    mask: torch.Tensor
    zero: torch.Tensor | None
    doc: torch.Tensor

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def dropped(ids: torch.Tensor, keep: torch.Tensor, doc: torch.Tensor) -> Perturbed:
    """Rows with the tokens where ``keep`` is False deleted (the rest shift left, order kept).

    A row with nothing left becomes one all-zero embedding, the nearest input to an empty text.
    """
    kept_before = torch.cumsum(keep, dim=1)  # a kept token moves to position (kept tokens before it)
    lengths = kept_before[:, -1] if ids.shape[1] else keep.sum(1)
    spare = ids.shape[1]  # deleted tokens go to a spare column, cut off below
    column = torch.where(keep, kept_before - 1, spare)
    new_ids = ids.new_zeros(ids.shape[0], spare + 1).scatter_(1, column, ids)[:, :spare]
    positions = torch.arange(ids.shape[1], device=ids.device)
    new_mask = positions[None, :] < lengths[:, None]
    empty = lengths == 0
    zero = None
    if bool(empty.any()):
        new_mask[empty, 0] = True
        new_ids[empty, 0] = 0
        zero = torch.zeros_like(new_mask)
        zero[empty, 0] = True
    new_ids = new_ids.masked_fill(~new_mask, 0)
    width = max(1, int(new_mask.sum(1).max()))
    return Perturbed(new_ids[:, :width], new_mask[:, :width], None if zero is None else zero[:, :width], doc)


def chunk_tokens(model: torch.nn.Module, device: torch.device | str) -> int | None:
    """The token budget of one forward chunk of perturbed rows (rows × width), or None for no budget.

    On a CPU, chunks that fit in cache run faster per token than large ones: about 4096 tokens for
    the recurrent models, 16384 for a Kim CNN read from its lookup table (each chunk builds its own
    table). A GPU takes chunks of as many rows as a method allows.
    """
    if torch.device(device).type != "cpu":
        return None
    return CNN_CHUNK_TOKENS if isinstance(model, KimCNN) else CPU_CHUNK_TOKENS


def iter_chunks(
    perturbed: Perturbed, batch_size: int = 512, max_tokens: int | None = None
) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]]:
    """Row indices and inputs of length-sorted chunks, each trimmed to its longest row.

    A chunk holds at most ``batch_size`` rows and, given ``max_tokens``, at most that many padded
    tokens (rows × the chunk's width; at least one row).
    """
    lengths = perturbed.mask.sum(1)
    order = torch.argsort(lengths, descending=True)
    widths = lengths[order].clamp_min(1).tolist()
    start = 0
    while start < len(perturbed):
        width = int(widths[start])
        size = batch_size if max_tokens is None else max(1, min(batch_size, max_tokens // width))
        rows = order[start : start + size]
        start += size
        zero = None if perturbed.zero is None else perturbed.zero[rows, :width]
        yield rows, perturbed.ids[rows, :width], perturbed.mask[rows, :width], zero


def forward_logits(
    model: TextClassifier, perturbed: Perturbed, batch_size: int = 512, max_tokens: int | None = None
) -> torch.Tensor:
    """Logits ``(R, K)`` of every perturbed row (no gradients), in the rows' original order; chunks
    as :func:`iter_chunks` makes them."""
    out: torch.Tensor | None = None
    with torch.inference_mode():
        for rows, ids, mask, zero in iter_chunks(perturbed, batch_size, max_tokens):
            logits = run_chunk(model, ids, mask, zero)
            if out is None:
                out = logits.new_empty((len(perturbed), logits.shape[1]))
            out[rows] = logits
    assert out is not None
    return out


def class_output(logits: torch.Tensor, target: torch.Tensor, output: str = "s") -> torch.Tensor:
    """s(k, ·) (``"s"``) or p(k | ·) (``"p"``) of class ``target`` per row."""
    if output == "p":
        logits = torch.softmax(logits, dim=-1)
    elif output != "s":
        raise ValueError(f"unknown output {output!r}; use 's' or 'p'")
    return logits.gather(1, target[:, None]).squeeze(1)


def ngram_windows(n_units: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All clipped N-gram windows: their text ``doc`` and first unit ``start`` (may be < 0)."""
    counts = n_units + n - 1
    doc = torch.repeat_interleave(torch.arange(len(n_units), device=n_units.device), counts)
    first_row = torch.cumsum(counts, 0) - counts
    offset = torch.arange(len(doc), device=n_units.device) - first_row[doc]
    return doc, offset - (n - 1)


def ngram_perturbations(batch: EncodedBatch, n: int, mode: str, unit: str = "word") -> tuple[Perturbed, Any]:
    """The perturbed rows of omission (``mode="omit"``) or occlusion (``"occ"``) of every N-gram.

    The last ``B`` rows are the texts themselves (a window that covers no unit), so the unperturbed
    scores come from the same forward passes.
    """
    if n < 1:
        raise ValueError("N must be positive")
    units, n_units = unit_index(batch, unit)
    doc, start = ngram_windows(n_units, n)
    texts = torch.arange(len(n_units), device=doc.device)
    doc = torch.cat([doc, texts])
    start = torch.cat([start, torch.full_like(texts, -(n + 1))])
    u = units[doc]
    removed = (u >= start[:, None]) & (u < start[:, None] + n) & (u >= 0)
    if mode == "occ":
        perturbed = Perturbed(batch.ids[doc], batch.mask[doc], removed, doc)
    elif mode == "omit":
        perturbed = dropped(batch.ids[doc], batch.mask[doc] & ~removed, doc)
    else:
        raise ValueError(f"unknown mode {mode!r}; use 'omit' or 'occ'")
    return perturbed, (units, n_units, start)


def ngram_relevance(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    *,
    n: int,
    mode: str,
    unit: str = "word",
    output: str = "s",
    batch_size: int = NGRAM_BATCH,
) -> torch.Tensor:
    """φ_omitN / φ_occN per token (Poerner et al. 2018 §3.5)."""
    perturbed, (units, n_units, start) = ngram_perturbations(batch, n, mode, unit)
    budget = chunk_tokens(bundle.model, batch.ids.device)
    logits = forward_logits(bundle.model, perturbed, batch_size, budget)
    scores = class_output(logits, target[perturbed.doc], output)
    texts = len(n_units)
    windows = len(perturbed) - texts
    full, doc = scores[windows:], perturbed.doc[:windows]
    diff = full[doc] - scores[:windows]
    width = int(n_units.max()) if texts else 0
    table = torch.zeros((texts, width + n), dtype=diff.dtype, device=diff.device)
    table[doc, start[:windows] + n] = diff
    cumulative = torch.cumsum(table, dim=1)
    index = torch.arange(width, device=diff.device)
    relevance = (cumulative[:, index + n] - cumulative[:, index]) / n
    return units_to_tokens(relevance, units)


def _register_ngram(mode: str, n: int) -> None:
    label = "omission" if mode == "omit" else "occlusion"

    def method(bundle: Any, batch: EncodedBatch, target: torch.Tensor, **params: Any) -> torch.Tensor:
        return ngram_relevance(bundle, batch, target, n=n, mode=mode, **params)

    method.__doc__ = f"{label.capitalize()} of {n}-grams: mean change of s(k, ·) (Poerner et al. 2018 §3.5)."
    method.__name__ = f"{mode}_{n}"
    register(
        f"{mode}_{n}",
        title=f"{label.capitalize()} of {n}-grams",
        source="Poerner et al. 2018 §3.5",
        params={"unit": UNIT, "output": OUTPUT, "batch_size": FORWARD_BATCH},
    )(method)


for _mode in ("omit", "occ"):
    for _n in NGRAM_SIZES:
        _register_ngram(_mode, _n)
