"""Hybrid documents (Poerner et al. 2018 §2.1, §4.1): shuffle test sentences, concatenate ten at a time.

Every word of a hybrid document keeps the gold label of the document its sentence came from, so a
pointing game can tell whether the maximally relevant word lies in a fragment of the predicted
class. Reviews are split into sentences with :func:`explain_engine.text.sentence_spans`; data sets of
sentences (SST-2) are used as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from explain_engine.text import sentence_spans, word_spans


@dataclass(frozen=True)
class HybridDocument:
    """A hybrid document: its text, the gold label of each canonical word, and its sentences' ids."""

    id: str
    text: str
    word_labels: tuple[str, ...]
    sources: tuple[str, ...]

    @property
    def labels(self) -> set[str]:
        return set(self.word_labels)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "text": self.text,
            "word_labels": list(self.word_labels),
            "sources": list(self.sources),
        }


def sentences_of(records: Iterable[dict], split: bool = True) -> list[dict]:
    """``{id, text, label}`` per sentence of every record (whitespace normalised to single spaces).

    With ``split=False`` every record is taken as one sentence (SST-2).
    """
    out = []
    for rec in records:
        text = rec["text"]
        spans = word_spans(text)
        if not spans:
            continue
        words = [text[s:e] for s, e in spans]
        ranges = sentence_spans(text, spans) if split else [(0, len(spans))]
        for i, (first, end) in enumerate(ranges):
            out.append(
                {"id": f"{rec['id']}#{i}", "text": " ".join(words[first:end]), "label": str(rec["label"])}
            )
    return out


def hybrid_documents(
    sentences: Sequence[dict], per_document: int = 10, seed: int = 0, limit: int | None = None
) -> list[HybridDocument]:
    """Shuffle ``sentences`` and join them ``per_document`` at a time (an incomplete rest is dropped)."""
    if per_document < 1:
        raise ValueError("per_document must be positive")
    order = np.random.default_rng(seed).permutation(len(sentences))
    n_docs = len(order) // per_document
    if limit is not None:
        n_docs = min(n_docs, limit)
    docs = []
    for d in range(n_docs):
        chosen = [sentences[i] for i in order[d * per_document : (d + 1) * per_document]]
        labels: list[str] = []
        for s in chosen:
            labels.extend([str(s["label"])] * len(s["text"].split()))
        text = " ".join(s["text"] for s in chosen)
        docs.append(HybridDocument(f"hybrid-{seed}-{d}", text, tuple(labels), tuple(s["id"] for s in chosen)))
    return docs
