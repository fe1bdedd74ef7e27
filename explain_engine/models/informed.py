"""The explanation-informed twin of a target architecture (Prasad et al. 2021 §3.2 eq. 3, §4.1).

Prasad et al. 2021 feed the Transformers "x concatenated with e": self-attention lets every word of
the explanation meet every word of the input. A CNN or an RNN reading one "x SEP e" sequence has no
such path (a width-4 filter never spans the separator; an LSTM must carry the whole input across
it), and on the movie-review rationales such a twin stays at chance on matched / mismatched. The
paper's own non-Transformer NLI model, BInferSent, is the InferSent design of Conneau et al. 2017
§3.2: one encoder with shared weights reads premise and hypothesis separately, and a classifier reads
``[u, v, |u − v|, u ⊙ v]``. The twin here is that design with the *target's* encoder: the target
architecture (its own embedding, layers and sizes; its output layer widened to ``encoding_dim``)
encodes x into ``u`` and e into ``v``; an MLP (Conneau et al. 2017: one hidden layer) maps the four
parts to the joint labels. The difference and product let it compare the two texts feature by
feature.

On the movie-review rationales (150-word reviews, CNN target, 5 epochs) those features alone were
not enough: matched / mismatched stayed at 0.50 on the test pairs (0.57 after 20 epochs, while the
training pairs were memorised). The twin therefore also gets one word-overlap feature
(:func:`unmatched_mass`, on by default, ``overlap=False`` leaves it out): how much of e's tokens
finds no equal among x's, from dot products of the shared embeddings as in the alignment step of
decomposable-attention NLI models (Parikh et al. 2016). With it the same run reaches 0.996. Being made
of the embeddings, it keeps the soft oracle a gradient of the words: its credit goes to the x tokens
that e's tokens align with.

The model reads the joined token sequence ``x SEP e`` (so every explainer treats it like any other
classifier) and splits it at the separator token, whose id is bound from the vocabulary when
training starts (:meth:`InformedTwin.bind_vocabulary`) and saved with the weights. Integrated
gradients scale the embeddings of x and e together, so the all-zero baseline carries neither.
"""

from __future__ import annotations

import torch
from torch import nn

from explain_engine.models.base import ModelOutput, TextClassifier

#: The word that joins an input and its explanation (one model token of its own).
SEPARATOR = "explanationfollows"


