"""Random baselines (Poerner et al. 2018 §4.1; Lertvittayakumjorn & Toni 2019 §4.3, Random (W) and Random (N)).

* ``random``: every word an independent U(0, 1) score, so the maximally relevant word is uniform
  over the words and top-m evidence is a uniform random set of words;
* ``random_ngram``: the text is cut into consecutive n-grams at a random offset (n drawn from
  ``sizes``, by default the CNN's filter sizes or (2, 3, 4)) and every n-gram gets one U(0, 1)
  score shared by its words, so top-m non-overlapping n-gram evidence picks random n-grams.

Scores depend only on ``seed`` and the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from explain_engine.explainers.perturbation import text_rng, unit_index, units_to_tokens
from explain_engine.explainers.registry import SEED, Param, register
from explain_engine.models.base import EncodedBatch

DEFAULT_SIZES = (2, 3, 4)


def _word_scores(batch: EncodedBatch, fill) -> torch.Tensor:
    units, n_units = unit_index(batch, "word")
    table = np.zeros((len(batch.texts), max(1, int(n_units.max()))))
    for b, text in enumerate(batch.texts):
        n = int(n_units[b])
        table[b, :n] = fill(text, n)
    return units_to_tokens(torch.as_tensor(table, dtype=torch.float32, device=batch.ids.device), units)


@register(
    "random", title="Random scores", source="Poerner et al. 2018 §4.1", samples=True, params={"seed": SEED}
)
def random_words(
    bundle: Any, batch: EncodedBatch, target: torch.Tensor, *, seed: int = 0, **_: Any
) -> torch.Tensor:
    """Independent uniform scores per word."""
    return _word_scores(batch, lambda text, n: text_rng(seed, text).random(n))


def random_segments(rng: np.random.Generator, n_words: int, sizes: Sequence[int]) -> np.ndarray:
    """Scores shared within consecutive n-grams cut at a random offset."""
    n = int(rng.choice(np.asarray(sizes)))
    offset = int(rng.integers(0, n))
    segment = (np.arange(n_words) + offset) // n
    return rng.random(int(segment.max()) + 1)[segment]


@register(
    "random_ngram",
    title="Random n-gram scores",
    source="Lertvittayakumjorn & Toni 2019 §4.3",
    samples=True,
    params={"seed": SEED, "sizes": Param(list, 1, 20, optional=True)},
)
def random_ngrams(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    *,
    seed: int = 0,
    sizes: Sequence[int] | None = None,
    **_: Any,
) -> torch.Tensor:
    """One uniform score per random n-gram (n from the CNN's filter sizes)."""
    sizes = tuple(sizes or getattr(bundle.model, "filter_sizes", None) or DEFAULT_SIZES)
    return _word_scores(batch, lambda text, n: random_segments(text_rng(seed + 1, text), n, sizes))
