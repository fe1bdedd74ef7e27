"""The nli_pair kind: label a premise–hypothesis pair, then highlight the words that justify the label (e-SNLI's annotation, Camburu et al. 2018, which Prasad et al. 2021 compare model attributions with).

The kind class is in :mod:`.kind`; importing the folder registers it."""

from annotate.kinds.nli_pair.kind import NliPairKind

__all__ = ["NliPairKind"]
