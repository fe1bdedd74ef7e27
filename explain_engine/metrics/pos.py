"""Penn Treebank part-of-speech tags for canonical words, offline (for lexical similarity, Sen et al. 2020 §4.2).

Tagging uses TextBlob's ``PatternTagger`` (a Brill-style tagger whose lexicon ships with TextBlob,
so nothing is downloaded). Each canonical (whitespace) word is first split the Penn way, into word
pieces, clitics (``was`` + ``n't``, ``food`` + ``'s``) and punctuation; the pieces of a whole text
are tagged together, and a word takes the tag of its first piece whose tag is one of the 36 Penn
word tags (a word made only of punctuation keeps its punctuation tag, which lies outside the tagset).

Tagging is a one-off per document: store the tags with the document (``yelphat convert --pos``
writes a ``pos`` list per record) and pass them back in instead of tagging again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from tqdm import tqdm

from explain_engine.text import word_spans

PENN_TAGS: tuple[tuple[str, str], ...] = (
    ("CC", "Coordinating conjunction"),
    ("CD", "Cardinal number"),
    ("DT", "Determiner"),
    ("EX", "Existential there"),
    ("FW", "Foreign word"),
    ("IN", "Preposition or subordinating conjunction"),
    ("JJ", "Adjective"),
    ("JJR", "Adjective, comparative"),
    ("JJS", "Adjective, superlative"),
    ("LS", "List item marker"),
    ("MD", "Modal"),
    ("NN", "Noun, singular or mass"),
    ("NNS", "Noun, plural"),
    ("NNP", "Proper noun, singular"),
    ("NNPS", "Proper noun, plural"),
    ("PDT", "Predeterminer"),
    ("POS", "Possessive ending"),
    ("PRP", "Personal pronoun"),
    ("PRP$", "Possessive pronoun"),
    ("RB", "Adverb"),
    ("RBR", "Adverb, comparative"),
    ("RBS", "Adverb, superlative"),
    ("RP", "Particle"),
    ("SYM", "Symbol"),
    ("TO", "to"),
    ("UH", "Interjection"),
    ("VB", "Verb, base form"),
    ("VBD", "Verb, past tense"),
    ("VBG", "Verb, gerund or present participle"),
    ("VBN", "Verb, past participle"),
    ("VBP", "Verb, non-3rd person singular present"),
    ("VBZ", "Verb, 3rd person singular present"),
    ("WDT", "Wh-determiner"),
    ("WP", "Wh-pronoun"),
    ("WP$", "Possessive wh-pronoun"),
    ("WRB", "Wh-adverb"),
)
TAGSET: tuple[str, ...] = tuple(t for t, _ in PENN_TAGS)
TAG_INDEX: dict[str, int] = {t: i for i, t in enumerate(TAGSET)}

_PIECE = re.compile(
    r"\w+(?=n['’]t\b)|n['’]t\b|['’](?:s|re|ve|ll|d|m)\b|\w+(?:[-./]\w+)*|[^\w\s]",
    re.IGNORECASE | re.UNICODE,
)


@lru_cache(maxsize=1)
def _tagger():
    # Imported on first use: TextBlob and its pattern lexicon take seconds, and tags are usually stored.
    from textblob.en.taggers import PatternTagger

    return PatternTagger()


def word_pieces(word: str) -> list[str]:
    """Penn-style pieces of one whitespace word: ``"wasn't"`` → ``["was", "n't"]``, ``"did."`` → ``["did", "."]``."""
    return _PIECE.findall(word) or [word]


def tag_words(text: str, spans: Sequence[Sequence[int]] | None = None) -> list[str]:
    """One Penn Treebank tag per canonical word of ``text`` (``spans`` default: its whitespace words)."""
    if spans is None:
        spans = word_spans(text)
    pieces: list[str] = []
    owner: list[int] = []
    for w, (s, e) in enumerate(spans):
        for p in word_pieces(text[s:e]):
            pieces.append(p)
            owner.append(w)
    if not pieces:
        return []
    tagged = _tagger().tag(" ".join(pieces), tokenize=False)
    if len(tagged) != len(pieces):  # the tagger re-split something: tag piece by piece instead
        tagged = [(p, (_tagger().tag(p, tokenize=False) or [(p, "SYM")])[0][1]) for p in pieces]
    tags: list[str | None] = [None] * len(spans)
    first: list[str | None] = [None] * len(spans)
    for w, (_, tag) in zip(owner, tagged, strict=True):
        if first[w] is None:
            first[w] = tag
        if tags[w] is None and tag in TAG_INDEX:
            tags[w] = tag
    return [t if t is not None else (f or "SYM") for t, f in zip(tags, first, strict=True)]


def tag_documents(
    texts: Sequence[str],
    spans: Sequence[Sequence[Sequence[int]]] | None = None,
    progress: bool | None = False,
) -> list[list[str]]:
    """:func:`tag_words` over many documents, with an optional tqdm bar (``None``: only on a terminal)."""
    disable = None if progress is None else not progress
    out = []
    for i, text in enumerate(tqdm(texts, desc="POS tagging", unit=" docs", disable=disable, leave=False)):
        out.append(tag_words(text, None if spans is None else spans[i]))
    return out
