"""Kim-style 1D CNN for text classification (Lertvittayakumjorn & Toni 2019 §4.2, Figure 1; Kim 2014)."""

from __future__ import annotations

import torch
from torch import nn

from explain_engine.models.base import ModelOutput, TextClassifier


def valid_windows(mask: torch.Tensor, width: int, n_windows: int) -> torch.Tensor:
    """``(B, n_windows)`` True where a filter of ``width`` may be read after max-pooling.

    A window is valid when it starts at one of the first ``max(L - width + 1, 1)`` positions of a
    text of ``L`` real tokens: every window lies inside the text, except that a text shorter
    than the filter keeps its one window (the text followed by zero padding).
    """
    lengths = mask.sum(1, keepdim=True)
    limit = torch.clamp(lengths - width + 1, min=1)
    return torch.arange(n_windows, device=mask.device) < limit


class KimCNN(TextClassifier):
    """Embeddings → Conv1d filters of widths 2, 3, 4 (50 each) → ReLU → masked max-pool over time
    → FC 150 + ReLU → output layer (Lertvittayakumjorn & Toni 2019 §4.2).

    Lertvittayakumjorn & Toni 2019 freezes 200-d GloVe vectors; with no pretrained vectors available offline the
    200-d embeddings here are trained. Dropout (Kim 2014: 0.5) is applied to the pooled
    features while training. Embeddings of padded positions are zeroed and a batch is padded to
    at least the widest filter, so short texts work and padding never changes the output.
    ``extras``: ``feature_maps`` (list of ``(B, 50, T - w + 1)`` after ReLU), ``windows`` (their
    valid-window masks), ``features`` (the pooled ``(B, 150)`` vector ``v``) and ``argmax``
    (``(B, 150)`` start position of the n-gram each filter picked), as Grad-CAM-Text and
    n-gram evidence need them.
    """

    architecture = "cnn"

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        embedding_dim: int = 200,
        filter_sizes: tuple[int, ...] | list[int] = (2, 3, 4),
        num_filters: int = 50,
        fc_size: int = 150,
        dropout: float = 0.5,
    ):
        filter_sizes = tuple(int(w) for w in filter_sizes)
        super().__init__(
            vocab_size=vocab_size,
            num_classes=num_classes,
            embedding_dim=embedding_dim,
            filter_sizes=list(filter_sizes),
            num_filters=num_filters,
            fc_size=fc_size,
            dropout=dropout,
        )
        self.filter_sizes = filter_sizes
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(embedding_dim, num_filters, w) for w in filter_sizes)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(num_filters * len(filter_sizes), fc_size)
        self.out = nn.Linear(fc_size, num_classes)

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        mask = mask.bool()
        x = embeds * mask.unsqueeze(-1).to(embeds.dtype)
        short = max(self.filter_sizes) - x.shape[1]
        if short > 0:
            x = nn.functional.pad(x, (0, 0, 0, short))
        x = x.transpose(1, 2)  # (B, E, T)
        maps, windows, pooled, argmax = [], [], [], []
        for width, conv in zip(self.filter_sizes, self.convs, strict=True):
            fmap = torch.relu(conv(x))
            valid = valid_windows(mask, width, fmap.shape[2])
            best, where = fmap.masked_fill(~valid.unsqueeze(1), float("-inf")).max(dim=2)
            maps.append(fmap)
            windows.append(valid)
            pooled.append(best)
            argmax.append(where)
        features = torch.cat(pooled, dim=1)
        hidden = torch.relu(self.fc(self.dropout(features)))
        logits = self.out(hidden)
        extras = {
            "feature_maps": maps,
            "windows": windows,
            "features": features,
            "argmax": torch.cat(argmax, dim=1),
            "hidden": hidden,
        }
        return ModelOutput(logits, None, extras)
