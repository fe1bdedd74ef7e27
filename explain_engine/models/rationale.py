"""Rationale model: a generator selects words, an encoder classifies from them (Lei et al. 2016).

Sen et al. 2020 §5.1 uses it as the hard-attention machine: "generator and encoder … regularized in
the cost function with two hyper-parameters, selection lambda and continuity lambda", tuned so
that it selects about as many words as people do.

* Generator: bidirectional RNN over the embeddings, ``p_t = σ(w · h_t + b)``; while training a
  selection ``z_t ~ Bernoulli(p_t)`` is sampled, in eval mode ``z_t = [p_t > 0.5]``.
* Encoder: bidirectional RNN over the selected tokens only (an unselected token leaves the
  state unchanged, as in Lei et al.'s ``h_t = z_t h'_t + (1 - z_t) h_{t-1}``), final state →
  linear class scores.
* Cost ``loss(x, z, y) + λ_sel Ω_sel(z) + λ_cont Σ_t |z_t - z_{t-1}| / L``. The encoder learns
  from the loss directly; the generator gets the score-function (REINFORCE) gradient of the
  loss with the batch mean as baseline (log-likelihood of the sampled selection summed over tokens).
  The penalties are differentiated in expectation (``E[z_t] = p_t``; for independent
  Bernoullis ``E|z_t - z_{t-1}| = p_t(1 - p_{t-1}) + p_{t-1}(1 - p_t)``), which has the same
  expected gradient as sampling them and less variance.
* ``Ω_sel``: Lei et al.'s share of selected tokens when ``selection_target`` is None; otherwise
  ``|E[share] - selection_target|``, which pulls the selection to a human-like share (YELP-HAT
  annotators mark about 20–25 % of the words: 10–14 of 50, Sen et al. 2020 §3.2).

``attention`` is the 0/1 selection (zeros on padding).
"""

from __future__ import annotations

import torch
from torch import nn

from explain_engine.models.base import ModelOutput, TextClassifier
from explain_engine.models.recurrent import GatedRNN


class RationaleModel(TextClassifier):
    architecture = "rationale"
    attention_pooling = "max"

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        cell: str = "lstm",
        embedding_dim: int = 100,
        hidden_size: int = 100,
        dropout: float = 0.2,
        selection_lambda: float = 1.0,
        continuity_lambda: float = 0.5,
        selection_target: float | None = 0.2,
    ):
        super().__init__(
            vocab_size=vocab_size,
            num_classes=num_classes,
            cell=cell,
            embedding_dim=embedding_dim,
            hidden_size=hidden_size,
            dropout=dropout,
            selection_lambda=selection_lambda,
            continuity_lambda=continuity_lambda,
            selection_target=selection_target,
        )
        self.selection_lambda = selection_lambda
        self.continuity_lambda = continuity_lambda
        self.selection_target = selection_target
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.generator = GatedRNN(cell, embedding_dim, hidden_size, bidirectional=True)
        self.selector = nn.Linear(self.generator.output_size, 1)
        self.encoder = GatedRNN(cell, embedding_dim, hidden_size, bidirectional=True)
        self.classifier = nn.Linear(self.encoder.output_size, num_classes)

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        mask = mask.bool()
        x = self.dropout(embeds)
        gen_states, _ = self.generator(x, mask)
        prob = torch.sigmoid(self.selector(gen_states).squeeze(-1)) * mask
        z = torch.bernoulli(prob.detach()) if self.training else (prob > 0.5).to(prob.dtype)
        z = z * mask
        _, final = self.encoder(x, mask & z.bool())
        logits = self.classifier(self.dropout(final))
        eps = 1e-6
        token_ll = z * torch.log(prob + eps) + (1 - z) * torch.log(1 - prob + eps)
        log_prob = (token_ll * mask).sum(1)
        return ModelOutput(logits, z, {"selection_prob": prob, "log_prob": log_prob})

    def penalties(self, prob: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Expected selection and continuity penalties per text, ``(B,)`` each."""
        mask = mask.bool()
        lengths = mask.sum(1).clamp(min=1)
        share = (prob * mask).sum(1) / lengths
        selection = share if self.selection_target is None else (share - self.selection_target).abs()
        pairs = mask[:, 1:] & mask[:, :-1]
        flips = prob[:, 1:] * (1 - prob[:, :-1]) + prob[:, :-1] * (1 - prob[:, 1:])
        continuity = (flips * pairs).sum(1) / lengths
        return selection, continuity

    def auxiliary_loss(
        self, output: ModelOutput, example_loss: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        assert output.extras is not None  # encode sets the selection's extras
        selection, continuity = self.penalties(output.extras["selection_prob"], mask)
        advantage = (example_loss - example_loss.mean()).detach()
        reinforce = (advantage * output.extras["log_prob"]).mean()
        penalty = self.selection_lambda * selection + self.continuity_lambda * continuity
        return reinforce + penalty.mean()
