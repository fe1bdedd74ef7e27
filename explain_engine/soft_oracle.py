"""The soft oracle of Prasad et al. 2021 (§3.2 "Soft oracle importance", eq. 3, §4.1 "Explanation
informed models"): importance from an explanation-informed model.

The explanation-informed twin m' of a target architecture reads an input x followed by an explanation
e and predicts a joint label y' — the task label y and whether e was written for x (``matched``) or for
another example (``mismatched``). It is trained on every training example twice, once with its own
explanation and once with a randomly chosen other one (a derangement), with the architecture and
training recipe of the target model. The soft oracle of (x, e) is |IG_{m'}(x, e, y')| over the words
of x (eq. 3), y' being the joint label of that pair: (y, matched) for x's own explanation, (y,
mismatched) for a random one (the baseline C_R of eq. 6 uses the same oracle of the random explanation).

Input and explanation are joined into one text around :data:`SEPARATOR`, a word of its own, so that
the first words of the joined text are exactly the words of x (canonical words are whitespace words).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from explain_engine.metrics.alignment import random_derangement
from explain_engine.text import word_spans
from explain_engine.training import TrainConfig, train

SEPARATOR = "explanationfollows"
MATCHED, MISMATCHED = "matched", "mismatched"
#: Integrated gradients, dot product with the embedding, of the class score (Prasad et al. 2021 eq. 1).
IG_METHOD = "grad_dot_int_s"


def informed_text(text: str, explanation: str) -> str:
    """The explanation-informed model's input: ``text``, the separator word, then ``explanation``."""
    if not explanation.strip():
        raise ValueError("an explanation must have at least one word")
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


def train_informed_twin(
    records: Sequence[dict], config: TrainConfig, out_dir: str | Path | None = None, seed: int = 0
):
    """Train the explanation-informed twin of ``config.architecture`` (same architecture and recipe) on
    matched and mismatched pairs of ``records``; returns the :class:`~explain_engine.artifacts.TrainedModel`.

    The pairs are balanced by construction, so the twin is trained on them as they are (no balancing)."""
    return train(informed_records(records, seed), dataclasses.replace(config, balance=False), out_dir)


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
    # imported here: the explainers load torch's autograd machinery, which metrics-only callers skip
    from explain_engine.explainers import explain

    n = len(texts)
    flags = [matched] * n if isinstance(matched, bool) else list(matched)
    if not (n == len(explanations) == len(labels) == len(flags)):
        raise ValueError("texts, explanations, labels and matched need one entry per example")
    targets = [joint_label(label, flag) for label, flag in zip(labels, flags, strict=True)]
    unknown = sorted({t for t in targets if t not in bundle.labels})
    if unknown:
        raise ValueError(f"the informed model has no joint label {unknown[0]!r} (it knows {bundle.labels})")
    joined = [informed_text(t, e) for t, e in zip(texts, explanations, strict=True)]
    scores = explain(bundle, joined, targets, method=method, batch_size=batch_size, **params)
    return [
        np.abs(np.asarray(s, dtype=np.float64)[: len(word_spans(t))])
        for s, t in zip(scores, texts, strict=True)
    ]


__all__ = [
    "IG_METHOD",
    "MATCHED",
    "MISMATCHED",
    "SEPARATOR",
    "informed_records",
    "informed_text",
    "joint_label",
    "soft_oracles",
    "train_informed_twin",
]
