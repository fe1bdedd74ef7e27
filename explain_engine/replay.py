"""Replaying real answers under adaptive redundancy: what a stopping rule saves, and what it changes.

Each text's real answers (YELP-HAT: a label and a map from each of three annotators, Sen et al. 2020 §3)
are taken in a random order per text, one at a time, until :func:`explain_engine.redundancy.item_stopped`
says stop; the texts' published figures are then computed from the answers used, with the same functions
as the ``agreement`` report (:func:`explain_engine.reports.agreement_report`), and set against the fixed
design (every text's first ``N`` answers). The figures: the label majority (the share of texts whose
majority label is the fixed design's), human accuracy (pooled and by majority, Table 1), CAM and SAM k
(Table 2's average words selected) and the human–human AUC (Table 2, mean over slot pairs).

Beyond the three real answers per text, :func:`simulate` draws answers from simulated annotators: each
has a confusion matrix (answer label given the gold label) drawn around the crowd's, fitted to the real
answers, and marks each word with the text's own rate (its real maps' share, smoothed), so a replay can
run to a larger maximum. Simulated annotators are known: their one-coin accuracy serves ``label_posterior``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from explain_engine.metrics.aggregation import dawid_skene
from explain_engine.metrics.human_accuracy import majority_labels
from explain_engine.redundancy import CountedAnswer, StoppingPolicy, item_stopped
from explain_engine.reports import GOLD_ANSWER, agreement_report

#: The published figures a replay reports, with what each is.
FIGURES: dict[str, str] = {
    "answers": "answers used per text",
    "majority_same": "share of texts whose majority label is the fixed design's",
    "accuracy_pooled": "human accuracy, every answer pooled (Table 1)",
    "accuracy_majority": "human accuracy of the per-text majority (Table 1)",
    "cam_k": "CAM k: words in the consensus (AND) map (Table 2)",
    "sam_k": "SAM k: words in the super (OR) map (Table 2)",
    "hh_auc": "human-human AUC, mean over slot pairs (Table 2)",
}


@dataclass(frozen=True)
class ReplayRow:
    """One policy replayed over ``seeds`` random orders: its mean figures and their change from the
    fixed design of ``fixed_n`` answers per text (``answers`` is per text; ``saved`` the share of answers
    saved)."""

    rule: str
    threshold: float
    minimum: int
    maximum: int
    fixed_n: int
    figures: dict[str, float]
    change: dict[str, float]
    stops: dict[str, float] = field(default_factory=dict)

    @property
    def saved(self) -> float:
        return 1.0 - self.figures["answers"] / self.fixed_n


def crowd_accuracy(records: Sequence[dict], categories: Sequence[str]) -> float:
    """The one-coin accuracy of an annotator whose identity is unknown (YELP-HAT names none): Dawid & Skene
    (1979) with every answer given by one annotator, no gold used; the mean posterior of the label given."""
    tasks, labels = [], []
    for t, rec in enumerate(records):
        for a in rec["annotations"]:
            if a.get("label") is not None:
                tasks.append(t)
                labels.append(a["label"])
    fit = dawid_skene(tasks, [0] * len(tasks), labels, categories=list(categories))
    row = {task: k for k, task in enumerate(fit.tasks.tolist())}
    column = {c: k for k, c in enumerate(fit.categories)}
    return float(
        np.mean([fit.probabilities[row[t], column[lab]] for t, lab in zip(tasks, labels, strict=True)])
    )


def _counted(annotation: dict, accuracy: float | None) -> CountedAnswer:
    return CountedAnswer(
        label=annotation.get("label"),
        map=annotation.get("map"),
        accuracy=annotation.get("accuracy", accuracy),
    )


def replay(
    records: Sequence[dict], policy: StoppingPolicy, seed: int, accuracy: float | None = None
) -> tuple[list[dict], dict[str, int]]:
    """Each record with the answers a policy would have used, its answers taken in a random order per
    text (seeded by ``seed`` and the text's place); and how many texts stopped by their rule or at the
    maximum."""
    out, stops = [], {"rule": 0, "max": 0}
    for t, rec in enumerate(records):
        order = np.random.default_rng([seed, t]).permutation(len(rec["annotations"]))
        given = [rec["annotations"][int(i)] for i in order][: policy.maximum]
        used: list[dict] = []
        for annotation in given:
            used.append(annotation)
            stopped, why = item_stopped([_counted(a, accuracy) for a in used], policy)
            if stopped:
                stops["max" if why.startswith("maximum") else "rule"] += 1
                break
        out.append({**rec, "annotations": used})
    return out, stops


def figures(records: Sequence[dict], fixed_majority: Sequence[str | None] | None = None) -> dict[str, float]:
    """The published figures (:data:`FIGURES`) of ``records`` (any number of answers per text)."""
    rep = agreement_report(list(records), None, 1, 0, 0)
    pairs = [(r["value"], r["texts"]) for r in rep["human_human"] if r["value"] is not None]
    majority = majority_labels([[a.get("label") for a in r["annotations"]] for r in records])
    same = (
        float(np.mean([m == f for m, f in zip(majority, fixed_majority, strict=True)]))
        if fixed_majority is not None
        else 1.0
    )
    return {
        "answers": float(np.mean([len(r["annotations"]) for r in records])),
        "majority_same": same,
        "accuracy_pooled": float(rep["human_accuracy"]["pooled"]["value"]),
        "accuracy_majority": float(rep["human_accuracy"]["majority"]["value"]),
        "cam_k": _value(rep["k"].get("CAM")),
        "sam_k": _value(rep["k"].get("SAM")),
        "hh_auc": float(np.average([v for v, _ in pairs], weights=[n for _, n in pairs]))
        if pairs
        else math.nan,
    }


def _value(estimate: dict | None) -> float:
    """An estimate's value; NaN when there is none (no text had the maps it needs)."""
    return math.nan if estimate is None or estimate.get("value") is None else float(estimate["value"])


def replay_table(
    records: Sequence[dict],
    policies: Sequence[StoppingPolicy],
    fixed_n: int,
    seeds: Sequence[int] = (0,),
    accuracy: float | None = None,
) -> tuple[dict[str, float], list[ReplayRow]]:
    """The fixed design's figures (every text's first ``fixed_n`` answers, texts with that many) and one
    :class:`ReplayRow` per policy, its figures the mean over ``seeds``."""
    fixed = [
        {**r, "annotations": r["annotations"][:fixed_n]} for r in records if len(r["annotations"]) >= fixed_n
    ]
    fixed_majority = majority_labels([[a.get("label") for a in r["annotations"]] for r in fixed])
    base = figures(fixed, fixed_majority)
    rows = []
    for policy in policies:
        runs, stops = [], {"rule": 0.0, "max": 0.0}
        for seed in seeds:
            used, stopped = replay(fixed, policy, seed, accuracy)
            runs.append(figures(used, fixed_majority))
            for k in stops:
                stops[k] += stopped[k] / len(fixed) / len(seeds)
        mean = {k: float(np.mean([r[k] for r in runs])) for k in FIGURES}
        rows.append(
            ReplayRow(
                policy.rule,
                policy.threshold,
                policy.minimum,
                policy.maximum,
                fixed_n,
                mean,
                {k: mean[k] - base[k] for k in FIGURES},
                stops,
            )
        )
    return base, rows


def simulate(
    records: Sequence[dict],
    answers: int,
    workers: int = 60,
    concentration: float = 20.0,
    seed: int = 0,
    categories: Sequence[str] = ("positive", "negative", "cannot decide"),
) -> list[dict]:
    """``answers`` simulated answers per text (see the module docstring), from a pool of ``workers``
    annotators each with a confusion matrix drawn from a Dirichlet around the crowd's (``concentration``:
    how close to it). Each answer carries its annotator's one-coin ``accuracy`` (the mean of their
    confusion matrix's diagonal over the gold labels)."""
    rng = np.random.default_rng(seed)
    golds = sorted(GOLD_ANSWER)
    crowd = np.ones((len(golds), len(categories)))  # add-one smoothing
    for rec in records:
        for a in rec["annotations"]:
            if a.get("label") in categories:
                crowd[golds.index(rec["label"]), list(categories).index(a["label"])] += 1
    crowd /= crowd.sum(axis=1, keepdims=True)
    confusion = np.stack([[rng.dirichlet(concentration * row) for row in crowd] for _ in range(workers)])
    accuracy = [
        float(
            np.mean(
                [confusion[w, g, list(categories).index(GOLD_ANSWER[gold])] for g, gold in enumerate(golds)]
            )
        )
        for w in range(workers)
    ]
    out = []
    for rec in records:
        maps = np.asarray([a["map"] for a in rec["annotations"]], dtype=float)
        rate = (maps.sum(axis=0) + maps.mean()) / (len(maps) + 1.0)
        chosen = rng.choice(workers, size=answers, replace=False)
        made = [
            {
                "label": categories[rng.choice(len(categories), p=confusion[w, golds.index(rec["label"])])],
                "map": (rng.random(rate.shape[0]) < rate).astype(int).tolist(),
                "accuracy": accuracy[w],
            }
            for w in chosen
        ]
        out.append({**rec, "annotations": made})
    return out
