"""Metrics: agreement between annotators, human-vs-machine similarity, importance alignment,
plausibility, crowd aggregation, ratings and forced-choice scoring. Each module holds one family and
cites its paper:

* :mod:`.agreement` — Fleiss κ, Cohen κ (plain / linear / quadratic / Pappas & Popescu-Belis 2016's
  absolute weights), Pearson r, Krippendorff α, pairwise tables
* :mod:`.behavioral` — per-text ROC AUC, behavioral similarity, HAM / CAM / SAM, k (Sen et al. 2020 §4.1)
* :mod:`.lexical` and :mod:`.pos` — lexical similarity over Penn Treebank tags (Sen et al. 2020 §4.2)
* :mod:`.cssr` — cross-sentiment selection rates (Sen et al. 2020 §4.3)
* :mod:`.human_machine` — Sen et al. 2020's Tables 2–4 against HAM1… / CAM / SAM in one pass
* :mod:`.alignment` — importance alignment C, C_R, ΔA (the NLI importance-alignment paper, §3)
* :mod:`.plausibility` — token F1, IoU, AUPRC; ERASER's IOU F1 and trapezoidal AUPRC
* :mod:`.pointing_game` — the pointing game (Poerner, Roth & Schütze 2018 §4)
* :mod:`.faithfulness` — comprehensiveness, sufficiency and their AOPC (DeYoung et al. 2020 §4), Kendall's τ
  with leave-one-word-out importance (Jain & Wallace 2019 §4); its own registry ``FAITHFULNESS``, since
  these need the model (and torch, which this package's importers do not load)
* :mod:`.ratings` — crowd labels and annotator agreement on sentence ratings (Pappas & Popescu-Belis 2016)
* :mod:`.aggregation` — majority vote and Dawid & Skene (1979); :mod:`.trust` — gold-question trust
  and the gold review's counts
* :mod:`.risk` — a crowd worker's risk score with its reasons, and the speed of single answers
  (Brysbaert 2019's reading rate)
* :mod:`.forced_choice` — answer scores and method comparison (Lertvittayakumjorn & Toni 2019 §5)
* :mod:`.bootstrap` — estimates with n and bootstrap intervals; :mod:`.ragged` — flat per-text arrays

:data:`METRICS` offers by name the metrics that compare a human annotation with a machine output of the
same shape, all with one call shape::

    METRICS[name](human, machine, *, n_boot=N_BOOT, seed=0) -> Estimate   # value, n, ci_low, ci_high

Its metadata says what is compared (``compares``: ``"maps"`` — per-text 0/1 human maps against
per-text machine scores, as a :class:`~.ragged.Ragged` or lists; ``"values"`` — paired numbers;
``"labels"`` — paired category labels) and where the metric comes from (``source``). The other
functions (agreement among many annotators, lexical similarity with tags, forced-choice scoring …)
have inputs of their own and are called directly.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from explain_engine.metrics import agreement, behavioral, plausibility
from explain_engine.metrics.bootstrap import N_BOOT, Estimate
from explain_engine.metrics.ragged import Ragged
from explain_engine.registry import Registry

Maps = Ragged | Sequence[Sequence[float]]
Metric = Callable[..., Estimate]

METRICS: Registry[Metric] = Registry("metric")


@METRICS.register("behavioral_similarity", compares="maps", source="Sen et al. 2020 §4.1")
def behavioral_similarity(
    human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0
) -> Estimate:
    """Mean per-text ROC AUC of the machine scores against the binary human maps."""
    return behavioral.behavioral_similarity(human, machine, n_boot=n_boot, seed=seed)


def _plausibility(key: str, human: Maps, machine: Maps, n_boot: int, seed: int | None) -> Estimate:
    return plausibility.plausibility(human, machine, "top_k", n_boot=n_boot, seed=seed)[key]


@METRICS.register("token_f1", compares="maps", source="DeYoung et al. 2020 §4.1")
def token_f1(human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0) -> Estimate:
    """Macro token F1 of the machine's top-k words (k = the human count) against the human maps."""
    return _plausibility("token_f1", human, machine, n_boot, seed)


