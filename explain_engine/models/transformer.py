"""Transformer sequence classifiers (BERT and kin) from a Hugging Face checkpoint.

``checkpoint`` is a local folder written by ``save_pretrained`` or a hub name; it is read with the
``transformers`` library's own ``AutoModelForSequenceClassification.from_pretrained`` (nothing is
re-implemented here). Fine-tuning puts a fresh classification head of ``num_classes`` outputs on the
pre-trained encoder, as Devlin et al. (2019, §4.1) do. The model runs with the eager attention
implementation so that every layer's attention probabilities can be returned.

The base contract (:mod:`explain_engine.models.base`) holds: :attr:`embedding` is the checkpoint's word
(input) embedding, and ``encode`` passes ``inputs_embeds`` to the network, which adds its own position
(and token type) embeddings, so gradient methods differentiate with respect to the word embeddings. A
transformer has no soft attention of its own over the input: ``ModelOutput.attention`` is None;
:meth:`TransformerClassifier.attention_maps` gives the per-layer, per-head attention matrices, and
:attr:`TransformerClassifier.cls_position` says where the sequence's summary token sits.

``transformers`` is an optional extra of the engine; without it, building this family raises
:class:`~explain_engine.extras.MissingExtra` with the ``pip install`` line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from explain_engine.extras import optional
from explain_engine.models.base import ModelOutput, TextClassifier

FAMILY = "transformer"
# A hub repository id: a name, or owner/name (letters, digits, "-", "_", "."), at most 96 characters each.
_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?")


def hf_transformers() -> ModuleType:
    """The ``transformers`` package, or :class:`~explain_engine.extras.MissingExtra`."""
    return optional("transformers", extra="transformers", family=FAMILY)


def offline() -> bool:
    """Whether the hub must not be asked (``HF_HUB_OFFLINE`` set to a true value)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


#: The one answer to a checkpoint a caller with ``roots`` may not use, whatever the reason (a folder outside
#: the roots, missing or there, a name the hub may not be asked for): it tells nothing about the server.
CHECKPOINT_REFUSED = (
    "is not a checkpoint you may use: give one of your own transformer model runs (run:<id>), "
    "a model of the server's model folder, or a hub name such as 'org/model' where this server may download"
)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _allowed_folder(value: str, roots: Sequence[str | Path]) -> str | None:
    """The real path of the model folder ``value`` names inside one of ``roots`` (a name relative to a root,
    or an absolute path), links followed; None when it is outside them or holds no ``config.json``."""
    for root in roots:
        base = Path(root).expanduser().resolve()
        candidate = (base / value).resolve()  # an absolute value stands as it is
        if _inside(candidate, base) and (candidate / "config.json").is_file():
            return str(candidate)
    return None


def check_checkpoint(checkpoint: object, roots: Sequence[str | Path] | None = None, hub: bool = True) -> str:
    """``checkpoint`` stripped, when it names a model folder here (with a ``config.json``) or has the
    form of a hub name; else a ValueError saying what is wrong. Nothing is loaded or fetched.

    With ``roots`` (a server's callers: the folders its users may read) a folder is accepted only inside
    them, and returned as its real path; a hub name only with ``hub``; everything else gets the one
    :data:`CHECKPOINT_REFUSED`, so the answer tells no folder that exists from one that does not."""
    if not isinstance(checkpoint, str) or not checkpoint.strip():
        raise ValueError("is required for a transformer: a model folder or a hub name such as 'org/model'")
    value = checkpoint.strip()
    if roots is not None:
        if "\x00" in value or len(value) > 500:
            raise ValueError(CHECKPOINT_REFUSED)
        allowed = _allowed_folder(value, roots)
        if allowed is not None:
            return allowed
        if hub and _HUB_NAME.fullmatch(value) and ".." not in value:
            return value
        raise ValueError(CHECKPOINT_REFUSED)
    folder = Path(value).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise ValueError(f"{value!r} is a folder without a model (no config.json in it)")
        return value
    if folder.is_absolute() or value.startswith((".", "~")):
        raise ValueError(f"{value!r}: no such folder")
    if not _HUB_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is neither a model folder nor a hub name such as 'org/model'")
    return value


