"""The contract every classifier honours, so that trainers and explainers treat them alike.

* ``forward(ids, mask, embeds=None) -> ModelOutput``. ``ids`` is ``(B, T)`` long, ``mask`` is
  ``(B, T)`` bool (True on real tokens). When ``embeds`` ``(B, T, E)`` is given it replaces
  the embedding lookup, so gradient methods can differentiate with respect to it.
* ``ModelOutput.logits`` are the class scores s(k, X) before the softmax, ``(B, K)``.
* ``ModelOutput.attention`` is ``(B, T)`` (zeros on padding; sums to 1 over real tokens for
  soft attention, 0/1 for a rationale selection) or ``None`` for models without one.
* ``embedding`` is the ``nn.Embedding`` (padding index 0), ``config`` a JSON-able dict of the
  constructor arguments, ``architecture`` the registry name.
* ``attention_pooling`` says how token attention is pooled onto canonical words (``sum`` for a
  soft distribution, ``max`` for a 0/1 selection); ``auxiliary_loss`` adds a model's own training
  terms (e.g. the rationale model's selection penalties) to the cross-entropy.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class ModelOutput:
    logits: torch.Tensor
    attention: torch.Tensor | None = None
    extras: dict | None = None


class TextClassifier(nn.Module, ABC):
    """Base class: subclasses set ``architecture`` and implement ``encode``."""

    architecture: str = ""
    attention_pooling: str = "sum"
    embedding: nn.Embedding

    def __init__(self, **config):
        super().__init__()
        self.config = dict(config)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(ids)

    def forward(
        self, ids: torch.Tensor, mask: torch.Tensor, embeds: torch.Tensor | None = None
    ) -> ModelOutput:
        if embeds is None:
            embeds = self.embed(ids)
        return self.encode(embeds, mask)

    @abstractmethod
    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        """Class scores (and attention) from token embeddings ``(B, T, E)`` and the mask."""

    def auxiliary_loss(
        self, output: ModelOutput, example_loss: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Extra training loss beyond the mean cross-entropy; ``example_loss`` is per example ``(B,)``."""
        return example_loss.new_zeros(())


@dataclass
class EncodedBatch:
    """Texts encoded for a model, with the way back to canonical words.

    ``ids``/``mask`` are ``(B, T)``; ``owners[b][t]`` is the canonical-word index of token ``t`` of
    text ``b`` (real tokens only), or ``-1`` for a token of no word (a transformer's [CLS] / [SEP]):
    such a token is never pooled onto a word, never removed by a perturbation, and kept off the
    integrated-gradient path (:meth:`word_mask` marks the others). ``n_words[b]`` is the number of
    canonical words of text ``b``.
    """

    ids: torch.Tensor
    mask: torch.Tensor
    owners: list[list[int]]
    n_words: list[int]
    texts: list[str]

    def to(self, device: torch.device | str) -> EncodedBatch:
        return EncodedBatch(self.ids.to(device), self.mask.to(device), self.owners, self.n_words, self.texts)

    def word_mask(self) -> torch.Tensor:
        """``(B, T)`` bool: True on the real tokens that belong to a canonical word (owner ≥ 0)."""
        counts = np.fromiter((len(o) for o in self.owners), dtype=np.int64, count=len(self.owners))
        owned = np.zeros(tuple(self.mask.shape), dtype=bool)
        rows = np.repeat(np.arange(len(counts)), counts)
        cols = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
        owned[rows, cols] = np.fromiter((w >= 0 for o in self.owners for w in o), dtype=bool, count=len(rows))
        return torch.from_numpy(owned).to(self.mask.device) & self.mask.bool()
