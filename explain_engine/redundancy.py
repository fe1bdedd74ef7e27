"""Adaptive redundancy: a stopping rule per item, so an item gets only the answers it needs.

A fixed design asks every item for the same number of answers. An adaptive one asks each item for at
least ``minimum`` and at most ``maximum`` answers and stops it as soon as its answers so far meet a rule
(CrowdFlower's "dynamic judgments"; repeated labeling, Sheng, Provost & Ipeirotis 2008 §4; online
crowdsourcing with annotator models, Welinder & Perona 2010 §3). The rules, each over the answers that
count (weight > 0), in the order they arrived:

* ``label_share``: the weighted share of the majority label (the answers' weights, e.g. gold trust) is at
  least ``threshold``;
* ``label_posterior``: the posterior of the most likely label under a one-coin annotator model
  (Dawid & Skene 1979 with one accuracy per annotator, a uniform prior over ``categories``) is at least
  ``threshold``; each answer's ``accuracy`` is its annotator's (e.g. gold trust, or a Dawid–Skene fit),
  else the policy's ``accuracy``;
* ``map_agreement``: the mean pairwise F1 (Dice) of the answers' 0/1 maps over the words is at least
  ``threshold`` (word-level agreement of human attention maps, Sen et al. 2020 §3.2);
* ``ci_width``: the width of the 95 % confidence interval of the item's answer is at most ``threshold``:
  a t interval of the mean for numeric answers (ratings), else the Wilson interval of the majority
  label's share (forced choice).

An item that reaches ``maximum`` stops whatever its measure. Everything here is plain data in and out;
:func:`item_stopped` is the one decision the hand-out and the replay of real answers share.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import stats

from explain_engine.metrics.plausibility import map_overlap
from explain_engine.metrics.trust import wilson_interval

#: The stopping rules, with what each measures.
RULES: dict[str, str] = {
    "label_share": "the weighted share of the majority label",
    "label_posterior": "the posterior of the most likely label (one-coin Dawid & Skene)",
    "map_agreement": "the mean pairwise F1 of the maps so far",
    "ci_width": "the width of the answer's 95 % confidence interval",
}
#: Rules met when the measure is at most the threshold (the others: at least).
AT_MOST = frozenset({"ci_width"})
#: The accuracy an annotator is assumed to have when nothing better is known (``label_posterior``).
DEFAULT_ACCURACY = 0.75
CI_LEVEL = 0.95


@dataclass(frozen=True)
class StoppingPolicy:
    """An adaptive policy: ``minimum`` .. ``maximum`` answers per item, stopped when ``rule`` meets
    ``threshold``; ``categories`` (the number of answer categories) and ``accuracy`` serve
    ``label_posterior``."""

    minimum: int
    maximum: int
    rule: str
    threshold: float
    categories: int = 2
    accuracy: float = DEFAULT_ACCURACY

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown stopping rule {self.rule!r}; known: {', '.join(RULES)}")
        if not 1 <= self.minimum <= self.maximum:
            raise ValueError(f"need 1 <= minimum <= maximum, got {self.minimum} and {self.maximum}")


@dataclass(frozen=True)
class CountedAnswer:
    """One answer as a stopping rule reads it: its ``label`` (a category), ``map`` (0/1 per word) or
    ``value`` (a number), the ``weight`` it counts with (0: it does not count) and its annotator's
    ``accuracy`` when known."""

    label: Hashable | None = None
    map: Sequence[int] | None = None
    value: float | None = None
    weight: float = 1.0
    accuracy: float | None = None


def _labelled(answers: Sequence[CountedAnswer]) -> list[CountedAnswer]:
    return [a for a in answers if a.label is not None and a.weight > 0]


def label_share(answers: Sequence[CountedAnswer]) -> float:
    """The weighted share of the label with the most weight behind it (0.0 with no labelled answer)."""
    totals: dict[Hashable, float] = {}
    for a in _labelled(answers):
        totals[a.label] = totals.get(a.label, 0.0) + a.weight
    whole = sum(totals.values())
    return max(totals.values()) / whole if whole > 0 else 0.0


def label_posterior(
    answers: Sequence[CountedAnswer], categories: int = 2, accuracy: float = DEFAULT_ACCURACY
) -> float:
    """The posterior probability of the most likely label under a one-coin model (Dawid & Skene 1979
    with one accuracy per annotator): each annotator gives the true label with their accuracy ``p`` and
    any other with ``(1 - p) / (K - 1)``; the prior over the ``K`` categories is uniform. Categories never
    answered share the rest of the mass. 1 / K with no labelled answer."""
    given = _labelled(answers)
    seen = sorted({a.label for a in given}, key=repr)
    k = max(categories, len(seen), 2)
    if not given:
        return 1.0 / k
    logs = np.zeros(len(seen) + 1)  # the last: any category nobody answered
    for a in given:
        p = min(max(a.accuracy if a.accuracy is not None else accuracy, 1.0 / k + 1e-6), 1.0 - 1e-6)
        right, wrong = math.log(p), math.log((1.0 - p) / (k - 1))
        logs += wrong
        logs[seen.index(a.label)] += right - wrong
    unseen = k - len(seen)
    mass = np.exp(logs - logs.max())
    whole = mass[:-1].sum() + unseen * mass[-1]
    return float(mass[:-1].max() / whole)


def map_agreement(answers: Sequence[CountedAnswer]) -> float:
    """The mean pairwise F1 (Dice) of the counted answers' maps (1.0 with fewer than two maps)."""
    maps = [a.map for a in answers if a.map is not None and a.weight > 0]
    pairs = [map_overlap(x, y, "f1") for x, y in combinations(maps, 2)]
    return float(np.mean(pairs)) if pairs else 1.0


