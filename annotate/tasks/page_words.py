"""Words on the annotator's page: what the browser sees of a document, and 0/1 maps over its words.

Every kind that shows a document word by word (marking words, rating a sentence in its text,
evidence highlighted in a text) sends the same view: the canonical words of the Document and the
indices of the words that follow a line break, so the page lays the text out as it was written.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from explain_engine.api import map_overlap as map_overlap
from explain_engine.api import sentence_spans


def word_breaks(text: str, words: list[list[int]]) -> list[int]:
    """Indices of the words preceded by a line break in ``text`` (the first word never is)."""
    return [i for i in range(1, len(words)) if "\n" in text[words[i - 1][1] : words[i][0]]]


def word_payload(text: str, words: list[list[int]]) -> dict[str, list]:
    """The browser's view of a document: its word strings and where lines break."""
    return {"words": [text[s:e] for s, e in words], "breaks": word_breaks(text, words)}


def document_sentences(doc) -> list[list[int]]:
    """The document's stored sentences as ``[first_word, end_word)`` ranges; split them from its words when
    none were stored."""
    if doc.sentences:
        return [list(s) for s in doc.sentences]
    return [list(s) for s in sentence_spans(doc.text, doc.words)]


def is_binary_map(value: Any, length: int) -> TypeGuard[list[int]]:
    """Whether ``value`` is a list of ``length`` integers, each 0 or 1 (booleans are not accepted)."""
    return (
        isinstance(value, list)
        and len(value) == length
        and set(map(type, value)) <= {int}
        and set(value) <= {0, 1}
    )


#: The fixed strategies a word map can follow without reading (:meth:`TaskKind.fixed_strategies`).
ALL_WORDS = "every word highlighted"
NO_WORDS = "no word highlighted"


def map_strategies(word_map: Any) -> list[str]:
    """Which of :data:`ALL_WORDS` and :data:`NO_WORDS` a 0/1 map follows (none for an empty map)."""
    if not isinstance(word_map, list) or not word_map:
        return []
    marked = sum(1 for v in word_map if v)
    return [ALL_WORDS] if marked == len(word_map) else [NO_WORDS] if marked == 0 else []


def payload_words(payload: Any) -> int:
    """Words of an item's texts: its ``words`` and those of the texts one level down (a pair's premise
    and hypothesis)."""
    if not isinstance(payload, dict):
        return 0
    own = payload.get("words")
    total = len(own) if isinstance(own, list) else 0
    for value in payload.values():
        if isinstance(value, dict) and isinstance(value.get("words"), list):
            total += len(value["words"])
    return total
