"""Lexical similarity (Sen et al. 2020 §4.2, Def. 4.2): do human and machine select the same kinds of words?

dist(words) is the distribution of the selected words over the 36 Penn Treebank tags
(:data:`~explain_engine.metrics.pos.TAGSET`; words tagged as punctuation fall outside it), and
LS(M, H) = Pearson r(dist(words_H), dist(words_M)) over all texts of a data set. A continuous
machine map selects its top-k words per text, k the number the human selected in that text.
Adjusted LS = (LS(M, H) − LS(R, H)) / (1 − LS(R, H)) with R a random top-k selection.

Per-text tag counts come from one ``np.bincount``; the bootstrap over texts resamples those counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, bootstrap
from explain_engine.metrics.pos import PENN_TAGS, TAG_INDEX, TAGSET
from explain_engine.metrics.ragged import Ragged, as_ragged, top_k_mask
from explain_engine.metrics.ragged import random_ranks as random_ranks_of

N_TAGS = len(TAGSET)


def encode_tags(tags: Sequence[Sequence[str]] | Ragged) -> Ragged:
    """Tag strings per text → tag codes (index into TAGSET; -1 for tags outside it)."""
    if isinstance(tags, Ragged):
        return tags
    lengths = np.fromiter((len(t) for t in tags), dtype=np.int64, count=len(tags))
    codes = np.fromiter(
        (TAG_INDEX.get(t, -1) for text in tags for t in text), dtype=np.int16, count=int(lengths.sum())
    )
    return Ragged(codes, lengths)


def tag_cells(tags: Ragged) -> np.ndarray:
    """Flat (text, tag) cell of every word; words outside the tagset go to a spare last cell."""
    cell = tags.segments * N_TAGS + tags.values
    cell[tags.values < 0] = len(tags) * N_TAGS
    return cell


def tag_counts(tags: Ragged, selected: Ragged, cells: np.ndarray | None = None) -> np.ndarray:
    """Texts × 36 counts of the selected words per tag (``cells``: :func:`tag_cells`, if cached)."""
    tags.same_shape(selected, "tags and selection")
    if cells is None:
        cells = tag_cells(tags)
    weights = (np.asarray(selected.values) > 0).astype(np.float64)
    counts = np.bincount(cells, weights=weights, minlength=len(tags) * N_TAGS + 1)
    return counts[:-1].reshape(len(tags), N_TAGS)


def tag_distribution(tags: Ragged, selected: Ragged | None = None) -> np.ndarray:
    """The share of each Penn tag among the selected words (all words when ``selected`` is None)."""
    sel = tags.with_values(np.ones(tags.values.shape[0], np.int8)) if selected is None else selected
    counts = tag_counts(tags, sel).sum(axis=0)
    total = counts.sum()
    return counts / total if total else counts


def _distribution_pearson(h_counts: np.ndarray, m_counts: np.ndarray):
    """LS as a function of text weights: Pearson r of the two pooled tag distributions."""

    def stat(w: np.ndarray) -> np.ndarray:
        h = w @ h_counts
        m = w @ m_counts
        # a resample with no selected words has no distribution: its r is NaN (left out of the CI)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = h / h.sum(axis=1, keepdims=True)
            m = m / m.sum(axis=1, keepdims=True)
            hc = h - h.mean(axis=1, keepdims=True)
            mc = m - m.mean(axis=1, keepdims=True)
            return (hc * mc).sum(axis=1) / np.sqrt((hc * hc).sum(axis=1) * (mc * mc).sum(axis=1))

    return stat


def machine_selection(
    human: Ragged, machine: Ragged, select: str = "top_k", ranks: Ragged | None = None
) -> Ragged:
    """The words a machine map selects: its top-k per text (k from ``human``), or its 1s (``"binary"``).

    ``ranks``: :func:`~explain_engine.metrics.ragged.descending_ranks` of ``machine``, if cached.
    """
    human.same_shape(machine, "human and machine maps")
    if select == "top_k":
        return top_k_mask(machine, human.sums().astype(np.int64), ranks)
    if select == "binary":
        return machine.with_values(machine.values > 0)
    raise ValueError(f"unknown selection {select!r}; use 'top_k' or 'binary'")


def lexical_similarity(
    tags: Sequence[Sequence[str]] | Ragged,
    human: Ragged | Sequence[Sequence[float]],
    machine: Ragged | Sequence[Sequence[float]],
    select: str = "top_k",
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
    ranks: Ragged | None = None,
) -> Estimate:
    """LS(M, H) of Sen et al. 2020 Def. 4.2 with a bootstrap interval over texts.

    ``ranks``: :func:`~explain_engine.metrics.ragged.descending_ranks` of ``machine``, if cached.
    """
    t = encode_tags(tags)
    h = as_ragged(human)
    m_sel = machine_selection(h, as_ragged(machine), select, ranks)
    cells = tag_cells(t)
    stat = _distribution_pearson(tag_counts(t, h, cells), tag_counts(t, m_sel, cells))
    return bootstrap(stat, len(t), n_boot, level, seed)


def random_lexical_similarity(
    tags: Sequence[Sequence[str]] | Ragged,
    human: Ragged | Sequence[Sequence[float]],
    draws: int = 10,
    seed: int | None = 0,
    random_ranks: Sequence[Ragged] | None = None,
) -> Estimate:
    """LS(R, H) for R selecting k random words per text, averaged over ``draws`` random draws.

    ``extra["sd"]`` is the standard deviation over draws (Sen et al. 2020 Table 3 reports mean ± sd).
    ``random_ranks``: one random ranking per draw (:func:`~explain_engine.metrics.ragged.random_ranks`)
    to share between several human references of the same texts.
    """
    t = encode_tags(tags)
    h = as_ragged(human)
    k = h.sums().astype(np.int64)
    cells = tag_cells(t)
    h_counts = tag_counts(t, h, cells)
    ones = np.ones((1, len(t)))
    if random_ranks is None:
        rng = np.random.default_rng(seed)
        random_ranks = [random_ranks_of(h.lengths, rng) for _ in range(draws)]
    draws = len(random_ranks)

    def one_draw(ranks: Ragged) -> float:
        chosen = ranks.with_values(ranks.values < k[ranks.segments])
        return float(_distribution_pearson(h_counts, tag_counts(t, chosen, cells))(ones)[0])

    values = np.array([one_draw(r) for r in random_ranks])
    sd = float(values.std(ddof=1)) if draws > 1 else math.nan
    return Estimate(float(values.mean()), len(t), extra={"sd": sd, "draws": draws})


def adjusted_lexical_similarity(ls_machine: float, ls_random: float) -> float:
    """(LS(M, H) − LS(R, H)) / (1 − LS(R, H)); 0 = no better than random, 1 = perfect."""
    if ls_random >= 1.0:
        return math.nan
    return (ls_machine - ls_random) / (1.0 - ls_random)


def tag_distribution_table(
    tags: Sequence[Sequence[str]] | Ragged,
    human_selected: Ragged | Sequence[Sequence[float]],
    machine_selected: Ragged | Sequence[Sequence[float]] | None = None,
) -> list[dict]:
    """Sen et al. 2020 Table 5: per Penn tag, its share among human-selected words, machine-selected
    words (when given) and all words of the corpus."""
    t = encode_tags(tags)
    human = tag_distribution(t, as_ragged(human_selected))
    machine = tag_distribution(t, as_ragged(machine_selected)) if machine_selected is not None else None
    corpus = tag_distribution(t)
    rows = []
    for i, (tag, name) in enumerate(PENN_TAGS):
        row = {"tag": tag, "category": name, "human": float(human[i]), "corpus": float(corpus[i])}
        if machine is not None:
            row["machine"] = float(machine[i])
        rows.append(row)
    return rows
