"""Evidence and counter-evidence texts from word relevance (Lertvittayakumjorn & Toni 2019 §4.3).

* word level: the top-m words (evidence) or the bottom-m words (counter-evidence);
* n-gram level: all n-grams with n in ``sizes`` (the CNN's filter sizes) are scored by the sum of
  their words' relevance; the m highest-scoring n-grams that do not overlap are chosen greedily
  (counter-evidence: the m lowest); a method that detects its own n-grams (Grad-CAM-Text: those its
  filters detected, §4.3.1) passes them as ``candidates``, and only they are scored.

Every piece of evidence is returned as a character span into the text (through the canonical
word offsets of :mod:`explain_engine.text`), with its word range and score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from explain_engine.text import char_span_of_words, word_spans


@dataclass(frozen=True)
class Evidence:
    """One evidence text: characters ``[start, end)``, words ``[first_word, end_word)``, its score."""

    start: int
    end: int
    first_word: int
    end_word: int
    score: float
    text: str

    def to_dict(self) -> dict:
        return asdict(self)


def top_words(scores: Sequence[float] | np.ndarray, m: int = 3, counter: bool = False) -> list[int]:
    """Indices of the m highest-scoring words (lowest with ``counter``), best first; ties by position."""
    values = np.asarray(scores, dtype=np.float64)
    order = np.argsort(values if counter else -values, kind="stable")
    return [int(i) for i in order[:m]]


def ngram_scores(scores: np.ndarray, n: int) -> np.ndarray:
    """Sum of relevance of every n-gram ``[i, i + n)`` of the words (length ``len(scores) − n + 1``)."""
    cumulative = np.concatenate([[0.0], np.cumsum(scores)])
    return cumulative[n:] - cumulative[:-n]


def top_ngrams(
    scores: Sequence[float] | np.ndarray,
    sizes: Sequence[int] = (2, 3, 4),
    m: int = 3,
    counter: bool = False,
    candidates: Sequence[tuple[int, int]] | None = None,
) -> list[tuple[int, int, float]]:
    """The m best non-overlapping n-grams as ``(first_word, end_word, score)``, chosen greedily.

    A text shorter than the smallest n contributes itself as its one n-gram. ``candidates`` (word
    ranges) replaces all n-grams of the ``sizes`` by those ranges alone.
    """
    values = np.asarray(scores, dtype=np.float64)
    n_words = len(values)
    if n_words == 0 or m <= 0:
        return []
    if candidates is not None:
        ranges = sorted({(int(a), int(b)) for a, b in candidates if 0 <= a < b <= n_words})
        if not ranges:
            return []
        cumulative = np.concatenate([[0.0], np.cumsum(values)])
        first = np.array([a for a, _ in ranges])
        length = np.array([b - a for a, b in ranges])
        total = cumulative[first + length] - cumulative[first]
        return _greedy(first, length, total, n_words, m, counter)
    firsts, lengths, sums = [], [], []
    for n in sorted(set(int(s) for s in sizes)):
        n = min(n, n_words)
        sums.append(ngram_scores(values, n))
        firsts.append(np.arange(n_words - n + 1))
        lengths.append(np.full(n_words - n + 1, n))
    first, length, total = np.concatenate(firsts), np.concatenate(lengths), np.concatenate(sums)
    return _greedy(first, length, total, n_words, m, counter)


def _greedy(
    first: np.ndarray, length: np.ndarray, total: np.ndarray, n_words: int, m: int, counter: bool
) -> list[tuple[int, int, float]]:
    """The m best of the n-grams ``[first, first + length)`` by ``total`` that do not overlap."""
    order = np.lexsort((first, length, total if counter else -total))
    taken = np.zeros(n_words, dtype=bool)
    chosen: list[tuple[int, int, float]] = []
    for i in order:
        a, b = int(first[i]), int(first[i] + length[i])
        if taken[a:b].any():
            continue
        taken[a:b] = True
        chosen.append((a, b, float(total[i])))
        if len(chosen) == m:
            break
    return chosen


def select_evidence(
    text: str,
    scores: Sequence[float] | np.ndarray,
    m: int = 3,
    sizes: Sequence[int] | None = None,
    counter: bool = False,
    spans: Sequence[Sequence[int]] | None = None,
    candidates: Sequence[tuple[int, int]] | None = None,
) -> list[Evidence]:
    """Top-m evidence (``counter=True``: counter-evidence) of ``text`` as character spans.

    ``sizes`` None selects single words; otherwise non-overlapping n-grams with n in ``sizes``, or
    only among ``candidates`` (word ranges) when the method detected its own n-grams.
    ``scores`` are per canonical word (``spans`` default to the text's whitespace words).
    """
    spans = word_spans(text) if spans is None else spans
    values = np.asarray(scores, dtype=np.float64)
    if len(values) != len(spans):
        raise ValueError(f"{len(values)} scores for {len(spans)} words")
    if sizes is None:
        ranges = [(i, i + 1, float(values[i])) for i in top_words(values, m, counter)]
    else:
        ranges = top_ngrams(values, sizes, m, counter, candidates)
    out = []
    for first, end, score in ranges:
        start, stop = char_span_of_words(spans, first, end)
        out.append(Evidence(start, stop, first, end, score, text[start:stop]))
    return out


def evidence_and_counter(
    text: str,
    scores: Sequence[float] | np.ndarray,
    m: int = 3,
    sizes: Sequence[int] | None = None,
    spans: Sequence[Sequence[int]] | None = None,
    counter_scores: Sequence[float] | np.ndarray | None = None,
    candidates: Sequence[tuple[int, int]] | None = None,
) -> dict[str, list[Evidence]]:
    """``{"evidence": [...], "counter_evidence": [...]}`` for one text (Lertvittayakumjorn & Toni 2019's tasks 1–3).

    Counter-evidence is the bottom m of ``scores``, or of ``counter_scores`` when a method ranks it
    apart (Grad-CAM-Text: evidence from the max part of eq. 1, counter-evidence from the min part).
    ``candidates``: the n-grams (word ranges) a method detected, the only ones n-gram evidence is
    chosen from (Grad-CAM-Text, §4.3.1).
    """
    counter = scores if counter_scores is None else counter_scores
    return {
        "evidence": select_evidence(text, scores, m, sizes, False, spans, candidates),
        "counter_evidence": select_evidence(text, counter, m, sizes, True, spans, candidates),
    }
