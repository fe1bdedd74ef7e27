"""The soft oracle of Prasad et al. 2021 (§3.2 "Soft oracle importance", eq. 3, §4.1 "Explanation
informed models"): importance from an explanation-informed model.

The explanation-informed twin m' of a target architecture reads an input x followed by an explanation
e and predicts a joint label y' — the task label y and whether e was written for x (``matched``) or for
another example (``mismatched``). It is trained on every training example twice, once with its own
explanation and once with a randomly chosen other one (a derangement), with the architecture and
training recipe of the target model. The soft oracle of (x, e) is |IG_{m'}(x, e, y')| over the words
of x (eq. 3), y' being the joint label of that pair: (y, matched) for x's own explanation, (y,
mismatched) for a random one (the baseline C_R of eq. 6 uses the same oracle of the random explanation).

The twin is :class:`~explain_engine.models.informed.InformedTwin`: the target's encoder reads x and e
separately (shared weights) and an MLP reads ``[u, v, |u − v|, u ⊙ v]`` (the InferSent design, Conneau
et al. 2017, which the paper's BInferSent NLI model uses); its module docstring says why one joined
sequence is not enough for a CNN or an RNN. Input and explanation travel as one text around
:data:`SEPARATOR`, a word of its own, so that the first words of the joined text are exactly the
words of x (canonical words are whitespace words) and every explainer runs on the twin unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from explain_engine.datasets.splits import split_records
from explain_engine.metrics.alignment import random_derangement
from explain_engine.models.informed import SEPARATOR
from explain_engine.text import word_spans
from explain_engine.training import TrainConfig, train

MATCHED, MISMATCHED = "matched", "mismatched"
#: Integrated gradients, dot product with the embedding, of the class score (Prasad et al. 2021 eq. 1).
IG_METHOD = "grad_dot_int_s"


def informed_text(text: str, explanation: str) -> str:
    """The explanation-informed model's input: ``text``, the separator word, then ``explanation``."""
    if not explanation.strip():
        raise ValueError("an explanation must have at least one word")
    if not text.strip():
        raise ValueError("an input must have at least one word")
    if SEPARATOR in text.lower().split() or SEPARATOR in explanation.lower().split():
        raise ValueError(f"the separator word {SEPARATOR!r} may not occur in an input or explanation")
    return f"{text} {SEPARATOR} {explanation}"


def joint_label(label: str, matched: bool) -> str:
    """y' of eq. 3: the task label and whether the explanation belongs to the input."""
    return f"{label}|{MATCHED if matched else MISMATCHED}"


def informed_records(records: Sequence[dict], seed: int = 0) -> list[dict]:
    """Every record (``id``, ``text``, ``label``, ``explanation``; optionally ``split``) twice: with its own
    explanation (matched) and with that of a random other record of the same split (mismatched)."""
    out: list[dict] = []
    by_split: dict[object, list[int]] = {}
    for i, rec in enumerate(records):
        for key in ("id", "text", "label", "explanation"):
            if key not in rec:
                raise ValueError(f"record {i} has no {key!r}")
        by_split.setdefault(rec.get("split"), []).append(i)
    for k, (split, members) in enumerate(by_split.items()):
        partner = random_derangement(len(members), seed=seed + k) if len(members) > 1 else None
        if partner is None:
            raise ValueError(f"split {split!r} needs at least two records to pair mismatched explanations")
        for j, i in enumerate(members):
            rec = records[i]
            other = records[members[int(partner[j])]]
            extra = {} if split is None else {"split": split}
            out.append(
                {
                    "id": f"{rec['id']}|{MATCHED}",
                    "text": informed_text(rec["text"], rec["explanation"]),
                    "label": joint_label(rec["label"], True),
                    **extra,
                }
            )
            out.append(
                {
                    "id": f"{rec['id']}|{MISMATCHED}",
                    "text": informed_text(rec["text"], other["explanation"]),
                    "label": joint_label(rec["label"], False),
                    **extra,
                }
            )
    return out


def with_splits(records: Sequence[dict], config: TrainConfig) -> list[dict]:
    """``records`` with a ``split`` each: their own when every record has one, else a stratified
    split of the *examples* by ``config.fractions`` and ``config.seed`` — so that an input's matched
    and mismatched pairs fall in the same split and no test input was seen in training."""
    if all("split" in rec for rec in records):
        return list(records)
    parts = split_records(records, config.fractions, config.seed)
    where = {
        id(rec): name
        for name, part in zip(("train", "validation", "test"), parts, strict=True)
        for rec in part
    }
    return [{**rec, "split": where[id(rec)]} for rec in records]


