"""ε-LRP: layer-wise relevance propagation with the epsilon rule (Poerner et al. 2018 §3.2; Lertvittayakumjorn & Toni 2019 §4.3).

``R(L_k) = s(k, X)`` at the target's class score is passed down layer by layer with eq. 8,
``R(i) = Σ_j R(j) a_i w_ij / (a'_j + ε·sign a'_j)``, ε = 0.001, and summed over each token's
embedding dimensions: ``φ_lrp(t, k, X) = Σ_j R(e_{t,j})``.

* On gated RNNs (LSTM, GRU, their bidirectional forms, QRNN) the sigmoid gates act as
  time-step-specific weights and receive no relevance (Arras et al. 2017): in
  ``c_t = f ⊙ c_{t-1} + i ⊙ g_t`` the relevance of ``c_t`` is split between ``c_{t-1}`` and ``g_t``
  in proportion to ``f ⊙ c_{t-1}`` and ``i ⊙ g_t``; ``h_t = o ⊙ tanh(c_t)`` hands all of ``R(h_t)``
  to ``c_t``. The additive attention weights α_i of the attention models are weights too.
* ``bias_factor`` δ (Arras et al. 2017 §3): the default δ = 1 spreads each neuron's bias and
  stabiliser share ``b_j + ε·sign z_j`` evenly over its ``N_j`` non-zero inputs,
  ``R_{k←j} = (y_k w_kj + δ·(b_j + ε·sign z_j)/N_j) / (z_j + ε·sign z_j) · R_j``, so every layer
  hands on exactly the relevance it received and ``Σ_t φ_lrp(t, k, X) = s(k, X)`` (as long as each
  neuron has a non-zero input; zero inputs — the initial states, padding, silent ReLUs — get no
  share). δ = 0 is the plain ε rule of Poerner et al. (2018 eq. 8), where the biases and ε absorb
  their share: on trained LSTMs that share is many times ``s(k, X)`` with the opposite sign.
* On the ReLU CNN with δ = 0 and ε → 0 the result equals gradient × input (Kindermans et al. 2016).
* The propagation runs in float64 (on a double-precision copy of a float32 model): where
  ``f ⊙ c_{t-1}`` and ``i ⊙ g_t`` nearly cancel, their shares of ``R(c_t)`` are large and of opposite
  sign, and over a few hundred time steps float32 round-off outgrows the relevance itself (an SST-2
  LSTM's words summed to 2,709 for a class score of 1.2 on 200-word documents; in float64, to within
  1e-6 of it).

Written by hand (see :mod:`explain_engine.explainers._propagation`): Captum's ``LRP`` only
handles standard ``nn`` layers and cannot treat custom gates or attention weights as weights.
"""

from __future__ import annotations

import copy
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
    model: torch.nn.Module,
    ids: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
    eps: float = 1e-3,
    bias_factor: float = 1.0,
) -> torch.Tensor:
    """ε-LRP token relevance ``(B, T)``, float64, of ``target`` for a model from :data:`PROPAGATION_ARCHITECTURES`.

    ``bias_factor`` 1 is the conservative rule of Arras et al. (2017 §3), 0 the plain ε rule.
    """
    precise = model if next(model.parameters()).dtype == torch.float64 else copy.deepcopy(model).double()
    with torch.no_grad():
        embeds = precise.embed(ids)
    rule = LrpRule(eps, float(bias_factor))
    relevance, _ = input_times_modified_gradient(precise, embeds, mask, target, rule)
    return relevance


@register("lrp", architectures=PROPAGATION_ARCHITECTURES)
def lrp(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    *,
    eps: float = 1e-3,
    bias_factor: float = 1.0,
    **_: Any,
) -> torch.Tensor:
    """ε-LRP (ε = 0.001) with gates and attention as weights (Poerner et al. 2018 §3.2) and the
    conservative bias factor δ = 1 of Arras et al. (2017 §3); ``bias_factor=0`` is the plain ε rule."""
    return lrp_relevance(bundle.model, batch.ids, batch.mask, target, eps, bias_factor)
