"""How often the annotators' own labels match the gold label (Sen et al. 2020 Table 1, "Human").

In the read-first highlighting task each annotator first chooses the review's sentiment, then marks
the words that show it. Sen et al. (2020) report the human accuracy of that choice against the Yelp
label (0.96 / 0.94 / 0.94 on Yelp-50 / 100 / 200) without saying how three answers make one; here:

* per annotator slot (HAM₁, HAM₂, …): the share of that slot's answers equal to the gold label, an
  answer of "cannot decide" being wrong and a missing answer left out (counted in ``missing``);
* ``pooled``: the one figure of Table 1 — every answer of every annotator on every text pooled, a
  missing answer (a map whose sentiment was left blank) and "cannot decide" both counted wrong
  (``missing`` says how many blanks it counted); a slot without a map (a text with fewer maps than
  slots) is no answer and is not counted;
* ``majority``: per text, the label more than half of its answers gave; a text without one (e.g. one
  positive, one negative, one "cannot decide") has no majority and counts as wrong (counted in
  ``no_majority``), so the figure never flatters the crowd.

Each figure is an :class:`~explain_engine.metrics.bootstrap.Estimate` with a bootstrap interval over
texts (over answers for a slot and for the pooled figure). How blanks are counted differs on purpose
and is stated with every figure (``blanks``): left out of a slot's share, wrong in the pooled figure,
left out of a text's vote for the majority.
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
    Returns ``{"slots": {"HAM1": {...}, ...}, "pooled": {...}, "majority": {...}, "no_gold": n}``,
    each figure with ``blanks``: how it counts a missing answer.
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
    pooled = pooled_accuracy(humans, gold, n_boot, level, seed)
    per_text = [[humans.answers[a] for a in row if a >= 0] for row in table]
    majority = majority_labels(per_text)
    judged = [t for t in range(len(humans)) if gold[t] is not None]
    hits = np.array([float(majority[t] is not None and majority[t] == gold[t]) for t in judged], dtype=float)
    no_majority = sum(1 for t in judged if majority[t] is None)
    est = mean_estimate(hits, n_boot, level, seed)
    for entry in slots.values():
        entry["blanks"] = BLANKS["slots"]
    return {
        "slots": slots,
        "pooled": pooled,
        "majority": est.to_dict() | {"no_majority": no_majority, "blanks": BLANKS["majority"]},
        "no_gold": len(humans) - len(judged),
    }


#: How each figure counts a missing answer (a map whose sentiment was left blank).
BLANKS = {
    "slots": "left out",
    "pooled": "counted wrong",
    "majority": "left out of the vote; a text without a majority counted wrong",
}


def pooled_accuracy(
    humans: HumanMaps,
    gold: list[str | None],
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> dict:
    """Sen et al. 2020 Table 1's one human figure per subset: the share of all answers (every
    annotator's, every text with a gold label) equal to the gold label, a missing answer counted wrong."""
    table = humans.annotation_table()
    hits: list[float] = []
    missing = 0
    for t, row in enumerate(table):
        if gold[t] is None:
            continue
        for a in row[row >= 0]:
            answer = humans.answers[a]
            missing += answer is None
            hits.append(float(answer is not None and answer == gold[t]))
    est = mean_estimate(np.asarray(hits, dtype=float), n_boot, level, seed)
    return est.to_dict() | {"missing": missing, "blanks": BLANKS["pooled"]}


__all__ = ["BLANKS", "human_accuracy", "majority_labels", "pooled_accuracy"]
