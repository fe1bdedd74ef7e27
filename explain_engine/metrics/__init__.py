"""Metrics: agreement between annotators, human-vs-machine similarity, importance alignment,
plausibility and forced-choice scoring.

:data:`METRICS` names every metric function (one registry, like the explainers'); each module holds
one family and cites its paper:

* :mod:`.agreement` — Fleiss κ, Cohen κ (plain / linear / quadratic / paper 001's absolute weights),
  Pearson r, Krippendorff α, pairwise tables (REFERENCE §3.3)
* :mod:`.behavioral` — per-text ROC AUC, behavioral similarity, HAM / CAM / SAM, k (paper 000 §4.1)
* :mod:`.lexical` and :mod:`.pos` — lexical similarity over Penn Treebank tags (paper 000 §4.2)
* :mod:`.cssr` — cross-sentiment selection rates (paper 000 §4.3)
* :mod:`.human_machine` — Tables 2–4 of paper 000 against HAM1… / CAM / SAM in one pass
* :mod:`.alignment` — importance alignment C, C_R, ΔA (paper 003)
* :mod:`.plausibility` — token F1, IoU, AUPRC
* :mod:`.forced_choice` — answer scores and method comparison (paper 004)
* :mod:`.bootstrap` — estimates with n and bootstrap intervals; :mod:`.ragged` — flat per-text arrays
"""

from __future__ import annotations

from collections.abc import Callable

from explain_engine.metrics import (
    agreement,
    alignment,
    behavioral,
    cssr,
    forced_choice,
    human_machine,
    lexical,
    plausibility,
)

METRICS: dict[str, Callable] = {
    "fleiss_kappa": agreement.fleiss_kappa,
    "cohen_kappa": agreement.cohen_kappa,
    "pearson_r": agreement.pearson_r,
    "krippendorff_alpha": agreement.krippendorff_alpha,
    "pairwise_agreement": agreement.pairwise_table,
    "roc_auc_per_text": behavioral.roc_auc_per_text,
    "behavioral_similarity": behavioral.behavioral_similarity,
    "human_human_similarity": behavioral.human_human_similarity,
    "average_k": behavioral.average_k,
    "lexical_similarity": lexical.lexical_similarity,
    "random_lexical_similarity": lexical.random_lexical_similarity,
    "adjusted_lexical_similarity": lexical.adjusted_lexical_similarity,
    "tag_distribution_table": lexical.tag_distribution_table,
    "cssr": cssr.cssr,
    "compare_to_humans": human_machine.compare_to_humans,
    "importance_alignment": alignment.importance_alignment,
    "token_prf": plausibility.token_prf,
    "iou": plausibility.iou_per_text,
    "auprc": plausibility.average_precision_per_text,
    "plausibility": plausibility.plausibility,
    "forced_choice_scores": forced_choice.score_answers,
    "forced_choice_summary": forced_choice.summarize_scores,
    "forced_choice_kappa": forced_choice.forced_choice_kappa,
}


def get_metric(name: str) -> Callable:
    """The metric function registered under ``name`` (``ValueError`` listing the names otherwise)."""
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}") from None


__all__ = ["METRICS", "get_metric"]
