"""Cross-sentiment selection rate (Sen et al. 2020 §4.3, Def. 4.3) with an opinion lexicon (P, N).

CSSR_p = |p_words ∩ N| / |p_words ∩ P| over the words selected in positive texts (Y = 1) and
CSSR_n = |n_words ∩ P| / |n_words ∩ N| over those selected in negative texts (Y = 0); word lists
are multisets (every selected occurrence counts). A high CSSR means many words of the opposite
sentiment were selected.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from explain_engine.lexicon import NEGATIVE, POSITIVE, OpinionLexicon
from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, bootstrap
from explain_engine.metrics.ragged import Ragged, as_ragged


def polarity_codes(words: Sequence[Sequence[str]], lexicon: OpinionLexicon) -> Ragged:
    """Per text, the lexicon flags of each word (:data:`~explain_engine.lexicon.POSITIVE` |
    :data:`~explain_engine.lexicon.NEGATIVE`). A one-off per document: each distinct word is
    looked up once."""
    lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
    cache: dict[str, int] = {}
    flat = (cache[w] if w in cache else cache.setdefault(w, lexicon.polarity(w)) for ws in words for w in ws)
    return Ragged(np.fromiter(flat, dtype=np.int8, count=int(lengths.sum())), lengths)


def _ratio_statistic(numerator: np.ndarray, denominator: np.ndarray):
    def stat(w: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return (w @ numerator) / (w @ denominator)

    return stat


def cssr(
    polarity: Ragged,
    selected: Ragged | Sequence[Sequence[float]],
    labels: Sequence[int],
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> dict[str, Estimate]:
    """``{"cssr_p": ..., "cssr_n": ...}`` with bootstrap intervals over the texts of each class.

    ``labels`` are the texts' gold labels (1 positive, 0 negative; others are ignored). ``extra``
    holds the counts: ``cross`` (opposite-sentiment selections) and ``same``.
    """
    sel = as_ragged(selected)
    polarity.same_shape(sel, "polarity and selection")
    y = np.asarray(labels)
    if y.shape != (len(sel),):
        raise ValueError(f"labels need one entry per text ({len(sel)}), got shape {y.shape}")
    chosen = sel.values > 0
    pos = sel.sums(chosen & ((polarity.values & POSITIVE) > 0))
    neg = sel.sums(chosen & ((polarity.values & NEGATIVE) > 0))
    out = {}
    for name, cls, cross, same in (("cssr_p", 1, neg, pos), ("cssr_n", 0, pos, neg)):
        mask = y == cls
        extra = {"cross": int(cross[mask].sum()), "same": int(same[mask].sum())}
        stat = _ratio_statistic(cross[mask], same[mask])
        out[name] = bootstrap(stat, int(mask.sum()), n_boot, level, seed, extra=extra)
    return out
