"""The token_marking kind: mark the input tokens a natural-language explanation refers to (the NLI importance-alignment paper, §3.2).

The kind class is in :mod:`.kind`; importing the folder registers it."""

from annotate.kinds.token_marking.kind import TokenMarkingKind

__all__ = ["TokenMarkingKind"]