def hub_snapshot(name: str) -> str:
    """The local folder of hub repository ``name``, fetched into the hub cache (or read from it when the hub
    is off): the hub's own download, so a name is never read as a folder of the server."""
    if not _HUB_NAME.fullmatch(name) or ".." in name:
        raise ValueError(f"{name!r} is not a hub name such as 'org/model'")
    hf_transformers()  # the extra, with its huggingface_hub
    from huggingface_hub import snapshot_download

    try:
        return str(snapshot_download(repo_id=name, local_files_only=offline()))
    except Exception as exc:  # the hub's errors have no common base worth naming
        reason = " ".join(str(exc).split())[:300]
        raise ValueError(f"the hub model {name!r} could not be fetched: {reason}") from None


def checkpoint_error(checkpoint: str | Path, what: str, exc: Exception) -> ValueError:
    """One sentence saying that ``checkpoint``'s ``what`` could not be read, and why."""
    where = "not a folder here" if not Path(checkpoint).is_dir() else "a folder here"
    hub = "the hub is off (HF_HUB_OFFLINE)" if offline() else "and it could not be fetched from the hub"
    reason = " ".join(str(exc).split())[:300]
    return ValueError(
        f"transformer checkpoint {str(checkpoint)!r} ({where}, {hub}): cannot load its {what}: {reason}"
    )


def load_sequence_classifier(checkpoint: str | Path, num_classes: int) -> torch.nn.Module:
    """``AutoModelForSequenceClassification`` from ``checkpoint`` with ``num_classes`` outputs (eager attention).

    A head of another size in the checkpoint is replaced by a freshly initialised one.
    """
    library = hf_transformers()
    try:
        return library.AutoModelForSequenceClassification.from_pretrained(
            str(checkpoint),
            num_labels=num_classes,
            attn_implementation="eager",
            ignore_mismatched_sizes=True,
            local_files_only=offline(),
        )
    except (OSError, ValueError) as exc:
        raise checkpoint_error(checkpoint, "model", exc) from None


class TransformerClassifier(TextClassifier):
    """A pre-trained transformer encoder with a sequence-classification head.

    ``checkpoint`` (local folder or hub name) is what the model was built from and is what ``config``
    records; ``weights`` (default: ``checkpoint``) is the folder actually read, e.g. a trained bundle's
    copy. ``vocab_size`` is the tokenizer's and is not used: the checkpoint fixes the embedding table.
    """

    architecture = FAMILY
    network: Any  # a transformers PreTrainedModel (the library is optional)
    #: Index of the summary token ([CLS]) whose attention rows the attention-map explainers read.
    cls_position = 0

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        checkpoint: str | None = None,
        weights: str | Path | None = None,
    ):
        if not checkpoint:
            raise ValueError(
                "the transformer family needs a checkpoint: a local model folder or a hub name (--checkpoint)"
            )
        super().__init__(checkpoint=str(checkpoint))
        self.network = load_sequence_classifier(weights or checkpoint, num_classes)
        self.embedding = self.network.get_input_embeddings()

    @property
    def max_positions(self) -> int | None:
        """The longest input the position embeddings allow (None when the model sets no bound)."""
        return getattr(self.network.config, "max_position_embeddings", None)

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        out = self.network(inputs_embeds=embeds, attention_mask=mask.long())
        return ModelOutput(out.logits)

    def attention_maps(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Each layer's attention probabilities ``(B, H, T, T)`` (query × key), first layer first.

        Rows and columns of padding are those the network computed (it gives padded keys zero weight).
        """
        out = self.network(inputs_embeds=self.embed(ids), attention_mask=mask.long(), output_attentions=True)
        return tuple(out.attentions)

    def save_pretrained(self, directory: str | Path, labels: list[str] | None = None) -> None:
        """Write the network with ``save_pretrained`` (config and safetensors weights), naming ``labels``."""
        if labels is not None:
            self.network.config.id2label = dict(enumerate(labels))
            self.network.config.label2id = {label: k for k, label in enumerate(labels)}
        self.network.save_pretrained(str(directory))
