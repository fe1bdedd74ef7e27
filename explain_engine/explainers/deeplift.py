"""DeepLIFT with the rescale rule against the all-zero embedding baseline (Poerner et al. 2018 §3.3; Lertvittayakumjorn & Toni 2019 §4.3).

DeepLIFT explains ``s(k, X) − s(k, X̄)`` with ``X̄`` the all-zero embeddings (same mask): every
neuron passes its change from the baseline ``Δa'_j`` back to its inputs in proportion to their
changes, ``R(i) = Σ_j R(j) w_ij Δa_i / Δa'_j`` (Ancona et al. 2018, eq. 4), starting from
``Δs(k, X)`` at the target's class score. The attributions then sum to that change
(summation-to-delta), with ``φ(t, k, X) = Σ_j R(e_{t,j})``.

Where Captum is used and where the rule is written by hand:

* **CNN** (Kim CNN): Captum's :class:`captum.attr.DeepLift`, on a view of the model whose two
  ReLUs are ``nn.ReLU`` modules (Captum applies the rescale rule only to activation *modules*;
  the model itself calls ``torch.relu``). Its max-pool over time routes the change to the
  argmax window, which is exact here because the baseline's feature maps are constant in time.
* **Gated RNNs** (LSTM, GRU, bidirectional, with additive attention) **and QRNN**: written by
  hand (:mod:`explain_engine.explainers._propagation`), because Captum's ``DeepLift`` does not
  handle these custom recurrences and cannot treat gates as weights. As in Poerner et al. 2018 the gates
  (and attention weights) are weights and receive no relevance. Being weights, they are the
  input's gates in the baseline pass too, so the attributions sum exactly to ``s(k, X)`` minus
  the baseline's score *through the network with X's gates* (see
  :mod:`explain_engine.explainers._propagation` for why the baseline's own gates cannot be
  used; :func:`deeplift_with_reference` returns that reference score). Denominators use paper
  002's ``ε·sign`` stabiliser (ε = 1e-6 by default, small so that summation-to-delta holds
  closely); the CNN path uses Captum's own guard (``eps`` = 1e-10: below it the gradient is used).

``engine="rules"`` runs the hand-written rules on the CNN too (the tests compare both).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from captum.attr import DeepLift
from torch import nn

from explain_engine.explainers._propagation import (
    DeepLiftRule,
    GateRecorder,
    ReferenceRecorder,
    input_times_modified_gradient,
    rule_logits,
)
from explain_engine.explainers.lrp import PROPAGATION_ARCHITECTURES
from explain_engine.explainers.registry import Param, register
from explain_engine.models.base import EncodedBatch
from explain_engine.models.cnn import KimCNN, valid_windows


class CaptumKimCNN(nn.Module):
    """Logits of a :class:`KimCNN` from ``(embeds, mask)``, with its ReLUs as modules for Captum.

    Computes exactly what :meth:`KimCNN.encode` computes in eval mode; the ReLUs after the
    convolutions and after the hidden layer are separate ``nn.ReLU`` instances (Captum needs one
    module per use).
    """

    def __init__(self, cnn: KimCNN):
        super().__init__()
        self.cnn = cnn
        self.conv_relus = nn.ModuleList(nn.ReLU() for _ in cnn.convs)
        self.fc_relu = nn.ReLU()

    def forward(self, embeds: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        cnn = self.cnn
        mask = mask.bool()
        x = embeds * mask.unsqueeze(-1).to(embeds.dtype)
        short = max(cnn.filter_sizes) - x.shape[1]
        if short > 0:
            x = nn.functional.pad(x, (0, 0, 0, short))
        x = x.transpose(1, 2)
        pooled = []
        for width, conv, relu in zip(cnn.filter_sizes, cnn.convs, self.conv_relus, strict=True):
            fmap = relu(conv(x))
            valid = valid_windows(mask, width, fmap.shape[2])
            pooled.append(fmap.masked_fill(~valid.unsqueeze(1), float("-inf")).max(dim=2).values)
        return cnn.out(self.fc_relu(cnn.fc(torch.cat(pooled, dim=1))))


def deeplift_with_reference(
    model: nn.Module, embeds: torch.Tensor, mask: torch.Tensor, target: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """Hand-written DeepLIFT token relevance ``(B, T)`` and the reference class scores ``(B, K)``.

    The relevance of a text sums to ``s(k, X)`` minus its reference score: the model's output on
    the all-zero embeddings, computed with the gates and attention weights of ``X`` (gates are
    weights; for the CNN, which has none, this is the model's own output on the baseline).
    """
    baseline = torch.zeros_like(embeds)
    gates = GateRecorder()
    with torch.no_grad():
        rule_logits(model, embeds, mask, gates)
        reference = ReferenceRecorder(gates.gates)
        reference_logits = rule_logits(model, baseline, mask, reference)
    relevance, _, _ = input_times_modified_gradient(
        model, embeds, mask, target, DeepLiftRule(reference.log, eps), baseline=baseline
    )
    return relevance, reference_logits


def deeplift_rules(
    model: nn.Module, embeds: torch.Tensor, mask: torch.Tensor, target: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """Hand-written DeepLIFT token relevance ``(B, T)`` against the all-zero embeddings."""
    return deeplift_with_reference(model, embeds, mask, target, eps)[0]


def deeplift_captum_cnn(
    model: KimCNN, embeds: torch.Tensor, mask: torch.Tensor, target: torch.Tensor, eps: float = 1e-10
) -> torch.Tensor:
    """Captum's DeepLIFT (rescale rule) on a Kim CNN, token relevance ``(B, T)``."""
    view = CaptumKimCNN(model)
    explainer = DeepLift(view, eps=eps)
    with torch.enable_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Setting forward, backward hooks", category=UserWarning)
        attributions = explainer.attribute(
            embeds.detach().clone().requires_grad_(True),
            baselines=torch.zeros_like(embeds),
            target=target,
            additional_forward_args=(mask,),
        )
    return attributions.sum(-1).detach() * mask.to(embeds.dtype)


@register(
    "deeplift",
    title="DeepLIFT",
    source="Poerner et al. 2018 §3.3",
    architectures=PROPAGATION_ARCHITECTURES,
    params={
        "eps": Param(float, 1e-12, 1.0, optional=True),
        "engine": Param(str, choices=("auto", "rules", "captum")),
    },
)
def deeplift(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    *,
    eps: float | None = None,
    engine: str = "auto",
    **_: Any,
) -> torch.Tensor:
    """DeepLIFT, rescale rule, all-zero embedding baseline; gates as weights (Poerner et al. 2018 §3.3)."""
    model = bundle.model
    if engine not in ("auto", "rules", "captum"):
        raise ValueError(f"unknown DeepLIFT engine {engine!r}; use 'auto', 'rules' or 'captum'")
    with torch.no_grad():
        embeds = model.embed(batch.ids)
    use_captum = engine == "captum" or (engine == "auto" and isinstance(model, KimCNN))
    if use_captum:
        if not isinstance(model, KimCNN):
            raise ValueError("Captum's DeepLift is used for the Kim CNN only")
        return deeplift_captum_cnn(model, embeds, batch.mask, target, 1e-10 if eps is None else eps)
    return deeplift_rules(model, embeds, batch.mask, target, 1e-6 if eps is None else eps)
