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
* **Amplification.** Where ``f ⊙ c_{t-1}`` and ``i ⊙ g_t`` nearly cancel, ``c_t + ε·sign c_t`` is
  tiny and both shares of ``R(c_t)`` are large with opposite signs; step after step these shares
  multiply, and the words' relevances grow far beyond the class score while still summing to it.
  Each text's report (``diagnostics``: ``amplification``) gives ``Σ_t |φ_lrp(t)| / |s(k, X)|`` and a
  warning above :data:`AMPLIFICATION_LIMIT`; a class score near zero (:data:`NEAR_ZERO_SCORE`) makes
  the ratio large without any amplification and is reported apart (``near_zero_score``, a note),
  flagged only when Σ|φ| outgrows that floor past the limit too. On a BiLSTM trained on YELP-HAT reviews (Poerner et
  al.'s sizes) the median over 131 hybrid documents is 2.9·10⁶ at ε = 0.001 and 6 at ε = 0.1; the
  pointing game goes from 0.66 to 0.77 (DeepLIFT 0.73; ``bench/lrp_amplification.py``). A larger
  ``eps`` damps it; the default stays the paper's 0.001.

Written by hand (see :mod:`explain_engine.explainers._propagation`): Captum's ``LRP`` only
handles standard ``nn`` layers and cannot treat custom gates or attention weights as weights.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from explain_engine.explainers._propagation import LrpRule, input_times_modified_gradient
from explain_engine.explainers.registry import Attribution, Param, register
from explain_engine.models.base import EncodedBatch, TextClassifier

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

#: Σ|φ| / |s(k, X)| above which a text's LRP relevance is flagged as amplified. Faithful maps of
#: mixed evidence stay well below it (DeepLIFT and gradient × input on the YELP-HAT BiLSTM: at most
#: 77 and 115 over 40 hybrid documents; LRP at ε = 0.001: median 9·10⁵).
AMPLIFICATION_LIMIT = 1000.0
#: |s(k, X)| below which a class score counts as near zero (in units of the score). There Σ|φ| / |s|
#: is large however modest the relevances are, because the relevances sum to almost nothing; such a
#: text is told apart (``near_zero_score``) and flagged as amplified only when its relevances outgrow
#: this floor past the limit as well.
NEAR_ZERO_SCORE = 0.01


@dataclass(frozen=True)
class Amplification:
    """How far one text's LRP relevances outgrow the class score they sum to: ``ratio`` = ``total_abs`` / |``score``|.

    Amplification proper is relevances that grow large while summing to the score: ``total_abs``
    over ``max(|score|, near_zero)`` past ``limit``. A class score near zero (|s| < ``near_zero``)
    makes ``ratio`` large by itself; it is reported as ``near_zero_score`` and flagged only when
    the relevances are large against the floor too.
    """

    score: float
    total_abs: float
    eps: float
    limit: float = AMPLIFICATION_LIMIT
    near_zero: float = NEAR_ZERO_SCORE

    @property
    def ratio(self) -> float:
        return self.total_abs / abs(self.score) if self.score else float("inf")

    @property
    def near_zero_score(self) -> bool:
        return abs(self.score) < self.near_zero

    @property
    def flagged(self) -> bool:
        return self.total_abs / max(abs(self.score), self.near_zero) > self.limit

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "total_abs": self.total_abs,
            "ratio": self.ratio,
            "eps": self.eps,
            "limit": self.limit,
            "flagged": self.flagged,
            "near_zero_score": self.near_zero_score,
        }

    def warning(self) -> str | None:
        """A sentence for a text whose relevances are amplified past the limit."""
        if not self.flagged:
            return None
        return (
            f"LRP relevance amplified {self.ratio:.3g}x the class score {self.score:.4g} (limit {self.limit:g}x): "
            "nearly cancelling terms of the gated sums (c_t = f*c_(t-1) + i*g_t) blow up both shares, so "
            f"the word ranking is unreliable; a larger stabiliser damps it (eps {self.eps:g} now, try 0.1)"
        )

    def note(self) -> str | None:
        """A sentence for a near-zero class score whose relevances are not amplified."""
        if not self.near_zero_score or self.flagged:
            return None
        return (
            f"class score {self.score:.3g} is near zero (|s| < {self.near_zero:g}): relevance / score is "
            f"{self.ratio:.3g}x because the score is, not because the relevances ({self.total_abs:.3g} in all) "
            "are amplified"
        )