def twin_config(config: TrainConfig, encoding_dim: int = 64, hidden_size: int = 64) -> TrainConfig:
    """The twin's training config: ``config.architecture`` becomes the target of an
    :class:`~explain_engine.models.informed.InformedTwin` (``config.model`` its overrides) trained
    with the target's recipe on the balanced pairs as they are."""
    if config.architecture == "informed":
        return config
    return dataclasses.replace(
        config,
        architecture="informed",
        model={
            "target": config.architecture,
            "target_config": dict(config.model),
            "encoding_dim": encoding_dim,
            "hidden_size": hidden_size,
        },
        balance=False,
    )


def train_informed_twin(
    records: Sequence[dict],
    config: TrainConfig,
    out_dir: str | Path | None = None,
    seed: int = 0,
    *,
    encoding_dim: int = 64,
    hidden_size: int = 64,
):
    """Train the explanation-informed twin of ``config.architecture`` (its encoder, sizes and recipe)
    on matched and mismatched pairs of ``records``; returns the
    :class:`~explain_engine.artifacts.TrainedModel`. Records without a ``split`` are split as
    examples first (:func:`with_splits`). ``config.max_len`` would cut the explanation off the joined
    text, so it is refused: shorten the inputs before pairing."""
    if config.max_len is not None:
        raise ValueError("max_len would cut the explanation off the joined text: shorten the inputs instead")
    pairs = informed_records(with_splits(records, config), seed)
    return train(pairs, twin_config(config, encoding_dim, hidden_size), out_dir)


def matched_accuracy(bundle, pairs: Sequence[dict], batch_size: int = 64) -> dict[str, float]:
    """Accuracy of the twin on pairs from :func:`informed_records`: on the joint label, on its task
    half and on its matched / mismatched half (chance 0.5 on balanced pairs)."""
    if not pairs:
        raise ValueError("no pairs to score")
    scores = bundle.scores([p["text"] for p in pairs], batch_size=batch_size)
    predicted = [bundle.labels[int(k)] for k in scores.argmax(1)]
    truth = [p["label"] for p in pairs]
    halves = [(t.rsplit("|", 1), q.rsplit("|", 1)) for t, q in zip(truth, predicted, strict=True)]
    return {
        "pairs": len(pairs),
        "joint": float(np.mean([t == q for t, q in zip(truth, predicted, strict=True)])),
        "label": float(np.mean([t[0] == q[0] for t, q in halves])),
        "matched": float(np.mean([t[1] == q[1] for t, q in halves])),
    }


def soft_oracles(
    bundle,
    texts: Sequence[str],
    explanations: Sequence[str],
    labels: Sequence[str],
    matched: bool | Sequence[bool] = True,
    *,
    method: str = IG_METHOD,
    batch_size: int = 16,
    **params,
) -> list[np.ndarray]:
    """Eq. 3: |IG_{m'}(x, e, y')| over the words of each ``texts[i]`` for the explanation ``explanations[i]``,
    y' = (``labels[i]``, matched or not). ``bundle`` is a trained explanation-informed twin."""
    return checked_soft_oracles(
        bundle, texts, explanations, labels, matched, method=method, batch_size=batch_size, **params
    )[0]


def checked_soft_oracles(
    bundle,
    texts: Sequence[str],
    explanations: Sequence[str],
    labels: Sequence[str],
    matched: bool | Sequence[bool] = True,
    *,
    method: str = IG_METHOD,
    batch_size: int = 16,
    **params,
) -> tuple[list[np.ndarray], list[dict]]:
    """:func:`soft_oracles` and beside them the method's diagnostics per text (integrated gradients'
    ``completeness``, with ``warnings`` when it is not met at the step cap; ``{}`` for a method that
    reports none), so that an incomplete IG never enters ΔA unflagged."""
    # imported here: the explainers load torch's autograd machinery, which metrics-only callers skip
    from explain_engine.explainers import explain_many

    n = len(texts)
    flags = [matched] * n if isinstance(matched, bool) else list(matched)
    if not (n == len(explanations) == len(labels) == len(flags)):
        raise ValueError("texts, explanations, labels and matched need one entry per example")
    targets = [joint_label(label, flag) for label, flag in zip(labels, flags, strict=True)]
    unknown = sorted({t for t in targets if t not in bundle.labels})
    if unknown:
        raise ValueError(f"the informed model has no joint label {unknown[0]!r} (it knows {bundle.labels})")
    joined = [informed_text(t, e) for t, e in zip(texts, explanations, strict=True)]
    out = explain_many(bundle, joined, [method], targets, batch_size=batch_size, params={method: params})
    scores = [
        np.abs(np.asarray(s, dtype=np.float64)[: len(word_spans(t))])
        for s, t in zip(out[method], texts, strict=True)
    ]
    return scores, list(out.diagnostics.get(method, [{} for _ in texts]))


__all__ = [
    "IG_METHOD",
    "MATCHED",
    "MISMATCHED",
    "SEPARATOR",
    "checked_soft_oracles",
    "informed_records",
    "informed_text",
    "joint_label",
    "matched_accuracy",
    "soft_oracles",
    "train_informed_twin",
    "twin_config",
    "with_splits",
]
