"""The fastest exact forward pass of a chunk of (possibly perturbed) texts.

Shared by the registry (the predicted class of a batch) and by every perturbation method; it lives
apart from both so that neither has to import the other.
"""

from __future__ import annotations

import torch

from explain_engine.models.base import TextClassifier
from explain_engine.models.cnn import KimCNN, valid_windows


def cnn_lookup_logits(
    model: KimCNN, ids: torch.Tensor, mask: torch.Tensor, zero: torch.Tensor | None
) -> torch.Tensor:
    """Logits of a Kim CNN (eval mode) with its convolutions read from a lookup table.

    A filter's response is b + Σ_o W_o · e_{t+o}; with embeddings drawn from a vocabulary, each
    W_o · e is computed once per distinct token of the chunk and the convolution becomes a sum of
    gathered rows — the same function as ``model.forward`` (tested to float precision) at a fraction
    of the cost, since perturbed copies of a text share their tokens.
    """
    mask = mask.bool()
    keep = mask if zero is None else mask & ~zero
    distinct, inverse = torch.unique(ids, return_inverse=True)
    embeds = model.embed(distinct)
    inverse = torch.where(keep, inverse, len(distinct))  # the extra row is the zero vector
    widest = max(model.filter_sizes)
    if inverse.shape[1] < widest:
        inverse = torch.nn.functional.pad(inverse, (0, widest - inverse.shape[1]), value=len(distinct))
    pooled = []
    for width, conv in zip(model.filter_sizes, model.convs, strict=True):
        table = torch.einsum("ue,feo->ouf", embeds, conv.weight)
        table = torch.nn.functional.pad(table, (0, 0, 0, 1))
        windows = inverse.shape[1] - width + 1
        response = torch.nn.functional.embedding(inverse[:, :windows], table[0])
        for o in range(1, width):
            response += torch.nn.functional.embedding(inverse[:, o : o + windows], table[o])
        response += conv.bias  # type: ignore[arg-type]  # torch types a ModuleList's items as Module
        # After the ReLU every response is ≥ 0, so zeroing the invalid windows keeps the maximum.
        torch.relu_(response).mul_(valid_windows(mask, width, windows)[..., None])
        pooled.append(response.amax(dim=1))
    hidden = torch.relu(model.fc(torch.cat(pooled, dim=1)))
    return model.out(hidden)


def run_chunk(
    model: TextClassifier, ids: torch.Tensor, mask: torch.Tensor, zero: torch.Tensor | None
) -> torch.Tensor:
    """Logits of one chunk (zeroed embeddings where ``zero`` is set).

    A Kim CNN in eval mode runs through :func:`cnn_lookup_logits`; other models through ``forward``.
    """
    if isinstance(model, KimCNN) and not model.training:
        return cnn_lookup_logits(model, ids, mask, zero)
    if zero is None or not bool(zero.any()):
        return model(ids, mask).logits
    embeds = model.embed(ids).masked_fill(zero[..., None], 0.0)
    return model(ids, mask, embeds=embeds).logits
