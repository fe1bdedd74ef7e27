"""Recurrent classifiers: with additive attention (Sen et al. 2020 eq. 1–4) or pooling the last state (Poerner et al. 2018)."""

from __future__ import annotations

import torch
from torch import nn

from explain_engine.models.base import ModelOutput, TextClassifier
from explain_engine.models.recurrent import GatedRNN


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis restricted to ``mask``; exactly 0 on masked positions."""
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.where(mask, weights, torch.zeros_like(weights))


class AttentionRNN(TextClassifier):
    """(Bi)LSTM or (Bi)GRU with additive attention (Sen et al. 2020 eq. 1–4; Yang et al. 2016).

    ``h_i = RNN(x_i, h_{i-1})``; ``u_i = tanh(W h_i + b)`` (``attn_proj``);
    ``α_i = softmax_i(u_i · u)`` over the real tokens (``u`` is ``attn_context``);
    ``c = Σ_i α_i h_i``; ``s(·, X) = classifier(dropout(c))``. Dropout also applies to the
    embeddings while training. Defaults follow Sen et al. 2020 App. A.2: hidden 100 (per direction),
    attention 100, dropout 0.2; Sen et al. 2020 gives no embedding size, 100 is used.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        cell: str = "lstm",
        bidirectional: bool = True,
        embedding_dim: int = 100,
        hidden_size: int = 100,
        attention_size: int = 100,
        dropout: float = 0.2,
    ):
        super().__init__(
            vocab_size=vocab_size,
            num_classes=num_classes,
            cell=cell,
            bidirectional=bidirectional,
            embedding_dim=embedding_dim,
            hidden_size=hidden_size,
            attention_size=attention_size,
            dropout=dropout,
        )
        self.architecture = f"{'bi' if bidirectional else ''}{cell}_attention"
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.rnn = GatedRNN(cell, embedding_dim, hidden_size, bidirectional)
        self.attn_proj = nn.Linear(self.rnn.output_size, attention_size)
        self.attn_context = nn.Parameter(torch.empty(attention_size).uniform_(-0.1, 0.1))
        self.classifier = nn.Linear(self.rnn.output_size, num_classes)

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        mask = mask.bool()
        states, _ = self.rnn(self.dropout(embeds), mask)
        u = torch.tanh(self.attn_proj(states))
        alpha = masked_softmax(u @ self.attn_context, mask)
        context = torch.einsum("bt,bth->bh", alpha, states)
        logits = self.classifier(self.dropout(context))
        return ModelOutput(logits, alpha, {"states": states, "context": context})


class RecurrentClassifier(TextClassifier):
    """(Bi)LSTM or (Bi)GRU whose final state is the document representation (Poerner et al. 2018 §4.1).

    Poerner et al. 2018: hidden size 150 in all, i.e. 75 per direction when bidirectional; 300-d
    embeddings. ``s(·, X) = classifier(dropout(final))``. No attention.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        cell: str = "lstm",
        bidirectional: bool = False,
        embedding_dim: int = 300,
        hidden_size: int | None = None,
        dropout: float = 0.2,
    ):
        if hidden_size is None:
            hidden_size = 75 if bidirectional else 150
        super().__init__(
            vocab_size=vocab_size,
            num_classes=num_classes,
            cell=cell,
            bidirectional=bidirectional,
            embedding_dim=embedding_dim,
            hidden_size=hidden_size,
            dropout=dropout,
        )
        self.architecture = f"{'bi' if bidirectional else ''}{cell}"
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.rnn = GatedRNN(cell, embedding_dim, hidden_size, bidirectional)
        self.classifier = nn.Linear(self.rnn.output_size, num_classes)

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        states, final = self.rnn(self.dropout(embeds), mask.bool())
        return ModelOutput(self.classifier(self.dropout(final)), None, {"states": states, "final": final})
