"""Ragged arrays: one flat numpy vector for many texts of different lengths.

Every per-text metric in this package works on a :class:`Ragged` (flat ``values`` plus per-text
``lengths``) so that it can use segment sums (``np.bincount``) and one sort instead of a Python
loop over texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True, eq=False)
class Ragged:
    """``values`` of all texts concatenated; ``lengths[i]`` values belong to text ``i``."""

    values: np.ndarray
    lengths: np.ndarray

    def __post_init__(self) -> None:
        lengths = np.asarray(self.lengths, dtype=np.int64)
        values = np.asarray(self.values)
        if lengths.ndim != 1 or values.ndim != 1 or (lengths < 0).any():
            raise ValueError("Ragged needs 1-D values and non-negative 1-D lengths")
        if int(lengths.sum()) != values.shape[0]:
            raise ValueError(f"lengths sum to {int(lengths.sum())} but there are {values.shape[0]} values")
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "values", values)

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[float] | np.ndarray], dtype=np.float64) -> Ragged:
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        if len(seqs) == 0:
            return cls(np.zeros(0, dtype=dtype), lengths)
        values = np.concatenate([np.asarray(s, dtype=dtype).ravel() for s in seqs])
        return cls(values.astype(dtype, copy=False), lengths)

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @cached_property
    def starts(self) -> np.ndarray:
        """Offset of each text's first value in ``values``."""
        out = np.zeros(len(self), dtype=np.int64)
        np.cumsum(self.lengths[:-1], out=out[1:])
        return out

    @cached_property
    def segments(self) -> np.ndarray:
        """The text index of every value."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.lengths)

    @cached_property
    def positions(self) -> np.ndarray:
        """The position of every value inside its text."""
        return np.arange(self.values.shape[0], dtype=np.int64) - self.starts[self.segments]

    def sums(self, values: np.ndarray | None = None) -> np.ndarray:
        """Per-text sums of ``values`` (default: this array's own values)."""
        v = self.values if values is None else values
        return np.bincount(self.segments, weights=np.asarray(v, dtype=np.float64), minlength=len(self))

    def with_values(self, values: np.ndarray) -> Ragged:
        """Same shape, other values (e.g. a mask computed from these)."""
        return Ragged(np.asarray(values), self.lengths)

    def take(self, idx: np.ndarray | Sequence[int]) -> Ragged:
        """The texts ``idx`` (in that order), without a Python loop."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.shape[0] == len(self) and np.array_equal(idx, np.arange(len(self))):
            return self
        lens = self.lengths[idx]
        new_starts = np.zeros(len(idx), dtype=np.int64)
        np.cumsum(lens[:-1], out=new_starts[1:])
        flat = np.repeat(self.starts[idx] - new_starts, lens) + np.arange(int(lens.sum()), dtype=np.int64)
        return Ragged(self.values[flat], lens)

    def to_lists(self) -> list[list]:
        return [a.tolist() for a in np.split(self.values, self.starts[1:])] if len(self) else []

    def same_shape(self, other: Ragged, what: str = "maps") -> None:
        """Raise ``ValueError`` naming the first text whose length differs."""
        if len(self) != len(other):
            raise ValueError(f"{what}: {len(self)} texts against {len(other)}")
        bad = np.flatnonzero(self.lengths != other.lengths)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{what}: text {i} has {self.lengths[i]} values against {other.lengths[i]}")


def as_ragged(maps: Ragged | Sequence[Sequence[float] | np.ndarray], dtype=np.float64) -> Ragged:
    """Accept a :class:`Ragged` or a list of per-text sequences."""
    if isinstance(maps, Ragged):
        return maps if maps.values.dtype == dtype else Ragged(maps.values.astype(dtype), maps.lengths)
    return Ragged.from_lists(maps, dtype=dtype)


def segment_min_max(r: Ragged) -> tuple[np.ndarray, np.ndarray]:
    """Per-text minimum and maximum of the values (0 for an empty text)."""
    lo = np.zeros(len(r))
    hi = np.zeros(len(r))
    full = np.flatnonzero(r.lengths > 0)
    if full.size:
        v = np.asarray(r.values, dtype=np.float64)
        lo[full] = np.minimum.reduceat(v, r.starts[full])
        hi[full] = np.maximum.reduceat(v, r.starts[full])
    return lo, hi


def sort_within_texts(scores: Ragged, descending: bool = False) -> np.ndarray:
    """The permutation that orders all values by text, then by score; equal scores keep their order.

    One float sort on the key ``text + score scaled into [0, 0.5]`` (far faster than a two-key
    ``np.lexsort``). Scaling is monotone and maps equal scores to equal keys; should two different
    scores of a text ever land on one key (a gap below ~1e-12 of the text's range), the order is
    redone with ``np.lexsort``, so the result is always exact.
    """
    s = np.asarray(scores.values, dtype=np.float64)
    if s.size == 0:
        return np.zeros(0, dtype=np.int64)
    seg = scores.segments
    lo, hi = segment_min_max(scores)
    span = hi - lo
    span[span == 0] = 1.0
    u = (s - lo[seg]) / span[seg]
    key = seg + 0.5 * (1.0 - u if descending else u)
    order = np.argsort(key, kind="stable")
    ks, ss, gs = key[order], s[order], seg[order]
    if np.any((gs[1:] == gs[:-1]) & (ks[1:] == ks[:-1]) & (ss[1:] != ss[:-1])):
        order = np.lexsort((-s if descending else s, seg))
    return order


def descending_ranks(scores: Ragged) -> Ragged:
    """0-based rank of each value within its text, highest score first (ties: earlier word first)."""
    order = sort_within_texts(scores, descending=True)
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0]) - scores.starts[scores.segments[order]]
    return scores.with_values(rank)


def random_ranks(lengths: np.ndarray, rng: np.random.Generator) -> Ragged:
    """A uniformly random ranking of the words of each text (0-based), from one sort."""
    lengths = np.asarray(lengths, dtype=np.int64)
    seg = np.repeat(np.arange(lengths.shape[0]), lengths)
    order = np.argsort(seg + 0.5 * rng.random(seg.shape[0]))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if lengths.size else lengths
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0]) - starts[seg[order]]
    return Ragged(rank, lengths)


def top_k_mask(scores: Ragged, k: np.ndarray | Sequence[int], ranks: Ragged | None = None) -> Ragged:
    """Per text, True on the ``k[i]`` highest scores (ties: the earlier word first).

    This is how Sen et al. 2020 §4.2 turns a continuous machine map into selected words: k is the number
    of words the human selected in that text. ``ranks`` (from :func:`descending_ranks`) saves the
    sort when several selections are made from the same scores.
    """
    k = np.asarray(k, dtype=np.int64)
    if k.shape != (len(scores),):
        raise ValueError(f"k needs one entry per text ({len(scores)}), got shape {k.shape}")
    if ranks is None:
        ranks = descending_ranks(scores)
    return scores.with_values(ranks.values < k[scores.segments])
