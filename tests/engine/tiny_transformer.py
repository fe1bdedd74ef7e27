"""A tiny BERT checkpoint folder for tests: a WordPiece tokenizer trained on the test's own texts and a
randomly initialised BertForSequenceClassification (hidden 16, 2 heads), both written with
``save_pretrained`` so that the engine loads them as it would load a real checkpoint."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from explain_engine.subword import train_wordpiece

transformers = pytest.importorskip(
    "transformers", reason="the optional extra 'transformers' is not installed"
)
pytest.importorskip("tokenizers", reason="the optional extra 'transformers' is not installed")


def build_tiny_checkpoint(
    folder: Path,
    texts: Sequence[str],
    *,
    vocab_size: int = 120,
    hidden: int = 16,
    layers: int = 2,
    heads: int = 2,
    max_positions: int = 64,
    seed: int = 0,
) -> Path:
    """Write a tiny BERT sequence classifier and its tokenizer (a small vocabulary, so that rarer words
    are split into several pieces) to ``folder``; return the folder."""
    tokenizer = train_wordpiece(texts, vocab_size)
    config = transformers.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * hidden,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = transformers.BertForSequenceClassification(config)
    folder = Path(folder)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder
