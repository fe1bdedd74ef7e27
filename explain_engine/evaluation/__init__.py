"""Functional evaluation of explanation methods (paper 002): hybrid documents and pointing games."""

from explain_engine.evaluation.hybrid import HybridDocument, hybrid_documents, sentences_of
from explain_engine.evaluation.pointing_game import (
    PointingGame,
    hit_feat,
    hit_hybrid,
    hit_manual,
    hit_target,
    pointing_game,
    rmax,
)

__all__ = [
    "HybridDocument",
    "PointingGame",
    "hit_feat",
    "hit_hybrid",
    "hit_manual",
    "hit_target",
    "hybrid_documents",
    "pointing_game",
    "rmax",
    "sentences_of",
]
