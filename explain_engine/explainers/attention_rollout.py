"""A transformer's self-attention as explanations: the last layer's raw attention and attention
rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", §3).

Both read the model's per-layer maps ``model.attention_maps(ids, mask)`` (one ``(B, H, T, T)``
tensor per layer, row = query, column = key) and the row of the classification token
(``model.cls_position``):

* ``attention_last``: the last layer's attention of the classification token, averaged over heads;
* ``attention_rollout``: per layer, the heads' average W plus the identity for the residual
  connection, rows normalised, A = (W + I) / rowsum; the layers multiplied, Ã = A_L · … · A_1; the
  classification token's row of Ã.

Padding is masked before anything else: padded keys get no attention, padded queries keep only the
identity, so no mass flows through them and the maps are the same whatever a text is padded to.
Written by hand (a few tensor operations; no well-kept library ships rollout for arbitrary
models). Tokens of no word (the model's special tokens) are zeroed, so they never carry relevance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from explain_engine.explainers.registry import register
from explain_engine.models.base import EncodedBatch

TRANSFORMER_ARCHITECTURES: tuple[str, ...] = ("transformer",)


def _head_average(layer: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B, H, T, T)`` → ``(B, T, T)``: the heads' mean with padded rows and columns zeroed."""
    if layer.ndim != 4 or layer.shape[-1] != layer.shape[-2] or layer.shape[0] != mask.shape[0]:
        raise ValueError(
            f"an attention map must be (B, H, T, T) for {tuple(mask.shape)} tokens, got {tuple(layer.shape)}"
        )
    real = mask.to(layer.dtype)
    return layer.mean(dim=1) * real[:, :, None] * real[:, None, :]


def last_layer_attention(maps: Sequence[torch.Tensor], mask: torch.Tensor, position: int = 0) -> torch.Tensor:
    """The last layer's attention from token ``position`` to every token, averaged over heads ``(B, T)``."""
    if not maps:
        raise ValueError("no attention maps: the model returned no layers")
    return _head_average(maps[-1], mask.bool())[:, position, :]


def rollout(maps: Sequence[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    """Attention rollout Ã = A_L · … · A_1 with A = (W̄ + I) / rowsum (Abnar & Zuidema 2020 §3) ``(B, T, T)``."""
    if not maps:
        raise ValueError("no attention maps: the model returned no layers")
    mask = mask.bool()
    eye = torch.eye(mask.shape[1], dtype=maps[0].dtype, device=maps[0].device)
    flow: torch.Tensor | None = None
    for layer in maps:
        mixed = _head_average(layer, mask) + eye
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        flow = mixed if flow is None else torch.bmm(mixed, flow)
    assert flow is not None
    return flow


def rollout_attention(maps: Sequence[torch.Tensor], mask: torch.Tensor, position: int = 0) -> torch.Tensor:
    """The rolled-out attention of token ``position`` to every input token ``(B, T)``."""
    return rollout(maps, mask)[:, position, :] * mask.to(maps[0].dtype)


def _maps(bundle: Any, batch: EncodedBatch) -> tuple[tuple[torch.Tensor, ...], int]:
    model = bundle.model
    if not hasattr(model, "attention_maps"):
        raise ValueError(f"architecture {getattr(model, 'architecture', '?')!r} exposes no attention maps")
    with torch.no_grad():
        maps = tuple(model.attention_maps(batch.ids, batch.mask))
    return maps, int(getattr(model, "cls_position", 0))


@register(
    "attention_last",
    title="Last layer's attention",
    source="Abnar & Zuidema 2020 §3",
    architectures=TRANSFORMER_ARCHITECTURES,
)
def attention_last(bundle: Any, batch: EncodedBatch, target: torch.Tensor, **_: Any) -> torch.Tensor:
    """Last-layer attention of the classification token, averaged over heads (class-independent)."""
    maps, position = _maps(bundle, batch)
    return last_layer_attention(maps, batch.mask, position) * batch.word_mask()


@register(
    "attention_rollout",
    title="Attention rollout",
    source="Abnar & Zuidema 2020 §3",
    architectures=TRANSFORMER_ARCHITECTURES,
)
def attention_rollout(bundle: Any, batch: EncodedBatch, target: torch.Tensor, **_: Any) -> torch.Tensor:
    """Attention rollout of the classification token (Abnar & Zuidema 2020 §3; class-independent)."""
    maps, position = _maps(bundle, batch)
    return rollout_attention(maps, batch.mask, position) * batch.word_mask()
