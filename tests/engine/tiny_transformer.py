"""A tiny BERT checkpoint folder for tests: a WordPiece tokenizer trained on the test's own texts and a
randomly initialised BertForSequenceClassification (hidden 16, 2 heads), both written with
``save_pretrained`` so that the engine loads them as it would load a real checkpoint."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

transformers = pytest.importorskip(
    "transformers", reason="the optional extra 'transformers' is not installed"
)
tokenizers = pytest.importorskip("tokenizers", reason="the optional extra 'transformers' is not installed")

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_tokenizer(texts: Sequence[str], vocab_size: int = 120):
    """A lower-casing BERT WordPiece tokenizer trained on ``texts`` (a small vocabulary, so that
    rarer words are split into several pieces)."""
    tok = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tok.decoder = tokenizers.decoders.WordPiece()
    trainer = tokenizers.trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL)
    tok.train_from_iterator(list(texts), trainer)
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


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
    """Write a tiny BERT sequence classifier and its tokenizer to ``folder``; return the folder."""
    import torch

    tokenizer = wordpiece_tokenizer(texts, vocab_size)
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
