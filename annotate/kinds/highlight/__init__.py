"""The highlight kind: read a text, choose its label, mark the words that show it (Sen et al. 2020, §3).

The kind class is in :mod:`.kind`; importing the folder registers it."""

from annotate.kinds.highlight.kind import HighlightKind

__all__ = ["HighlightKind"]
