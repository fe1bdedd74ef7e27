"""The sentence_rating kind: how much does one sentence explain an aspect's star rating? (Pappas & Popescu-Belis 2016, §3)

The kind class is in :mod:`.kind`; importing the folder registers it."""

from annotate.kinds.sentence_rating.kind import SentenceRatingKind

__all__ = ["SentenceRatingKind"]
