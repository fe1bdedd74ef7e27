"""How often the annotators' own labels match the gold label (Sen et al. 2020 Table 1, "Human").

In the read-first highlighting task each annotator first chooses the review's sentiment, then marks
the words that show it. Sen et al. (2020) report the human accuracy of that choice against the Yelp
label (0.96 / 0.94 / 0.94 on Yelp-50 / 100 / 200) without saying how three answers make one; here:

* per annotator slot (HAM₁, HAM₂, …): the share of that slot's answers equal to the gold label, an
  answer of "cannot decide" being wrong and a missing answer left out (counted in ``missing``);
* ``majority``: per text, the label more than half of its answers gave; a text without one (e.g. one
  positive, one negative, one "cannot decide") has no majority and counts as wrong (counted in
  ``no_majority``), so the figure never flatters the crowd.

Each figure is an :class:`~explain_engine.metrics.bootstrap.Estimate` with a bootstrap interval over
texts (over answers for a slot).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from explain_engine.metrics.behavioral import HumanMaps
from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, mean_estimate


def majority_labels(answers: list[list]) -> list:
    """Per text, the label given by more than half of its (non-missing) answers, or ``None``."""
    out = []
    for given in answers:
        given = [a for a in given if a is not None]
        labels, counts = np.unique(np.asarray(given, dtype=object).astype(str), return_counts=True)
        top = int(np.argmax(counts)) if counts.size else -1
        out.append(str(labels[top]) if top >= 0 and counts[top] * 2 > len(given) else None)
    return out


def human_accuracy(
    humans: HumanMaps,
    label_names: Mapping[int, str],
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> dict:
    """Accuracy of each annotator slot's label and of the per-text majority against the gold label.

    ``label_names`` maps the gold label codes (``humans.labels``) to the answer labels, e.g.
    ``{0: "negative", 1: "positive"}``. Texts whose gold label is not in it are left out (``no_gold``).
    Returns ``{"slots": {"HAM1": {...}, ...}, "majority": {...}, "no_gold": n}``.
    """
    gold = [label_names.get(int(g)) for g in humans.labels]
    table = humans.annotation_table()
    slots: dict[str, dict] = {}
    for s in range(humans.n_slots):
        texts = np.flatnonzero(table[:, s] >= 0)
        answers = [humans.answers[a] for a in table[texts, s]]
        ok = [g is not None and a is not None for g, a in zip((gold[t] for t in texts), answers, strict=True)]
        hits = np.array(
            [float(a == gold[t]) for t, a, keep in zip(texts, answers, ok, strict=True) if keep], dtype=float
        )
        missing = sum(1 for t, a in zip(texts, answers, strict=True) if a is None and gold[t] is not None)
        est = mean_estimate(hits, n_boot, level, seed)
        slots[f"HAM{s + 1}"] = est.to_dict() | {"missing": missing}
    per_text = [[humans.answers[a] for a in row if a >= 0] for row in table]
    majority = majority_labels(per_text)
    judged = [t for t in range(len(humans)) if gold[t] is not None]
    hits = np.array([float(majority[t] is not None and majority[t] == gold[t]) for t in judged], dtype=float)
    no_majority = sum(1 for t in judged if majority[t] is None)
    est = mean_estimate(hits, n_boot, level, seed)
    return {
        "slots": slots,
        "majority": est.to_dict() | {"no_majority": no_majority},
        "no_gold": len(humans) - len(judged),
    }


__all__ = ["human_accuracy", "majority_labels"]
