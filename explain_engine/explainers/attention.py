"""The model's own weights as explanations: attention weights α_t (Sen et al. 2020 eq. 1–4) and the
rationale model's 0/1 selection (Lei et al. 2016), read from ``ModelOutput.attention`` and pooled to words as the model's ``attention_pooling`` says
(the same maps ``TrainedModel.predict`` returns)."""

from __future__ import annotations

from typing import Any

import torch

from explain_engine.explainers.registry import register
from explain_engine.models.base import EncodedBatch

ATTENTION_ARCHITECTURES = ("lstm_attention", "bilstm_attention", "gru_attention", "bigru_attention")
RATIONALE_ARCHITECTURES = ("rationale",)


def _attention_of(bundle: Any, batch: EncodedBatch) -> torch.Tensor:
    with torch.no_grad():
        attention = bundle.model(batch.ids, batch.mask).attention
    if attention is None:
        raise ValueError(f"architecture {bundle.model.architecture!r} returns no attention")
    return attention * batch.mask


@register(
    "attention",
    title="Attention weights",
    source="Sen et al. 2020 eq. 1–4",
    architectures=ATTENTION_ARCHITECTURES,
    pooling="model",
)
def attention_weights(bundle: Any, batch: EncodedBatch, target: torch.Tensor, **_: Any) -> torch.Tensor:
    """Attention weights α_t over tokens (class-independent: ``target`` is not used)."""
    return _attention_of(bundle, batch)


@register(
    "rationale",
    title="Rationale selection",
    source="Lei et al. 2016",
    architectures=RATIONALE_ARCHITECTURES,
    pooling="model",
)
def rationale_mask(bundle: Any, batch: EncodedBatch, target: torch.Tensor, **_: Any) -> torch.Tensor:
    """The rationale generator's 0/1 token selection (class-independent)."""
    return _attention_of(bundle, batch)
