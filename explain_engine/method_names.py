"""Names the web app shows beside the explanation methods, kept apart from :mod:`explain_engine.explainers`
so that reading them does not load torch."""

from __future__ import annotations

from dataclasses import dataclass

#: The name a model's own attention is stored under when it is trained (``TrainedModel.predict``
#: returns it with each prediction): shown beside the registered methods, though it is not one of them.
TRAINING_ATTENTION = "attention (training)"


@dataclass(frozen=True)
class MethodInfo:
    """A method in words: ``title`` (its readable name), ``source`` (where it is defined) and ``doc``
    (one line about it)."""

    title: str
    source: str
    doc: str


#: Stored maps that are not registered methods, in words.
STORED = {
    TRAINING_ATTENTION: MethodInfo(
        "Attention weights",
        "Sen et al. 2020 eq. 1–4",
        "The model's own attention weights, stored with its predictions when it was trained (the weights "
        "the attention method gives).",
    )
}
