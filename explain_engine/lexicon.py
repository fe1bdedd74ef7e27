"""Opinion lexicons: Hu & Liu's (KDD 2004) positive and negative word lists, for CSSR (Sen et al. 2020 §4.3).

The distributed files are ISO-8859-1 (``naïve`` is byte 0xEF), start with ``;`` comment lines and
hold one lower-case word per line. A few words (``envious`` …) are in both lists; they count as both.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

POSITIVE_FILE = "positive-words.txt"
NEGATIVE_FILE = "negative-words.txt"

POSITIVE = 1
NEGATIVE = 2  # bit flags: a word in both lists has polarity POSITIVE | NEGATIVE


def read_word_list(path: str | Path, encoding: str = "latin-1") -> list[str]:
    """The words of a lexicon file: one per line, skipping blank lines and ``;`` comments."""
    with open(path, encoding=encoding) as fh:
        return [w for w in (line.strip() for line in fh) if w and not w.startswith(";")]


@dataclass(frozen=True)
class OpinionLexicon:
    positive: frozenset[str]
    negative: frozenset[str]

    def polarity(self, word: str) -> int:
        """Bit flags (:data:`POSITIVE`, :data:`NEGATIVE`) of a text word, 0 when in neither list.

        The word is lower-cased; when that form is not listed, punctuation around it is stripped
        (so ``Great.`` finds ``great`` while ``a+`` stays ``a+``).
        """
        w = word.lower()
        flags = (POSITIVE if w in self.positive else 0) | (NEGATIVE if w in self.negative else 0)
        if flags:
            return flags
        w = w.strip(string.punctuation + "“”‘’…")
        return (POSITIVE if w in self.positive else 0) | (NEGATIVE if w in self.negative else 0)


def load_opinion_lexicon(
    path: str | Path | None = None,
    positive: str | Path | None = None,
    negative: str | Path | None = None,
    encoding: str = "latin-1",
) -> OpinionLexicon:
    """Hu & Liu's lexicon from a directory holding ``positive-words.txt`` and ``negative-words.txt``,
    or from the two files given explicitly."""
    if path is not None:
        base = Path(path)
        positive = positive or base / POSITIVE_FILE
        negative = negative or base / NEGATIVE_FILE
    if positive is None or negative is None:
        raise ValueError("give the lexicon directory, or both the positive and the negative word file")
    return OpinionLexicon(
        frozenset(read_word_list(positive, encoding)), frozenset(read_word_list(negative, encoding))
    )
