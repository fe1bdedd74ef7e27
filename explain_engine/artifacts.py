"""A trained model bundle: weights, vocabulary, labels, configuration and metrics in one folder.

Folder layout: ``model.pt`` (the ``state_dict``), ``vocab.json``, ``config.json`` (architecture,
model arguments, labels, training configuration, seed) and ``metrics.json``. A transformer keeps its
network and tokenizer in the ``transformers`` library's own format instead of ``model.pt`` and
``vocab.json``: both ``save_pretrained`` into the sub-folder :data:`PRETRAINED_FOLDER`, and
``config.json`` says so (``"weights": {"format": "transformers", "folder": ...}``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from explain_engine import text as textlib
from explain_engine.models import TextClassifier, build_model
from explain_engine.models.base import EncodedBatch
from explain_engine.models.transformer import TransformerClassifier
from explain_engine.subword import SubwordVocabulary
from explain_engine.vocab import Vocabulary

FORMAT_VERSION = 1
PRETRAINED_FOLDER = "transformer"


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else CUDA when present, else the CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TrainedModel:
    """A classifier ready to use: ``.model`` (eval mode, on ``.device``), ``.vocab``, ``.labels``
    (class index → label string), ``.config`` and ``.metrics``."""

    def __init__(
        self,
        model: TextClassifier,
        vocab: Vocabulary | SubwordVocabulary,
        labels: Sequence[str],
        config: dict | None = None,
        metrics: dict | None = None,
        device: str | torch.device | None = None,
    ):
        self.device = pick_device(device)
        self.model = model.to(self.device).eval()
        self.vocab = vocab
        self.labels = [str(label) for label in labels]
        self.config = dict(config or {})
        self.metrics = dict(metrics or {})

    @property
    def max_len(self) -> int | None:
        return self.config.get("max_len")

    def encode(self, texts: Sequence[str]) -> EncodedBatch:
        """``texts`` as a padded batch on :attr:`device`."""
        return self.vocab.encode(list(texts), max_len=self.max_len).to(self.device)

    def _batches(self, texts: Sequence[str], batch_size: int, max_tokens: int | None = None):
        """Batches of similar length (fewer padded steps); yields (original indices, batch, output).

        A batch holds at most ``batch_size`` texts and, given ``max_tokens``, at most that many padded
        tokens (texts × the longest one's tokens; at least one text).
        """
        items = [self.vocab.tokenize(t, self.max_len) for t in texts]
        lengths = np.array([len(it.ids) for it in items], dtype=np.int64)
        order = np.argsort(lengths, kind="stable")
        if max_tokens is not None:
            order = order[::-1]  # longest first, so that each batch's first text sets its width
        start = 0
        while start < len(order):
            size = batch_size
            if max_tokens is not None:
                size = max(1, min(batch_size, max_tokens // max(1, int(lengths[order[start]]))))
            idx = order[start : start + size].tolist()
            start += size
            batch = Vocabulary.collate([items[i] for i in idx], [texts[i] for i in idx]).to(self.device)
            with torch.no_grad():
                output = self.model(batch.ids, batch.mask)
            yield idx, batch, output

    def scores(
        self, texts: Sequence[str], batch_size: int = 64, kind: str = "logits", max_tokens: int | None = None
    ) -> np.ndarray:
        """``(N, K)`` class scores s(k, X) (``kind='logits'``) or probabilities (``'probs'``); batches as
        :meth:`_batches` makes them."""
        if kind not in ("logits", "probs"):
            raise ValueError(f"kind must be 'logits' or 'probs', got {kind!r}")
        out = np.zeros((len(texts), len(self.labels)), dtype=np.float64)
        for idx, _, output in self._batches(texts, batch_size, max_tokens):
            values = output.logits if kind == "logits" else torch.softmax(output.logits, dim=-1)
            out[idx] = values.double().cpu().numpy()
        return out

    def predict(self, texts: Sequence[str], batch_size: int = 64) -> list[dict]:
        """Per text: ``label`` (predicted), ``probabilities`` (label → p) and ``attention`` (a list of
        floats over the canonical words, pooled from tokens by the model's ``attention_pooling``,
        or None for a model without attention)."""
        results: list[dict] = [{} for _ in texts]
        for idx, batch, output in self._batches(texts, batch_size):
            probs = torch.softmax(output.logits, dim=-1).double().cpu().numpy()
            attention = None if output.attention is None else output.attention.double().cpu().numpy()
            for row, i in enumerate(idx):
                result = {
                    "label": self.labels[int(probs[row].argmax())],
                    "probabilities": {
                        label: float(p) for label, p in zip(self.labels, probs[row], strict=True)
                    },
                    "attention": None,
                }
                if attention is not None:
                    owners = batch.owners[row]
                    words = textlib.pool_to_words(
                        attention[row, : len(owners)],
                        owners,
                        batch.n_words[row],
                        how=self.model.attention_pooling,
                    )
                    result["attention"] = words.tolist()
                results[i] = result
        return results

    def save(self, directory: str | Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {
            **self.config,
            "format_version": FORMAT_VERSION,
            "architecture": self.model.architecture,
            "model": self.model.config,
            "labels": self.labels,
        }
        if isinstance(self.model, TransformerClassifier):
            self.model.save_pretrained(directory / PRETRAINED_FOLDER, self.labels)
            assert isinstance(self.vocab, SubwordVocabulary)  # a transformer's vocabulary is its tokenizer
            self.vocab.save_pretrained(directory / PRETRAINED_FOLDER)
            config["weights"] = {"format": "transformers", "folder": PRETRAINED_FOLDER}
        else:
            torch.save(self.model.state_dict(), directory / "model.pt")
            assert isinstance(self.vocab, Vocabulary)
            (directory / "vocab.json").write_text(json.dumps(self.vocab.to_dict()), encoding="utf-8")
        (directory / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        (directory / "metrics.json").write_text(json.dumps(self.metrics, indent=2), encoding="utf-8")
        return directory

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device | None = None) -> TrainedModel:
        directory = Path(directory)
        if not (directory / "config.json").exists():
            raise FileNotFoundError(f"{directory}: not a trained model folder (no config.json)")
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        labels = config["labels"]
        target = pick_device(device)
        weights = config.get("weights") or {}
        if weights.get("format") == "transformers":
            folder = directory / weights.get("folder", PRETRAINED_FOLDER)
            model = build_model(config["architecture"], 0, len(labels), **config["model"], weights=folder)
            assert isinstance(model, TransformerClassifier)
            vocab: Vocabulary | SubwordVocabulary = SubwordVocabulary.from_pretrained(
                folder, model.max_positions
            )
        else:
            vocab = Vocabulary.from_dict(json.loads((directory / "vocab.json").read_text(encoding="utf-8")))
            model = build_model(config["architecture"], len(vocab), len(labels), **config["model"])
            model.load_state_dict(torch.load(directory / "model.pt", map_location=target, weights_only=True))
        metrics_path = directory / "metrics.json"
        metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.exists() else {}
        return cls(model, vocab, labels, config, metrics, target)
