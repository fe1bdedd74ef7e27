"""One tokenisation rules everything.

A document's *canonical words* are fixed once, at import: whitespace-separated words,
stored as ``[start, end)`` character offsets into the text. Human maps are 0/1 vectors
over these words and every machine map is a float vector over them. Models may use finer
*tokens* (lower-cased, punctuation split off); their scores are pooled back to words
through the character offsets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

Span = tuple[int, int]

_WORD = re.compile(r"\S+")
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[^\w\s]|_", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*$")


def word_spans(text: str) -> list[Span]:
    """Character offsets of the whitespace words of ``text`` (``text.split()`` order)."""
    return [(m.start(), m.end()) for m in _WORD.finditer(text)]


def words_of(text: str, spans: Sequence[Sequence[int]]) -> list[str]:
    """The word strings that ``spans`` cut out of ``text``."""
    return [text[s:e] for s, e in spans]


def sentence_spans(text: str, spans: Sequence[Sequence[int]]) -> list[Span]:
    """Sentences as ``[first_word, end_word)`` index ranges over the canonical words.

    A sentence ends at a word whose last characters are ``.``, ``!`` or ``?`` (optionally
    followed by closing quotes or brackets), or at a line break between two words.
    """
    sentences: list[Span] = []
    start = 0
    for i, (s, e) in enumerate(spans):
        ends = bool(_SENTENCE_END.search(text[s:e]))
        if not ends and i + 1 < len(spans):
            ends = "\n" in text[e : spans[i + 1][0]]
        if ends or i + 1 == len(spans):
            sentences.append((start, i + 1))
            start = i + 1
    return sentences


def model_tokens(text: str, spans: Sequence[Sequence[int]]) -> tuple[list[str], list[Span], list[int]]:
    """Split each canonical word into lower-cased model tokens.

    Returns the tokens, their character offsets, and for each token the index of the word it
    lies in. A word made only of characters the pattern skips still yields one token (itself),
    so every word is reachable from at least one token.
    """
    tokens: list[str] = []
    offsets: list[Span] = []
    owner: list[int] = []
    for w, (s, e) in enumerate(spans):
        found = False
        for m in _TOKEN.finditer(text, s, e):
            tokens.append(m.group().lower())
            offsets.append((m.start(), m.end()))
            owner.append(w)
            found = True
        if not found:
            tokens.append(text[s:e].lower())
            offsets.append((s, e))
            owner.append(w)
    return tokens, offsets, owner


def pool_to_words(
    token_scores: np.ndarray, owner: Sequence[int], n_words: int, how: str = "sum"
) -> np.ndarray:
    """Pool per-token scores onto canonical words (``sum`` by default, or ``max`` / ``mean``).

    ``token_scores`` may be 1-D (tokens) or 2-D (rows × tokens); pooling is vectorised. A token whose
    owner is negative belongs to no word (a transformer's special tokens, e.g. [CLS] and [SEP]) and is
    left out.
    """
    scores = np.asarray(token_scores, dtype=np.float64)
    idx = np.asarray(owner, dtype=np.int64)
    squeeze = scores.ndim == 1
    scores = np.atleast_2d(scores)
    if idx.size and idx.min() < 0:
        scores, idx = scores[:, idx >= 0], idx[idx >= 0]
    out = np.zeros((scores.shape[0], n_words), dtype=np.float64)
    if how == "max":
        out.fill(-np.inf)
        np.maximum.at(out, (slice(None), idx), scores)  # type: ignore[arg-type]  # numpy's stubs take no tuple index
        out[np.isneginf(out)] = 0.0
    else:
        np.add.at(out, (slice(None), idx), scores)  # type: ignore[arg-type]  # numpy's stubs take no tuple index
        if how == "mean":
            out /= np.maximum(np.bincount(idx, minlength=n_words), 1)
        elif how != "sum":
            raise ValueError(f"unknown pooling {how!r}; use 'sum', 'max' or 'mean'")
    return out[0] if squeeze else out


def char_span_of_words(spans: Sequence[Sequence[int]], first: int, end: int) -> Span:
    """The character range covered by words ``first .. end-1`` (for evidence snippets)."""
    return (int(spans[first][0]), int(spans[end - 1][1]))
