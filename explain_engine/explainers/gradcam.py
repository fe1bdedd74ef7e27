"""Grad-CAM-Text for 1D CNNs (Lertvittayakumjorn & Toni 2019 §4.3.1, eq. 1; after Selvaraju et al. 2017).

Each entry ``v_k`` of the max-pooled feature vector ``v`` is the activation of filter ``k`` on one
n-gram ``N_k`` of the text (the window its max-pool picked). Its effect on class ``j`` is

    E_{j,k} = |max(∂FC(v)_j / ∂v_k, 0)| × v_k                      (eq. 1)

with ``FC`` the fully-connected part (hidden layer + output layer, class scores before the
softmax), and the effect of word ``w_i`` is ``E_{j,w_i} = Σ_k E_{j,k} · I[w_i ∈ N_k]``. For
counter-evidence the paper changes ``max`` to ``min``: ``E⁻_{j,k} = |min(∂FC(v)_j/∂v_k, 0)| × v_k``.

``part`` picks what is returned per token: ``"positive"`` is eq. 1 (evidence), ``"negative"`` is
``−Σ_k E⁻_{j,k} I[w ∈ N_k]`` (counter-evidence, ≤ 0), ``"signed"`` their sum
``Σ_k (∂FC(v)_j/∂v_k) v_k I[w ∈ N_k]``. The registered method's default, ``"paper"``, is the
paper's pair: the positive part as the word scores (evidence: the top m) and the negative part as
the counter-evidence scores (the bottom m), so that a word whose filters pull both ways is ranked
by each part on its own instead of by what is left after they cancel. A token outside every
picked n-gram scores 0. Evidence n-grams are chosen among the n-grams the filters detected, not
among all n-grams of the filter widths (§4.3.1: "non-overlapping n-grams which are detected by at
least one of the filters"): the method returns them beside the scores (``Attribution.ngrams``).

Written by hand: Captum's ``LayerGradCam`` averages gradients over a 2D feature map's positions,
which is not this text adaptation (one gradient per pooled filter, spread over its n-gram).
"""

from __future__ import annotations

from typing import Any

import torch

from explain_engine.explainers.registry import Attribution, Param, register
from explain_engine.models.base import EncodedBatch
from explain_engine.models.cnn import KimCNN

PARTS = ("signed", "positive", "negative")
#: ``part`` values of the registered method: the paper's evidence/counter-evidence pair, or one part.
METHOD_PARTS = ("paper", *PARTS)


def ngram_membership(model: KimCNN, argmax: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B, F, T)`` indicator: token ``t`` lies in the n-gram that filter ``f`` picked (real tokens only)."""
    widths = torch.cat(
        [
            torch.full((conv.out_channels,), w, device=argmax.device)  # type: ignore[arg-type]  # torch types a ModuleList's items as Module
            for w, conv in zip(model.filter_sizes, model.convs, strict=True)
        ]
    )
    pos = torch.arange(mask.shape[1], device=argmax.device).view(1, 1, -1)
    start = argmax.unsqueeze(-1)
    inside = (pos >= start) & (pos < start + widths.view(1, -1, 1))
    return inside & mask.bool().unsqueeze(1)


def detected_ngrams(model: KimCNN, argmax: torch.Tensor, mask: torch.Tensor) -> list[list[tuple[int, int]]]:
    """Per text, the token spans ``[start, end)`` the filters detected (the window each filter's
    max-pool picked, cut at the text's end), each once: the n-grams Grad-CAM-Text picks its evidence
    from (Lertvittayakumjorn & Toni 2019 §4.3.1)."""
    members = ngram_membership(model, argmax, mask)
    out = []
    for row in members:
        spans = set()
        for inside in row:
            where = inside.nonzero().flatten()
            if where.numel():
                spans.add((int(where[0]), int(where[-1]) + 1))
        out.append(sorted(spans))
    return out


def filter_effects(
    model: KimCNN, features: torch.Tensor, target: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``∂FC(v)_j/∂v_k`` and ``v`` ``(B, F)`` for the pooled features ``v`` and class ``j = target``."""
    with torch.enable_grad():
        v = features.detach().requires_grad_(True)
        scores = model.out(torch.relu(model.fc(v)))
        (grad,) = torch.autograd.grad(scores.gather(1, target.view(-1, 1)).sum(), v)
    return grad, v.detach()


def gradcam_text(
    model: KimCNN, ids: torch.Tensor, mask: torch.Tensor, target: torch.Tensor, part: str = "signed"
) -> torch.Tensor:
    """Grad-CAM-Text token relevance ``(B, T)`` of ``target`` (Lertvittayakumjorn & Toni 2019 eq. 1 and the word sum after it)."""
    if part not in PARTS:
        raise ValueError(f"unknown Grad-CAM-Text part {part!r}; use one of {PARTS}")
    if not isinstance(model, KimCNN):
        raise TypeError("Grad-CAM-Text applies to the Kim CNN only")
    with torch.no_grad():
        extras = model(ids, mask).extras
    grad, v = filter_effects(model, extras["features"], target.to(ids.device))
    if part == "positive":
        effect = grad.clamp(min=0) * v
    elif part == "negative":
        effect = grad.clamp(max=0) * v
    else:
        effect = grad * v
    members = ngram_membership(model, extras["argmax"], mask).to(effect.dtype)
    return torch.einsum("bf,bft->bt", effect, members)


@register(
    "gradcam",
    title="Grad-CAM-Text",
    source="Lertvittayakumjorn & Toni 2019 §4.3.1, eq. 1",
    architectures=("cnn",),
    params={"part": Param(str, choices=METHOD_PARTS)},
)
def gradcam(
    bundle: Any, batch: EncodedBatch, target: torch.Tensor, *, part: str = "paper", **_: Any
) -> torch.Tensor | Attribution:
    """Grad-CAM-Text: evidence from max(∂FC/∂v_k, 0)·v_k, counter-evidence from the min part (Lertvittayakumjorn & Toni 2019 eq. 1)."""
    with torch.no_grad():
        argmax = bundle.model(batch.ids, batch.mask).extras["argmax"]
    ngrams = detected_ngrams(bundle.model, argmax, batch.mask)
    if part == "paper":
        return Attribution(
            gradcam_text(bundle.model, batch.ids, batch.mask, target, "positive"),
            counter=gradcam_text(bundle.model, batch.ids, batch.mask, target, "negative"),
            ngrams=ngrams,
        )
    return Attribution(gradcam_text(bundle.model, batch.ids, batch.mask, target, part), ngrams=ngrams)