def ci_width(answers: Sequence[CountedAnswer], level: float = CI_LEVEL) -> float:
    """The width of the ``level`` confidence interval of the item's answer: for numeric ``value``\\ s the t
    interval of their mean (infinite with fewer than two), else the Wilson interval of the majority
    label's share of the labelled answers (1.0 with none)."""
    values = [float(a.value) for a in answers if a.value is not None and a.weight > 0]
    if values:
        if len(values) < 2:
            return math.inf
        sem = float(np.std(values, ddof=1)) / math.sqrt(len(values))
        return float(2.0 * stats.t.ppf(0.5 + level / 2.0, len(values) - 1) * sem)
    given = _labelled(answers)
    if not given:
        return 1.0
    counts: dict[Hashable, int] = {}
    for a in given:
        counts[a.label] = counts.get(a.label, 0) + 1
    low, high = wilson_interval(max(counts.values()), len(given), level)
    return float(high - low)


def measure(answers: Sequence[CountedAnswer], policy: StoppingPolicy) -> float:
    """The value of ``policy.rule`` over ``answers``."""
    if policy.rule == "label_share":
        return label_share(answers)
    if policy.rule == "label_posterior":
        return label_posterior(answers, policy.categories, policy.accuracy)
    if policy.rule == "map_agreement":
        return map_agreement(answers)
    return ci_width(answers)


def rule_met(value: float, policy: StoppingPolicy) -> bool:
    """Whether a measured ``value`` meets the policy's threshold."""
    return value <= policy.threshold if policy.rule in AT_MOST else value >= policy.threshold


def item_stopped(answers: Sequence[CountedAnswer], policy: StoppingPolicy) -> tuple[bool, str]:
    """Whether an item with ``answers`` (only those with weight > 0 count) needs no more, and why:
    ``(True, reason)`` when its rule is met from ``minimum`` answers on, or at ``maximum`` answers;
    ``(False, reason)`` saying what it waits for."""
    n = sum(1 for a in answers if a.weight > 0)
    if n < policy.minimum:
        return False, f"{n} of at least {policy.minimum} answers"
    value = measure(answers, policy)
    sign = "<=" if policy.rule in AT_MOST else ">="
    if rule_met(value, policy):
        return True, f"{policy.rule} {value:.3f} {sign} {policy.threshold:g} at {n} answers"
    if n >= policy.maximum:
        return True, f"maximum of {policy.maximum} answers ({policy.rule} {value:.3f})"
    return False, f"{policy.rule} {value:.3f} not yet {sign} {policy.threshold:g} at {n} answers"