@METRICS.register("iou", compares="maps", source="DeYoung et al. 2020 §4.1")
def iou(human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0) -> Estimate:
    """Mean intersection over union of the machine's top-k words and the human maps."""
    return _plausibility("iou", human, machine, n_boot, seed)


@METRICS.register("auprc", compares="maps", source="DeYoung et al. 2020 §4.1")
def auprc(human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0) -> Estimate:
    """Mean area under the precision–recall curve of the machine scores against the human maps."""
    return _plausibility("auprc", human, machine, n_boot, seed)


@METRICS.register("iou_f1", compares="maps", source="DeYoung et al. 2020 §4.1")
def iou_f1(human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0) -> Estimate:
    """ERASER's IOU F1: macro F1 of the machine's top-k spans matching a human span at IoU ≥ 0.5."""
    return plausibility.eraser_plausibility(human, machine, "top_k", n_boot=n_boot, seed=seed)["iou_f1"]


@METRICS.register("eraser_auprc", compares="maps", source="DeYoung et al. 2020 §4.1")
def eraser_auprc(human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0) -> Estimate:
    """ERASER's AUPRC: mean per-text trapezoidal area under the precision–recall curve of the scores."""
    return plausibility.eraser_plausibility(human, machine, "top_k", n_boot=n_boot, seed=seed)["auprc"]


def _ferret(key: str, human: Maps, machine: Maps, n_boot: int, seed: int | None) -> Estimate:
    return plausibility.ferret_plausibility(human, machine, n_boot=n_boot, seed=seed)[key]


@METRICS.register("ferret_token_f1", compares="maps", source="Attanasio et al. 2023 §3.2")
def ferret_token_f1(human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0) -> Estimate:
    """ferret's token F1: the machine's top-K words, K the data set's mean human rationale size."""
    return _ferret("token_f1", human, machine, n_boot, seed)


@METRICS.register("ferret_token_iou", compares="maps", source="Attanasio et al. 2023 §3.2")
def ferret_token_iou(human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0) -> Estimate:
    """ferret's token IOU: the machine's top-K words, K the data set's mean human rationale size."""
    return _ferret("token_iou", human, machine, n_boot, seed)


@METRICS.register("ferret_auprc", compares="maps", source="Attanasio et al. 2023 §3.2")
def ferret_auprc(human: Maps, machine: Maps, *, n_boot: int = N_BOOT, seed: int | None = 0) -> Estimate:
    """ferret's AUPRC soft score: the per-text trapezoidal area under the precision–recall curve."""
    return _ferret("auprc", human, machine, n_boot, seed)


@METRICS.register("pearson_r", compares="values", source="Pappas & Popescu-Belis 2016 §2")
def pearson(
    human: Sequence[float], machine: Sequence[float], *, n_boot: int = N_BOOT, seed: int | None = 0
) -> Estimate:
    """Pearson r of paired values (pairs with a missing value are left out)."""
    return agreement.pearson_r(human, machine, n_boot=n_boot, seed=seed)


@METRICS.register("cohen_kappa", compares="labels", source="Cohen 1960")
def cohen(
    human: Sequence[Hashable], machine: Sequence[Hashable], *, n_boot: int = N_BOOT, seed: int | None = 0
) -> Estimate:
    """Cohen's κ of paired labels over the labels that occur (missing ratings are left out)."""
    seen: set[Any] = {v for v in [*human, *machine] if not agreement.is_missing(v)}
    categories = sorted(seen)
    return agreement.cohen_kappa(human, machine, categories, n_boot=n_boot, seed=seed)


__all__ = ["METRICS", "Metric", "auprc", "behavioral_similarity", "cohen", "iou", "pearson", "token_f1"]