def amplification_summary(
    method: str, diagnostics: Sequence[dict], ids: Sequence[Any] | None = None
) -> str | None:
    """One line on a method's amplification over its texts (median, 90th percentile, max, flagged); None when it reports none."""
    checks = [d["amplification"] for d in diagnostics if "amplification" in d]
    if not checks:
        return None
    ratios = np.array([c["ratio"] for c in checks])
    flagged = [i for i, c in enumerate(checks) if c["flagged"]]
    line = (
        f"{method}: relevance / class score (sum of |relevance|): median {np.median(ratios):.3g}, "
        f"90th percentile {np.percentile(ratios, 90):.3g}, max {ratios.max():.3g} (eps {checks[0]['eps']:g})"
    )
    near_zero = [i for i, c in enumerate(checks) if c.get("near_zero_score") and not c["flagged"]]

    def shown(rows: list[int]) -> str:
        names = [str(ids[i]) if ids is not None else str(i) for i in rows]
        return ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")

    if flagged:
        line += (
            f"; AMPLIFIED above {checks[0]['limit']:g}x, flagged: {len(flagged)} of {len(checks)} "
            f"({shown(flagged)}); try --param lrp.eps=0.1"
        )
    if near_zero:
        line += (
            f"; near-zero class score, not amplified: {len(near_zero)} of {len(checks)} ({shown(near_zero)}; "
            "their ratio is large because |s| is small)"
        )
    return line


def lrp_relevance(
    model: TextClassifier,
    ids: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
    eps: float = 1e-3,
    bias_factor: float = 1.0,
    *,
    with_scores: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """ε-LRP token relevance ``(B, T)``, float64, of ``target`` for a model from :data:`PROPAGATION_ARCHITECTURES`.

    ``bias_factor`` 1 is the conservative rule of Arras et al. (2017 §3), 0 the plain ε rule.
    ``with_scores``: also the class scores ``s(k, X)`` ``(B,)`` of the same double-precision pass.
    """
    precise = model if next(model.parameters()).dtype == torch.float64 else copy.deepcopy(model).double()
    with torch.no_grad():
        embeds = precise.embed(ids)
    rule = LrpRule(eps, float(bias_factor))
    relevance, _, scores = input_times_modified_gradient(precise, embeds, mask, target, rule)
    return (relevance, scores) if with_scores else relevance


@register(
    "lrp",
    title="ε-LRP",
    source="Poerner et al. 2018 §3.2",
    architectures=PROPAGATION_ARCHITECTURES,
    params={"eps": Param(float, 1e-12, 1.0), "bias_factor": Param(float, 0.0, 1.0)},
)
def lrp(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    *,
    eps: float = 1e-3,
    bias_factor: float = 1.0,
    **_: Any,
) -> Attribution:
    """ε-LRP (ε = 0.001) with gates and attention as weights (Poerner et al. 2018 §3.2) and the
    conservative bias factor δ = 1 of Arras et al. (2017 §3); ``bias_factor=0`` is the plain ε rule.
    Each text reports its :class:`Amplification`, with a warning past the limit."""
    relevance, scores = lrp_relevance(
        bundle.model, batch.ids, batch.mask, target, eps, bias_factor, with_scores=True
    )
    diagnostics = []
    for row, score in zip(relevance.abs().sum(1).tolist(), scores.tolist(), strict=True):
        check = Amplification(score=float(score), total_abs=float(row), eps=float(eps))
        entry: dict[str, Any] = {"amplification": check.to_dict()}
        if check.flagged:
            entry["warnings"] = [check.warning()]
        elif check.near_zero_score:
            entry["notes"] = [check.note()]
        diagnostics.append(entry)
    return Attribution(relevance, diagnostics=diagnostics)
