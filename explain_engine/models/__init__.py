"""Text classifiers and their registry.

``build_model(name, vocab_size, num_classes, **overrides)`` makes any registered architecture
with the papers' sizes (Sen et al. 2020 App. A; Lertvittayakumjorn & Toni 2019 §4.2; Poerner et al. 2018 §4.1) unless overridden:

* ``lstm_attention``, ``bilstm_attention``, ``gru_attention``, ``bigru_attention``: additive
  attention over a (Bi)LSTM / (Bi)GRU (Sen et al. 2020 eq. 1–4);
* ``lstm``, ``bilstm``, ``gru``, ``bigru``: final-state classifiers (Poerner et al. 2018 §4.1);
* ``cnn``: Kim 1D CNN (Lertvittayakumjorn & Toni 2019 §4.2); ``qrnn``: bidirectional QLSTM (Poerner et al. 2018 §4.1;
  ``pooling='f'`` for the QGRU); ``rationale``: generator + encoder (Lei et al. 2016);
* ``transformer``: a pre-trained Hugging Face sequence classifier (BERT and kin; Devlin et al. 2019),
  built from ``checkpoint=`` (a local folder or a hub name); it needs the optional extra ``transformers``.

``informed`` (:data:`TWINS`, not a classifier of its own) is the explanation-informed twin of one of
them (Prasad et al. 2021 §4.1), reading ``x SEP e``.
"""

from __future__ import annotations

import inspect

from explain_engine.extras import available, optional
from explain_engine.models.attention_rnn import AttentionRNN, RecurrentClassifier
from explain_engine.models.base import EncodedBatch, ModelOutput, TextClassifier
from explain_engine.models.cnn import KimCNN
from explain_engine.models.informed import InformedTwin
from explain_engine.models.qrnn import QRNN
from explain_engine.models.rationale import RationaleModel
from explain_engine.models.recurrent import GatedCell, GatedRNN
from explain_engine.models.transformer import TransformerClassifier

ARCHITECTURES: dict[str, type[TextClassifier]] = {
    "lstm_attention": AttentionRNN,
    "bilstm_attention": AttentionRNN,
    "gru_attention": AttentionRNN,
    "bigru_attention": AttentionRNN,
    "lstm": RecurrentClassifier,
    "bilstm": RecurrentClassifier,
    "gru": RecurrentClassifier,
    "bigru": RecurrentClassifier,
    "cnn": KimCNN,
    "qrnn": QRNN,
    "rationale": RationaleModel,
    "transformer": TransformerClassifier,
}

#: Families built from a pre-trained checkpoint (``checkpoint=``) with its own tokenizer, not from sizes.
FROM_CHECKPOINT: tuple[str, ...] = ("transformer",)

#: The optional extra (the module it installs) that a family needs beyond the engine's base install.
EXTRAS: dict[str, str] = {"transformer": "transformers"}

#: Models built around a target architecture of :data:`ARCHITECTURES` (``target=`` names it).
TWINS: dict[str, type[TextClassifier]] = {"informed": InformedTwin}

# Constructor arguments that tell the names sharing a class apart.
PRESETS: dict[str, dict] = {
    "lstm_attention": {"cell": "lstm", "bidirectional": False},
    "bilstm_attention": {"cell": "lstm", "bidirectional": True},
    "gru_attention": {"cell": "gru", "bidirectional": False},
    "bigru_attention": {"cell": "gru", "bidirectional": True},
    "lstm": {"cell": "lstm", "bidirectional": False},
    "bilstm": {"cell": "lstm", "bidirectional": True},
    "gru": {"cell": "gru", "bidirectional": False},
    "bigru": {"cell": "gru", "bidirectional": True},
}


def available_architectures() -> list[str]:
    """The registered architectures whose optional extra, if any, is installed; sorted."""
    return sorted(name for name in ARCHITECTURES if name not in EXTRAS or available(EXTRAS[name]))


def require_extra(name: str) -> None:
    """Nothing when architecture ``name`` can be built here; else
    :class:`~explain_engine.extras.MissingExtra` naming the ``pip install`` it needs."""
    if name in EXTRAS:
        optional(EXTRAS[name], extra=EXTRAS[name], family=name)


def build_model(name: str, vocab_size: int, num_classes: int, /, **overrides) -> TextClassifier:
    """A fresh, randomly initialised model of architecture ``name``.

    ``overrides`` are constructor arguments (e.g. ``hidden_size=32``); ``vocab_size`` and
    ``num_classes`` in them are ignored in favour of the explicit arguments, so a saved
    ``model.config`` can be passed back as is.
    """
    if name in TWINS:
        kwargs = {k: v for k, v in overrides.items() if k not in ("vocab_size", "num_classes")}
        model = TWINS[name](vocab_size=vocab_size, num_classes=num_classes, **kwargs)
        model.architecture = name
        return model
    if name not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {name!r}; choose one of {', '.join(sorted(ARCHITECTURES))}")
    preset = PRESETS.get(name, {})
    clashes = [k for k, v in preset.items() if k in overrides and overrides[k] != v]
    if clashes:
        raise ValueError(
            f"{name!r} fixes {', '.join(clashes)}; pick the architecture name that matches instead"
        )
    kwargs = {**preset, **overrides}
    kwargs.pop("vocab_size", None)
    kwargs.pop("num_classes", None)
    accepted = inspect.signature(ARCHITECTURES[name]).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            known = sorted(set(accepted) - {"vocab_size", "num_classes"})
            raise ValueError(
                f"{name!r} has no setting {', '.join(map(repr, unknown))}; its settings: {', '.join(known)}"
            )
    model = ARCHITECTURES[name](vocab_size=vocab_size, num_classes=num_classes, **kwargs)
    model.architecture = name
    return model


__all__ = [
    "ARCHITECTURES",
    "PRESETS",
    "AttentionRNN",
    "EXTRAS",
    "EncodedBatch",
    "FROM_CHECKPOINT",
    "GatedCell",
    "GatedRNN",
    "InformedTwin",
    "KimCNN",
    "ModelOutput",
    "QRNN",
    "RationaleModel",
    "RecurrentClassifier",
    "TWINS",
    "TextClassifier",
    "TransformerClassifier",
    "available_architectures",
    "build_model",
    "require_extra",
]
