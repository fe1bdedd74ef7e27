"""Token vocabulary: model tokens (``text.model_tokens``) to ids, and padded batches back to words."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from explain_engine import text as textlib
from explain_engine.models.base import EncodedBatch

PAD, UNK = "<pad>", "<unk>"
PAD_ID, UNK_ID = 0, 1


@dataclass
class TokenizedText:
    """One text as model tokens: ids, the canonical word of each token, and the word count."""

    ids: list[int]
    owner: list[int]
    n_words: int


def tokenize(text: str) -> tuple[list[str], list[int], int]:
    """Model tokens of ``text``, the canonical word index of each, and the number of words."""
    spans = textlib.word_spans(text)
    tokens, _, owner = textlib.model_tokens(text, spans)
    return tokens, owner, len(spans)


class Vocabulary:
    """Maps model tokens to ids; ``<pad>`` is 0 and ``<unk>`` (any unknown token) is 1."""

    def __init__(self, itos: Sequence[str], min_count: int = 1, max_size: int | None = None):
        if list(itos[:2]) != [PAD, UNK]:
            raise ValueError(f"a vocabulary starts with {PAD!r}, {UNK!r}")
        self.itos = list(itos)
        self.stoi = {tok: i for i, tok in enumerate(self.itos)}
        self.min_count = min_count
        self.max_size = max_size

    @classmethod
    def build(cls, texts: Iterable[str], min_count: int = 1, max_size: int | None = None) -> Vocabulary:
        """Tokens seen at least ``min_count`` times, most frequent first (ties alphabetical),
        at most ``max_size`` entries including ``<pad>`` and ``<unk>``."""
        counts: Counter[str] = Counter()
        for t in texts:
            counts.update(tokenize(t)[0])
        kept = sorted(
            (tok for tok, n in counts.items() if n >= min_count), key=lambda tok: (-counts[tok], tok)
        )
        if max_size is not None:
            kept = kept[: max(max_size - 2, 0)]
        return cls([PAD, UNK, *kept], min_count=min_count, max_size=max_size)

    def __len__(self) -> int:
        return len(self.itos)

    #: Ids word dropout never replaces (a word vocabulary has none: ``<pad>`` is never a real token).
    special_ids: tuple[int, ...] = ()

    @property
    def unk_id(self) -> int:
        """The id of ``<unk>`` (word dropout replaces tokens by it)."""
        return UNK_ID

    def tokenize(self, text: str, max_len: int | None = None) -> TokenizedText:
        """``text`` as ids (truncated to the first ``max_len`` tokens) with token→word owners."""
        tokens, owner, n_words = tokenize(text)
        if not tokens:
            raise ValueError("cannot encode a text with no words")
        if max_len is not None:
            tokens, owner = tokens[:max_len], owner[:max_len]
        return TokenizedText([self.stoi.get(tok, UNK_ID) for tok in tokens], owner, n_words)

    def encode(self, texts: list[str], max_len: int | None = None) -> EncodedBatch:
        """A padded batch (``ids``, ``mask``) with each token's canonical word (``owners``)."""
        return self.collate([self.tokenize(t, max_len) for t in texts], texts)

    @staticmethod
    def collate(items: Sequence[TokenizedText], texts: Sequence[str]) -> EncodedBatch:
        """Pad tokenized texts into one :class:`EncodedBatch`."""
        width = max((len(it.ids) for it in items), default=0)
        ids = torch.zeros(len(items), width, dtype=torch.long)
        for row, it in enumerate(items):
            ids[row, : len(it.ids)] = torch.tensor(it.ids, dtype=torch.long)
        lengths = torch.tensor([len(it.ids) for it in items], dtype=torch.long)
        mask = torch.arange(width) < lengths.unsqueeze(1)
        return EncodedBatch(
            ids, mask, [list(it.owner) for it in items], [it.n_words for it in items], list(texts)
        )

    def to_dict(self) -> dict:
        return {"itos": self.itos, "min_count": self.min_count, "max_size": self.max_size}

    @classmethod
    def from_dict(cls, data: dict) -> Vocabulary:
        return cls(data["itos"], min_count=data.get("min_count", 1), max_size=data.get("max_size"))
