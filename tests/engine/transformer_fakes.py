"""A fake transformer for explainer tests: sub-word pieces, special tokens of no word, known relevance.

The class score is gated by the special tokens, as a transformer reads its classification token:
s(1, X) = g(X) · Σ_t w(x_t) with g = [x_0 is CLS] · [SEP is present] (on one-hot embeddings, so it
is differentiable) and s(0, X) = −s(1, X). A method that drops or zeroes the special tokens sees
every score collapse to 0; one that keeps them sees a linear model whose word relevance is the sum
of its pieces' weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from explain_engine.models.base import EncodedBatch, ModelOutput, TextClassifier

PAD, CLS, SEP = 0, 1, 2
#: Weight of each piece for class 1 (pieces of words longer than six characters: the first four
#: characters, then "##" and the rest).
PIECE_WEIGHTS = {
    "good": 1.5,
    "slow": -1.0,
    "wond": 0.7,
    "##erful": 1.1,
    "frie": 0.4,
    "##ndly": 0.5,
    "serv": -0.2,
    "##ice": 0.1,
    "food": 0.3,
}


def pieces(word: str) -> list[str]:
    return [word] if len(word) <= 6 else [word[:4], "##" + word[4:]]


class FakeTransformer(TextClassifier):
    """One-hot embeddings, a linear score gated by the special tokens, and 2 layers × 2 heads of
    attention maps that depend on the ids (so rows differ and padding is visible)."""

    architecture = "transformer"
    cls_position = 0

    def __init__(self, weights: torch.Tensor):
        super().__init__(vocab_size=len(weights), num_classes=2)
        size = len(weights)
        self.embedding = nn.Embedding(size, size, padding_idx=PAD)
        with torch.no_grad():
            self.embedding.weight.copy_(torch.eye(size))
            self.embedding.weight[PAD] = 0
        self.register_buffer("weights", weights.clone())

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        embeds = embeds * mask[..., None]
        gate = embeds[:, 0, CLS] * embeds[:, :, SEP].sum(1)
        score = gate * (embeds @ self.weights).sum(1)
        return ModelOutput(torch.stack([-score, score], dim=1))

    def attention_maps(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        maps = []
        for layer in range(2):
            heads = []
            for head in range(2):
                logits = torch.sin(ids[:, :, None] * (layer + 1.0) + ids[:, None, :] * (head + 0.5))
                logits = logits.masked_fill(~mask[:, None, :], float("-inf"))
                heads.append(torch.softmax(logits, dim=-1))
            maps.append(torch.stack(heads, dim=1))
        return tuple(maps)


@dataclass
class FakeBundle:
    """What the explainers read of a trained model: ``model``, ``labels``, ``device``, ``encode``."""

    model: FakeTransformer
    stoi: dict[str, int]
    labels: list[str] = field(default_factory=lambda: ["neg", "pos"])
    device: str = "cpu"

    def encode(self, texts: list[str]) -> EncodedBatch:
        rows, owners, n_words = [], [], []
        for text in texts:
            ids, owner = [CLS], [-1]
            words = text.split()
            for w, word in enumerate(words):
                for piece in pieces(word):
                    ids.append(self.stoi[piece])
                    owner.append(w)
            rows.append([*ids, SEP])
            owners.append([*owner, -1])
            n_words.append(len(words))
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [PAD] * (width - len(r)) for r in rows])
        return EncodedBatch(ids, ids != PAD, owners, n_words, list(texts))

    def known(self, text: str) -> np.ndarray:
        """Each word's relevance for class 1: the sum of its pieces' weights."""
        return np.array([sum(PIECE_WEIGHTS.get(p, 0.0) for p in pieces(w)) for w in text.split()])


def fake_bundle(words: tuple[str, ...] = ()) -> FakeBundle:
    vocabulary = ["[PAD]", "[CLS]", "[SEP]", *PIECE_WEIGHTS, "the", "was", "but", "and", *words]
    stoi = {p: i for i, p in enumerate(dict.fromkeys(vocabulary))}
    weights = torch.tensor([PIECE_WEIGHTS.get(p, 0.0) for p in stoi])
    return FakeBundle(FakeTransformer(weights).eval(), stoi)
