"""Sub-word tokenisation by a checkpoint's fast tokenizer, mapped back to canonical words.

:class:`SubwordVocabulary` has the interface of :class:`explain_engine.vocab.Vocabulary` (``tokenize``,
``encode``, ``collate``, ``len``) for the transformer family. A text is tokenised as the checkpoint was
trained to read it (``[CLS] pieces [SEP]`` for BERT); each piece is given to the canonical word
(:func:`explain_engine.text.word_spans`) its character offsets (``return_offsets_mapping``) fall in, so
a word's relevance is the **sum over its pieces** when token scores are pooled onto words. Special
tokens ([CLS], [SEP], …) belong to no word: their owner is ``-1``. Pooling leaves them out, and every
perturbation method keeps them in each perturbed row (they are never a unit to remove). Truncation to
``max_len`` counts the special tokens and keeps them: the last pieces are cut.

The tokenizer is saved and loaded with its own ``save_pretrained`` / ``from_pretrained``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from pathlib import Path

from explain_engine import text as textlib
from explain_engine.extras import optional
from explain_engine.models.base import EncodedBatch
from explain_engine.models.transformer import checkpoint_error, hf_transformers, offline
from explain_engine.vocab import TokenizedText, Vocabulary

#: Owner of a token that belongs to no canonical word (a special token).
NO_WORD = -1


def piece_owners(
    spans: Sequence[Sequence[int]], offsets: Sequence[Sequence[int]], special: Sequence[int]
) -> list[int]:
    """The canonical word of each piece: the word that contains the piece's first character.

    A piece that starts on white space (byte-level BPE keeps the space before a word) goes to the
    next word; an empty piece at the end of the text to the last word; a special piece to
    :data:`NO_WORD`.
    """
    ends = [int(e) for _, e in spans]
    owners = []
    for (start, _), is_special in zip(offsets, special, strict=True):
        if is_special:
            owners.append(NO_WORD)
        else:
            owners.append(min(bisect.bisect_right(ends, int(start)), len(ends) - 1))
    return owners


class SubwordVocabulary:
    """A fast Hugging Face tokenizer as a :class:`~explain_engine.vocab.Vocabulary`.

    ``max_positions`` bounds every text (special tokens included) when the caller gives no
    ``max_len`` or a larger one: the model's position embeddings allow no more.
    """

    def __init__(self, tokenizer, max_positions: int | None = None):
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(
                f"{type(tokenizer).__name__} is not a fast tokenizer; character offsets need one"
            )
        self.tokenizer = tokenizer
        self.max_positions = max_positions

    @classmethod
    def from_pretrained(cls, checkpoint: str | Path, max_positions: int | None = None) -> SubwordVocabulary:
        """The fast tokenizer of ``checkpoint`` (a local folder or a hub name)."""
        library = hf_transformers()
        try:
            tokenizer = library.AutoTokenizer.from_pretrained(str(checkpoint), local_files_only=offline())
        except (OSError, ValueError) as exc:
            raise checkpoint_error(checkpoint, "tokenizer", exc) from None
        return cls(tokenizer, max_positions)

    def save_pretrained(self, directory: str | Path) -> None:
        self.tokenizer.save_pretrained(str(directory))

    def __len__(self) -> int:
        return len(self.tokenizer)

    @property
    def unk_id(self) -> int:
        """The id of the unknown token (word dropout replaces tokens by it)."""
        unk = self.tokenizer.unk_token_id
        return int(unk if unk is not None else self.tokenizer.pad_token_id or 0)

    @property
    def special_ids(self) -> tuple[int, ...]:
        """The ids of the tokenizer's special tokens ([CLS], [SEP], …), which word dropout never replaces."""
        return tuple(sorted(self.tokenizer.all_special_ids))

    def limit(self, max_len: int | None) -> int | None:
        """The number of tokens kept: ``max_len`` bounded by the model's positions."""
        bounds = [n for n in (max_len, self.max_positions) if n is not None]
        return min(bounds) if bounds else None

    def tokenize(self, text: str, max_len: int | None = None) -> TokenizedText:
        """``text`` as piece ids with special tokens, each piece's canonical word (``-1``: special)."""
        spans = textlib.word_spans(text)
        if not spans:
            raise ValueError("cannot encode a text with no words")
        limit = self.limit(max_len)
        encoded = self.tokenizer(
            text,
            add_special_tokens=True,
            truncation=limit is not None,
            max_length=limit,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
        )
        owners = piece_owners(spans, encoded["offset_mapping"], encoded["special_tokens_mask"])
        return TokenizedText(list(encoded["input_ids"]), owners, len(spans))

    def encode(self, texts: list[str], max_len: int | None = None) -> EncodedBatch:
        """A padded batch (``ids``, ``mask``) with each piece's canonical word (``owners``)."""
        return self.collate([self.tokenize(t, max_len) for t in texts], texts)

    #: Padding as the word vocabulary pads (id 0 on masked positions, which the attention mask hides).
    collate = staticmethod(Vocabulary.collate)


#: The special tokens of a BERT WordPiece vocabulary, in the order :func:`train_wordpiece` gives them ids.
BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_wordpiece(texts: Iterable[str], vocab_size: int):
    """A lower-casing BERT WordPiece tokenizer (Devlin et al. 2019 §3) trained on ``texts`` with the
    ``tokenizers`` library, reading ``[CLS] text [SEP]``: the tokenizer of a transformer built from a
    config rather than a checkpoint. A small ``vocab_size`` splits rarer words into several pieces."""
    tokenizers = optional("tokenizers", extra="transformers", family="transformer")
    tok = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tok.decoder = tokenizers.decoders.WordPiece()
    trainer = tokenizers.trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=list(BERT_SPECIAL_TOKENS)
    )
    tok.train_from_iterator(list(texts), trainer)
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return hf_transformers().PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