class InformedTwin(TextClassifier):
    separator_id: torch.Tensor  # a buffer (register_buffer)

    """Target encoder with shared weights over x and e, InferSent features and the word-overlap
    feature, MLP to the joint labels.

    ``target`` names the target architecture and ``target_config`` its constructor overrides;
    ``encoding_dim`` is the width of ``u`` and ``v``; ``hidden_size`` that of the MLP; ``overlap``
    adds :func:`unmatched_mass` to the MLP's input.
    ``extras``: ``u`` and ``v``; ``attention`` is the encoder's attention over x (zeros on SEP and e)
    when the target has one.
    """

    architecture = "informed"

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        target: str = "cnn",
        target_config: dict | None = None,
        encoding_dim: int = 64,
        hidden_size: int = 64,
        dropout: float = 0.1,
        overlap: bool = True,
    ):
        # imported here: the registry imports this module
        from explain_engine.models import build_model

        if target in ("informed", "rationale"):
            raise ValueError(f"the informed twin cannot wrap {target!r}: pick a classifier architecture")
        target_config = dict(target_config or {})
        super().__init__(
            vocab_size=vocab_size,
            num_classes=num_classes,
            target=target,
            target_config=target_config,
            encoding_dim=encoding_dim,
            hidden_size=hidden_size,
            dropout=dropout,
            overlap=overlap,
        )
        self.overlap = bool(overlap)
        self.encoder = build_model(target, vocab_size, encoding_dim, **target_config)
        self.attention_pooling = self.encoder.attention_pooling
        self.classifier = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(4 * encoding_dim + int(self.overlap), hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, num_classes),
        )
        self.register_buffer("separator_id", torch.tensor(-1, dtype=torch.long))

    @property
    def embedding(self) -> nn.Embedding:  # type: ignore[override]
        return self.encoder.embedding

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.encoder.embed(ids)

    def bind_vocabulary(self, vocab) -> None:
        """Remember the separator's id in ``vocab`` (called by the trainer before the first batch)."""
        if SEPARATOR not in vocab.stoi:
            raise ValueError(f"the training texts never contain the separator word {SEPARATOR!r}")
        self.separator_id.fill_(vocab.stoi[SEPARATOR])

    def forward(
        self, ids: torch.Tensor, mask: torch.Tensor, embeds: torch.Tensor | None = None
    ) -> ModelOutput:
        if embeds is None:
            embeds = self.embed(ids)
        mask = mask.bool()
        if int(self.separator_id) < 0:
            raise RuntimeError("the informed twin has no separator id: train it or load its weights")
        at_sep = (ids == self.separator_id) & mask
        if not bool(at_sep.any(1).all()):
            raise ValueError(f"every input of the informed twin needs the separator word {SEPARATOR!r}")
        length = ids.shape[1]
        positions = torch.arange(length, device=ids.device)
        sep = at_sep.long().argmax(1)  # the first separator of each row
        x_mask = positions[None] < sep[:, None]
        e_len = mask.sum(1) - sep - 1
        if bool((sep == 0).any()) or bool((e_len <= 0).any()):
            raise ValueError("every input of the informed twin needs words before and after the separator")
        x_width = int(sep.max())
        e_width = int(e_len.max())
        # e's tokens moved to the front of their own sequence (encoders expect leading real tokens)
        source = (sep[:, None] + 1 + positions[None, :e_width]).clamp(max=length - 1)
        e_embeds = embeds.gather(1, source[..., None].expand(-1, -1, embeds.shape[-1]))
        e_mask = positions[None, :e_width] < e_len[:, None]
        u_out = self.encoder.encode(embeds[:, :x_width], x_mask[:, :x_width])
        v_out = self.encoder.encode(e_embeds, e_mask)
        u, v = u_out.logits, v_out.logits
        parts = [u, v, (u - v).abs(), u * v]
        if self.overlap:
            parts.append(unmatched_mass(embeds[:, :x_width], x_mask[:, :x_width], e_embeds, e_mask)[:, None])
        logits = self.classifier(torch.cat(parts, dim=1))
        attention = None
        if u_out.attention is not None:
            attention = embeds.new_zeros(ids.shape)
            attention[:, :x_width] = u_out.attention
        return ModelOutput(logits, attention, {"u": u, "v": v})

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        raise TypeError("the informed twin needs the token ids to find the separator: call it with ids")


def unmatched_mass(
    x_embeds: torch.Tensor, x_mask: torch.Tensor, e_embeds: torch.Tensor, e_mask: torch.Tensor
) -> torch.Tensor:
    """``(B,)`` mean over the explanation's tokens of ``max(0, e_j·e_j − max_i e_j·x_i)``: zero when
    every token of e also occurs in x (its own embedding is among x's), large when e speaks of other
    words. A soft word-overlap feature in the manner of the alignment step of NLI models (Parikh et al.
    2016), built from dot products so that it scales with the embeddings (α² along the integrated-
    gradients path, zero at the baseline) and the x tokens that e's tokens align with get its credit.

    The x token each e token aligns with is found from the batched dot products, but the gap is
    taken as ``e_j·(e_j − x_i)`` of that one pair: for a word that occurs in x the difference is
    exactly zero, so the ReLU sits at its kink with zero gradient whatever the text is batched with
    (``e_j·e_j − e_j·x_i`` from two reductions rounds to ±1e-6, which switches the gradient on in
    some batches and off in others)."""
    with torch.no_grad():
        scores = torch.einsum("bje,bie->bji", e_embeds, x_embeds)
        nearest = scores.masked_fill(~x_mask[:, None, :], float("-inf")).argmax(dim=2)
    closest = x_embeds.gather(1, nearest[..., None].expand(-1, -1, x_embeds.shape[-1]))
    gap = torch.relu((e_embeds * (e_embeds - closest)).sum(-1)) * e_mask
    return gap.sum(1) / e_mask.sum(1).clamp(min=1)
