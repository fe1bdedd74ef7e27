"""ε-LRP: layer-wise relevance propagation with the epsilon rule (Poerner et al. 2018 §3.2; Lertvittayakumjorn & Toni 2019 §4.3).

``R(L_k) = s(k, X)`` at the target's class score is passed down layer by layer with eq. 8,
``R(i) = Σ_j R(j) a_i w_ij / (a'_j + ε·sign a'_j)``, ε = 0.001, and summed over each token's
embedding dimensions: ``φ_lrp(t, k, X) = Σ_j R(e_{t,j})``.

* On gated RNNs (LSTM, GRU, their bidirectional forms, QRNN) the sigmoid gates act as
  time-step-specific weights and receive no relevance (Arras et al. 2017): in
  ``c_t = f ⊙ c_{t-1} + i ⊙ g_t`` the relevance of ``c_t`` is split between ``c_{t-1}`` and ``g_t``
  in proportion to ``f ⊙ c_{t-1}`` and ``i ⊙ g_t``; ``h_t = o ⊙ tanh(c_t)`` hands all of ``R(h_t)``
  to ``c_t``. The additive attention weights α_i of the attention models are weights too.
* Relevance is conserved layer to layer except for what the biases (and ε) absorb.
* On the ReLU CNN with ε → 0 the result equals gradient × input (Kindermans et al. 2016).

Written by hand (see :mod:`explain_engine.explainers._propagation`): Captum's ``LRP`` only
handles standard ``nn`` layers and cannot treat custom gates or attention weights as weights.
"""

from __future__ import annotations

from typing import Any

import torch

from explain_engine.explainers._propagation import LrpRule, input_times_modified_gradient
from explain_engine.explainers.registry import register
from explain_engine.models.base import EncodedBatch

PROPAGATION_ARCHITECTURES: tuple[str, ...] = (
    "cnn",
    "lstm",
    "bilstm",
    "gru",
    "bigru",
    "lstm_attention",
    "bilstm_attention",
    "gru_attention",
    "bigru_attention",
    "qrnn",
)


def lrp_relevance(
    model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, target: torch.Tensor, eps: float = 1e-3
) -> torch.Tensor:
    """ε-LRP token relevance ``(B, T)`` of ``target`` for a model from :data:`PROPAGATION_ARCHITECTURES`."""
    with torch.no_grad():
        embeds = model.embed(ids)
    relevance, _ = input_times_modified_gradient(model, embeds, mask, target, LrpRule(eps))
    return relevance


@register("lrp", architectures=PROPAGATION_ARCHITECTURES)
def lrp(
    bundle: Any, batch: EncodedBatch, target: torch.Tensor, *, eps: float = 1e-3, **_: Any
) -> torch.Tensor:
    """ε-LRP (ε = 0.001) with gates and attention as weights (Poerner et al. 2018 §3.2)."""
    return lrp_relevance(bundle.model, batch.ids, batch.mask, target, eps)
