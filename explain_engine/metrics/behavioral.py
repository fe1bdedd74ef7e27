"""Behavioral similarity (Sen et al. 2020 §4.1) and the human maps it compares: HAMs, CAM and SAM.

Behavioral similarity of a machine M to humans H over a data set D is the mean, over texts, of the
ROC AUC of M's continuous map against H's binary map (Def. 4.1). Human against human: one map is
the truth, the other the score. A text whose human map is all 0 or all 1 has no AUC; it is skipped
and counted. The per-text AUCs of all texts come from one rank computation (Mann–Whitney U with
tied scores given their average rank), with no loop over texts.

:class:`HumanMaps` holds every human map of a collection flat; consensus (CAM, bitwise AND of a
text's maps, Def. 2.4) and super (SAM, OR, Def. 2.5) maps come from one segment sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, mean_estimate
from explain_engine.metrics.ragged import Ragged, as_ragged, sort_within_texts


def average_ranks(scores: Ragged) -> Ragged:
    """1-based rank of each value within its text, tied values sharing their average rank.

    0/1 maps (human maps used as scores) need no sort: zeros share rank (n₀ + 1)/2, ones n₀ + (n₁ + 1)/2.
    """
    v = np.asarray(scores.values, dtype=np.float64)
    seg = scores.segments
    if v.size and np.all((v == 0.0) | (v == 1.0)):
        ones = scores.sums(v)[seg]
        zeros = scores.lengths[seg] - ones
        return scores.with_values(np.where(v > 0, zeros + (ones + 1.0) / 2.0, (zeros + 1.0) / 2.0))
    order = sort_within_texts(scores)
    sv, gv = v[order], seg[order]
    n = order.shape[0]
    new = np.ones(n, dtype=bool)
    new[1:] = (gv[1:] != gv[:-1]) | (sv[1:] != sv[:-1])
    group = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    last = np.append(first[1:], n) - 1
    ranks = np.empty(n)
    ranks[order] = (first[group] + last[group]) / 2.0 - scores.starts[gv] + 1.0
    return scores.with_values(ranks)


def roc_auc_per_text(
    truth: Ragged | Sequence[Sequence[float]],
    scores: Ragged | Sequence[Sequence[float]],
    ranks: Ragged | None = None,
) -> np.ndarray:
    """ROC AUC of ``scores`` against binary ``truth``, per text (NaN where truth is constant).

    AUC = (R₊ − n₊(n₊ + 1)/2) / (n₊ n₋), R₊ the sum of the positives' ranks within their text, ties
    ranked by their average (so equal to ``sklearn.metrics.roc_auc_score`` text by text).
    ``ranks`` (:func:`average_ranks` of ``scores``) saves the sort when scores are reused.
    """
    y = as_ragged(truth)
    s = as_ragged(scores)
    y.same_shape(s, "truth and scores")
    if not np.isfinite(s.values).all():
        raise ValueError("scores contain NaN or infinite values")
    if ranks is None:
        ranks = average_ranks(s)
    pos = (y.values > 0).astype(np.float64)
    n_pos = y.sums(pos)
    n_neg = y.lengths - n_pos
    rank_sum = y.sums(ranks.values * pos)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg)
    auc[(n_pos == 0) | (n_neg == 0)] = np.nan
    return auc


def behavioral_similarity(
    human: Ragged | Sequence[Sequence[float]],
    machine: Ragged | Sequence[Sequence[float]],
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
    ranks: Ragged | None = None,
) -> Estimate:
    """Mean per-text ROC AUC of ``machine`` against binary ``human`` (Sen et al. 2020 Def. 4.1).

    ``extra``: ``skipped`` (texts whose human map is constant) and ``texts`` (all texts given).
    ``ranks``: :func:`average_ranks` of ``machine``, when already computed.
    """
    aucs = roc_auc_per_text(human, machine, ranks)
    est = mean_estimate(aucs, n_boot, level, seed, texts=int(aucs.shape[0]))
    if "skipped" not in est.extra:
        est.extra["skipped"] = 0
    return est


def average_k(
    maps: Ragged | Sequence[Sequence[float]], n_boot: int = N_BOOT, seed: int | None = 0
) -> Estimate:
    """Mean number of selected words per map (Sen et al. 2020 Table 2's k)."""
    return mean_estimate(as_ragged(maps).sums(), n_boot, seed=seed)


def consensus_maps(maps: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """CAM (bitwise AND, Sen et al. 2020 Def. 2.4) and SAM (OR, Def. 2.5) of one text's equally long
    0/1 maps, as 0/1 lists; two empty lists when there is no map. :class:`HumanMaps` does the same
    for a whole collection at once."""
    if len(maps) == 0:
        return [], []
    if len({len(m) for m in maps}) != 1:
        raise ValueError("maps must be equally long lists of 0/1")
    stacked = np.asarray(maps, dtype=np.int64)
    selected = stacked != 0
    return selected.all(axis=0).astype(int).tolist(), selected.any(axis=0).astype(int).tolist()


@dataclass(eq=False)
class HumanMaps:
    """Every human map of a collection of texts, flat.

    ``maps`` has one row per annotation, annotations of a text consecutive and in their order;
    ``review[a]`` is the text of annotation ``a`` and ``slot[a]`` its position within that text
    (slot 0 = HAM₁). ``answers[a]`` is the annotator's label, ``labels`` the texts' gold labels.
    """

    ids: list[str]
    lengths: np.ndarray
    labels: np.ndarray
    maps: Ragged
    review: np.ndarray
    slot: np.ndarray
    answers: list

    @classmethod
    def from_records(
        cls, records: Sequence[dict], max_maps: int | None = None, min_maps: int = 1
    ) -> HumanMaps:
        """From ``yelphat convert`` records: the first ``max_maps`` maps of texts having ≥ ``min_maps``."""
        recs = [r for r in records if len(r["annotations"]) >= min_maps]
        anns = [r["annotations"][:max_maps] for r in recs]
        per_review = np.fromiter((len(a) for a in anns), dtype=np.int64, count=len(anns))
        flat = list(chain.from_iterable(anns))
        lengths = np.fromiter((len(r["words"]) for r in recs), dtype=np.int64, count=len(recs))
        map_lengths = np.repeat(lengths, per_review)
        values = np.fromiter(
            chain.from_iterable(a["map"] for a in flat), dtype=np.int8, count=int(map_lengths.sum())
        )
        review = np.repeat(np.arange(len(recs)), per_review)
        first_ann = np.concatenate([[0], np.cumsum(per_review)[:-1]]) if len(recs) else np.zeros(0, np.int64)
        slot = np.arange(len(flat)) - first_ann[review]
        return cls(
            ids=[r["id"] for r in recs],
            lengths=lengths,
            labels=np.array([-1 if r.get("label") is None else r["label"] for r in recs], dtype=np.int64),
            maps=Ragged(values, map_lengths),
            review=review,
            slot=slot,
            answers=[a.get("label") for a in flat],
        )

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def maps_per_text(self) -> np.ndarray:
        return np.bincount(self.review, minlength=len(self))

    @property
    def n_slots(self) -> int:
        return int(self.slot.max()) + 1 if self.slot.size else 0

    def annotation_table(self) -> np.ndarray:
        """Texts × slots index of each annotation in ``maps`` (-1 where a text has fewer maps)."""
        table = np.full((len(self), self.n_slots), -1, dtype=np.int64)
        table[self.review, self.slot] = np.arange(self.review.shape[0])
        return table

    def slot_maps(self, s: int) -> tuple[np.ndarray, Ragged]:
        """The texts that have a map in slot ``s`` (HAM_{s+1}) and those maps."""
        ann = np.flatnonzero(self.slot == s)
        return self.review[ann], self.maps.take(ann)

    def word_table(self) -> np.ndarray:
        """Word selections as ratings (Sen et al. 2020 §4.1's agreement over words): one row per word of
        every text with two or more maps, ``[maps not selecting it, maps selecting it]``, the table
        :func:`~explain_engine.metrics.agreement.fleiss_kappa_from_counts` reads."""
        per_word_n = np.repeat(self.maps_per_text, self.lengths)
        selected = self.word_sums()
        keep = per_word_n >= 2
        return np.stack([per_word_n[keep] - selected[keep], selected[keep]], axis=1).astype(np.int64)

    def word_sums(self) -> np.ndarray:
        """Per word of every text (texts concatenated), how many of the text's maps selected it."""
        word_start = (
            np.concatenate([[0], np.cumsum(self.lengths)[:-1]]) if len(self) else np.zeros(0, np.int64)
        )
        idx = word_start[self.review[self.maps.segments]] + self.maps.positions
        return np.bincount(
            idx, weights=self.maps.values.astype(np.float64), minlength=int(self.lengths.sum())
        )

    def _combined(self, min_maps: int, consensus: bool) -> tuple[np.ndarray, Ragged]:
        sums = self.word_sums()
        n_maps = self.maps_per_text
        values = sums == np.repeat(n_maps, self.lengths) if consensus else sums > 0
        texts = np.flatnonzero(n_maps >= min_maps)
        return texts, Ragged(values.astype(np.int8), self.lengths).take(texts)

    def consensus(self, min_maps: int = 2) -> tuple[np.ndarray, Ragged]:
        """CAM (AND of a text's maps) of the texts with ≥ ``min_maps`` maps."""
        return self._combined(min_maps, consensus=True)

    def super_map(self, min_maps: int = 2) -> tuple[np.ndarray, Ragged]:
        """SAM (OR of a text's maps) of the texts with ≥ ``min_maps`` maps."""
        return self._combined(min_maps, consensus=False)

    def references(self, min_maps: int = 2) -> dict[str, tuple[np.ndarray, Ragged]]:
        """``{"HAM1": ..., "HAM2": ..., "CAM": ..., "SAM": ...}``: texts and maps of each human reference."""
        refs = {f"HAM{s + 1}": self.slot_maps(s) for s in range(self.n_slots)}
        refs["CAM"] = self.consensus(min_maps)
        refs["SAM"] = self.super_map(min_maps)
        return refs


def human_human_similarity(
    humans: HumanMaps, n_boot: int = N_BOOT, level: float = LEVEL, seed: int | None = 0
) -> list[dict]:
    """Behavioral similarity between annotator slots, both ways, over the texts that have both.

    One row per ordered pair: ``{"truth": "HAM1", "score": "HAM2", **Estimate.to_dict()}`` — the
    truth map is the binary ground truth and the other map the score (Sen et al. 2020 Table 2: the
    column is the truth, the row the score).
    """
    table = humans.annotation_table()
    rows = []
    for t in range(humans.n_slots):
        for s in range(humans.n_slots):
            if s == t:
                continue
            both = (table[:, t] >= 0) & (table[:, s] >= 0)
            if not both.any():
                continue
            truth = humans.maps.take(table[both, t])
            score = humans.maps.take(table[both, s])
            est = behavioral_similarity(truth, score, n_boot, level, seed)
            rows.append({"truth": f"HAM{t + 1}", "score": f"HAM{s + 1}", **est.to_dict()})
    return rows
