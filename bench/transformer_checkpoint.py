"""A transformer checkpoint for the benchmarks, built from a config (nothing is downloaded).

A BERT sequence classifier with random weights (speed does not depend on training) is written with
``save_pretrained`` beside a WordPiece tokenizer trained on the benchmark's own texts, and loaded back
through the engine as any checkpoint folder would be. Sizes:

* ``small``: 2 layers, hidden 64, 2 heads, feed-forward 256 (seconds on one CPU thread);
* ``base``: BERT-base (Devlin et al. 2019 §3: 12 layers, hidden 768, 12 heads, feed-forward 3072,
  a 30,522-row word embedding), for a GPU.

Needs the engine's optional extra ``transformers``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import tokenizers
import torch
import transformers

from explain_engine.artifacts import TrainedModel
from explain_engine.models import build_model
from explain_engine.subword import SubwordVocabulary

SIZES: dict[str, dict[str, int]] = {
    "small": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 256},
    "base": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "vocab_size": 30522,
    },
}
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_tokenizer(texts: Sequence[str], vocab_size: int = 2000) -> transformers.PreTrainedTokenizerFast:
    """A lower-casing BERT WordPiece tokenizer trained on ``texts``, reading ``[CLS] text [SEP]``."""
    tok = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tok.decoder = tokenizers.decoders.WordPiece()
    tok.train_from_iterator(
        list(texts), tokenizers.trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL)
    )
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
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


def write_checkpoint(folder: Path, texts: Sequence[str], size: str = "small", seed: int = 0) -> Path:
    """Write a BERT classifier of ``size`` (:data:`SIZES`) and its tokenizer to ``folder``."""
    if size not in SIZES:
        raise ValueError(f"unknown transformer size {size!r}; choose one of {', '.join(SIZES)}")
    tokenizer = wordpiece_tokenizer(texts)
    sizes = dict(SIZES[size])
    sizes["vocab_size"] = max(sizes.get("vocab_size", 0), len(tokenizer))
    config = transformers.BertConfig(
        **sizes, max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id, num_labels=2
    )
    torch.manual_seed(seed)
    transformers.BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def transformer_bundle(texts: Sequence[str], size: str, device: torch.device | str) -> TrainedModel:
    """A two-class transformer of ``size`` loaded through the engine, its tokenizer trained on ``texts``."""
    with tempfile.TemporaryDirectory(prefix="bench-transformer-") as tmp:
        folder = write_checkpoint(Path(tmp), texts, size)
        model = build_model("transformer", 0, 2, checkpoint=str(folder))
        vocab = SubwordVocabulary.from_pretrained(folder, model.max_positions)
    return TrainedModel(model, vocab, ["neg", "pos"], device=device)
