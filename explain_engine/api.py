"""The engine's one public module: everything the web app (``annotate``) may use, as plain data in and out.

Nothing else of the engine is imported by the web app, so the engine's insides can move freely; a name
is added here when the web app needs it. This module never imports Django.

=====================  =============================================================================
area                   names
=====================  =============================================================================
text                   ``word_spans``, ``sentence_spans``, ``words_of`` — the canonical words of a text
data                   ``read_raw`` (YELP-HAT raw CSV, Sen et al. 2020), ``tag_documents``, ``tag_words``
                       (Penn tags, offline)
models                 ``ARCHITECTURES``, ``available_architectures`` (those whose optional extra is
                       installed), ``require_extra``, ``build_model``, ``check_checkpoint`` (a
                       transformer's checkpoint reference), ``FROM_CHECKPOINT``, ``MissingExtra``, ``TrainConfig``, ``train``, ``TrainedModel``
                       (load / predict / save)
explanations           ``METHODS`` (a ``Registry`` of ``MethodSpec``; metadata ``architectures``,
                       ``pooling``, ``group``, ``samples`` and ``fitted_with``, a ``Fitting``),
                       ``get_method``, ``methods_for``, ``resolve_methods``, ``explain``,
                       ``explain_many``; evidence: ``Evidence``, ``select_evidence``,
                       ``evidence_and_counter`` (Lertvittayakumjorn & Toni 2019 §4.3)
estimates              ``Estimate`` (value, n, interval), ``N_BOOT``, ``LEVEL``, ``Ragged``, ``json_safe``
agreement              ``fleiss_kappa``, ``fleiss_kappa_from_counts``, ``cohen_kappa``, ``pearson_r``,
                       ``krippendorff_alpha``, ``pairwise_table``, ``encode_ratings``, ``category_counts``
human vs machine       ``HumanMaps``, ``consensus_maps`` (CAM / SAM of one text, Sen et al. 2020
                       Defs. 2.4–2.5), ``roc_auc_per_text``, ``behavioral_similarity``,
                       ``human_human_similarity``, ``average_k`` (Sen et al. 2020 §4);
                       ``METRICS`` — metrics by name, one call shape
                       ``(human, machine, *, n_boot, seed) -> Estimate``
faithfulness           ``faithfulness`` (comprehensiveness and sufficiency per bin and their AOPC,
                       DeYoung et al. 2020 §4; Kendall's τ with leave-one-word-out, Jain & Wallace
                       2019 §4), ``FAITHFULNESS`` (a ``Registry`` of them), ``FAITHFULNESS_BINS``,
                       ``summarize_faithfulness`` (means with n and intervals from stored per-text values)
reports                ``agreement_report``, ``similarity_report`` (Sen et al. 2020 Tables 2–5)
alignment              ``hard_oracle``, ``expert_oracle``, ``random_derangement``,
                       ``importance_alignment``, ``marking_alignment`` (the NLI importance-alignment
                       paper, §3)
sentence ratings       ``crowd_labels``, ``CrowdLabels``, ``confidence_summary``, ``rating_matrix``,
                       ``pairwise_agreement``, ``KAPPA_KINDS`` / ``DEFAULT_KAPPA``, ``distance_agreement``,
                       ``mean_of``, ``sentence_scores``, ``attention_levels``,
                       ``confidence_curve``, ``replacement_std``, ``marking_agreement``,
                       ``RATING_LEVELS`` (Pappas & Popescu-Belis 2016)
crowd quality          ``majority_vote``, ``dawid_skene``, ``Aggregation`` (Dawid & Skene 1979),
                       ``winning_category`` (the one tie rule); ``answer_weights`` (the one
                       weighting rule, Pappas & Popescu-Belis 2016 §3),
                       ``wilson_interval``, ``trust_table``, ``leave_one_out_trust``, ``TrustTable``,
                       ``PENDING`` / ``TRUSTED`` / ``EXCLUDED``, ``DEFAULT_TRUST_THRESHOLD``
forced choice          ``TESTS``, ``NO_PREFERENCE``, ``score_answers``, ``summarize_scores``,
                       ``answer_categories``, ``category_set``, ``forced_choice_kappa``
                       (Lertvittayakumjorn & Toni 2019 §5)
registries             ``Registry``, ``UnknownName``, ``DuplicateName``, ``discover``
=====================  =============================================================================
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Where each name lives. A name is imported on its first use (PEP 562), so a process that needs only the
# tokeniser or a metric (a management command, the annotator API) does not load torch.
_HOMES: dict[str, tuple[str, str]] = {
    "TrainedModel": ("explain_engine.artifacts", "TrainedModel"),
    "read_raw": ("explain_engine.datasets.yelphat", "read_raw"),
    "Evidence": ("explain_engine.evidence", "Evidence"),
    "evidence_and_counter": ("explain_engine.evidence", "evidence_and_counter"),
    "select_evidence": ("explain_engine.evidence", "select_evidence"),
    "Fitting": ("explain_engine.explainers", "Fitting"),
    "METHODS": ("explain_engine.explainers", "METHODS"),
    "MethodSpec": ("explain_engine.explainers", "MethodSpec"),
    "explain": ("explain_engine.explainers", "explain"),
    "explain_many": ("explain_engine.explainers", "explain_many"),
    "get_method": ("explain_engine.explainers", "get"),
    "methods_for": ("explain_engine.explainers", "methods_for"),
    "resolve_methods": ("explain_engine.explainers", "resolve_methods"),
    "json_safe": ("explain_engine.jsonsafe", "json_safe"),
    "METRICS": ("explain_engine.metrics", "METRICS"),
    "Aggregation": ("explain_engine.metrics.aggregation", "Aggregation"),
    "dawid_skene": ("explain_engine.metrics.aggregation", "dawid_skene"),
    "majority_vote": ("explain_engine.metrics.aggregation", "majority_vote"),
    "winning_category": ("explain_engine.metrics.aggregation", "winning_category"),
    "category_counts": ("explain_engine.metrics.agreement", "category_counts"),
    "cohen_kappa": ("explain_engine.metrics.agreement", "cohen_kappa"),
    "encode_ratings": ("explain_engine.metrics.agreement", "encode_ratings"),
    "fleiss_kappa": ("explain_engine.metrics.agreement", "fleiss_kappa"),
    "fleiss_kappa_from_counts": ("explain_engine.metrics.agreement", "fleiss_kappa_from_counts"),
    "krippendorff_alpha": ("explain_engine.metrics.agreement", "krippendorff_alpha"),
    "pairwise_table": ("explain_engine.metrics.agreement", "pairwise_table"),
    "pearson_r": ("explain_engine.metrics.agreement", "pearson_r"),
    "expert_oracle": ("explain_engine.metrics.alignment", "expert_oracle"),
    "hard_oracle": ("explain_engine.metrics.alignment", "hard_oracle"),
    "importance_alignment": ("explain_engine.metrics.alignment", "importance_alignment"),
    "marking_alignment": ("explain_engine.metrics.alignment", "marking_alignment"),
    "random_derangement": ("explain_engine.metrics.alignment", "random_derangement"),
    "HumanMaps": ("explain_engine.metrics.behavioral", "HumanMaps"),
    "FAITHFULNESS": ("explain_engine.metrics.faithfulness", "FAITHFULNESS"),
    "FAITHFULNESS_BINS": ("explain_engine.metrics.faithfulness", "BINS"),
    "faithfulness": ("explain_engine.metrics.faithfulness", "faithfulness"),
    "summarize_faithfulness": ("explain_engine.metrics.faithfulness", "summarize"),
    "average_k": ("explain_engine.metrics.behavioral", "average_k"),
    "behavioral_similarity": ("explain_engine.metrics.behavioral", "behavioral_similarity"),
    "consensus_maps": ("explain_engine.metrics.behavioral", "consensus_maps"),
    "human_human_similarity": ("explain_engine.metrics.behavioral", "human_human_similarity"),
    "roc_auc_per_text": ("explain_engine.metrics.behavioral", "roc_auc_per_text"),
    "Estimate": ("explain_engine.metrics.bootstrap", "Estimate"),
    "LEVEL": ("explain_engine.metrics.bootstrap", "LEVEL"),
    "N_BOOT": ("explain_engine.metrics.bootstrap", "N_BOOT"),
    "NO_PREFERENCE": ("explain_engine.metrics.forced_choice", "NO_PREFERENCE"),
    "TESTS": ("explain_engine.metrics.forced_choice", "TESTS"),
    "answer_categories": ("explain_engine.metrics.forced_choice", "answer_categories"),
    "category_set": ("explain_engine.metrics.forced_choice", "category_set"),
    "forced_choice_kappa": ("explain_engine.metrics.forced_choice", "forced_choice_kappa"),
    "score_answers": ("explain_engine.metrics.forced_choice", "score_answers"),
    "summarize_scores": ("explain_engine.metrics.forced_choice", "summarize_scores"),
    "tag_documents": ("explain_engine.metrics.pos", "tag_documents"),
    "tag_words": ("explain_engine.metrics.pos", "tag_words"),
    "Ragged": ("explain_engine.metrics.ragged", "Ragged"),
    "CrowdLabels": ("explain_engine.metrics.ratings", "CrowdLabels"),
    "RATING_LEVELS": ("explain_engine.metrics.ratings", "LEVELS"),
    "attention_levels": ("explain_engine.metrics.ratings", "attention_levels"),
    "confidence_curve": ("explain_engine.metrics.ratings", "confidence_curve"),
    "confidence_summary": ("explain_engine.metrics.ratings", "confidence_summary"),
    "crowd_labels": ("explain_engine.metrics.ratings", "crowd_labels"),
    "DEFAULT_KAPPA": ("explain_engine.metrics.ratings", "DEFAULT_KAPPA"),
    "KAPPA_KINDS": ("explain_engine.metrics.ratings", "KAPPA_KINDS"),
    "distance_agreement": ("explain_engine.metrics.ratings", "distance_agreement"),
    "marking_agreement": ("explain_engine.metrics.ratings", "marking_agreement"),
    "mean_of": ("explain_engine.metrics.ratings", "mean_of"),
    "pairwise_agreement": ("explain_engine.metrics.ratings", "pairwise_agreement"),
    "rating_matrix": ("explain_engine.metrics.ratings", "rating_matrix"),
    "replacement_std": ("explain_engine.metrics.ratings", "replacement_std"),
    "sentence_scores": ("explain_engine.metrics.ratings", "sentence_scores"),
    "DEFAULT_TRUST_THRESHOLD": ("explain_engine.metrics.trust", "DEFAULT_THRESHOLD"),
    "EXCLUDED": ("explain_engine.metrics.trust", "EXCLUDED"),
    "PENDING": ("explain_engine.metrics.trust", "PENDING"),
    "TRUSTED": ("explain_engine.metrics.trust", "TRUSTED"),
    "TrustTable": ("explain_engine.metrics.trust", "TrustTable"),
    "answer_weights": ("explain_engine.metrics.trust", "answer_weights"),
    "leave_one_out_trust": ("explain_engine.metrics.trust", "leave_one_out_trust"),
    "trust_table": ("explain_engine.metrics.trust", "trust_table"),
    "wilson_interval": ("explain_engine.metrics.trust", "wilson_interval"),
    "ARCHITECTURES": ("explain_engine.models", "ARCHITECTURES"),
    "build_model": ("explain_engine.models", "build_model"),
    "available_architectures": ("explain_engine.models", "available_architectures"),
    "require_extra": ("explain_engine.models", "require_extra"),
    "FROM_CHECKPOINT": ("explain_engine.models", "FROM_CHECKPOINT"),
    "check_checkpoint": ("explain_engine.models.transformer", "check_checkpoint"),
    "MissingExtra": ("explain_engine.extras", "MissingExtra"),
    "DuplicateName": ("explain_engine.registry", "DuplicateName"),
    "Registry": ("explain_engine.registry", "Registry"),
    "UnknownName": ("explain_engine.registry", "UnknownName"),
    "discover": ("explain_engine.registry", "discover"),
    "agreement_report": ("explain_engine.reports", "agreement_report"),
    "similarity_report": ("explain_engine.reports", "similarity_report"),
    "sentence_spans": ("explain_engine.text", "sentence_spans"),
    "word_spans": ("explain_engine.text", "word_spans"),
    "words_of": ("explain_engine.text", "words_of"),
    "TrainConfig": ("explain_engine.training", "TrainConfig"),
    "train": ("explain_engine.training", "train"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _HOMES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # the same names, imported for type checkers and editors
    from explain_engine.artifacts import TrainedModel
    from explain_engine.datasets.yelphat import read_raw
    from explain_engine.evidence import Evidence, evidence_and_counter, select_evidence
    from explain_engine.explainers import (
        METHODS,
        Fitting,
        MethodSpec,
        explain,
        explain_many,
        methods_for,
        resolve_methods,
    )
    from explain_engine.explainers import get as get_method
    from explain_engine.extras import MissingExtra
    from explain_engine.jsonsafe import json_safe
    from explain_engine.metrics import METRICS
    from explain_engine.metrics.aggregation import Aggregation, dawid_skene, majority_vote, winning_category
    from explain_engine.metrics.agreement import (
        category_counts,
        cohen_kappa,
        encode_ratings,
        fleiss_kappa,
        fleiss_kappa_from_counts,
        krippendorff_alpha,
        pairwise_table,
        pearson_r,
    )
    from explain_engine.metrics.alignment import (
        expert_oracle,
        hard_oracle,
        importance_alignment,
        marking_alignment,
        random_derangement,
    )
    from explain_engine.metrics.behavioral import (
        HumanMaps,
        average_k,
        behavioral_similarity,
        consensus_maps,
        human_human_similarity,
        roc_auc_per_text,
    )
    from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate
    from explain_engine.metrics.faithfulness import BINS as FAITHFULNESS_BINS
    from explain_engine.metrics.faithfulness import FAITHFULNESS, faithfulness
    from explain_engine.metrics.faithfulness import summarize as summarize_faithfulness
    from explain_engine.metrics.forced_choice import (
        NO_PREFERENCE,
        TESTS,
        answer_categories,
        category_set,
        forced_choice_kappa,
        score_answers,
        summarize_scores,
    )
    from explain_engine.metrics.pos import tag_documents, tag_words
    from explain_engine.metrics.ragged import Ragged
    from explain_engine.metrics.ratings import (
        DEFAULT_KAPPA,
        KAPPA_KINDS,
        CrowdLabels,
        attention_levels,
        confidence_curve,
        confidence_summary,
        crowd_labels,
        distance_agreement,
        marking_agreement,
        mean_of,
        pairwise_agreement,
        rating_matrix,
        replacement_std,
        sentence_scores,
    )
    from explain_engine.metrics.ratings import LEVELS as RATING_LEVELS
    from explain_engine.metrics.trust import DEFAULT_THRESHOLD as DEFAULT_TRUST_THRESHOLD
    from explain_engine.metrics.trust import (
        EXCLUDED,
        PENDING,
        TRUSTED,
        TrustTable,
        answer_weights,
        leave_one_out_trust,
        trust_table,
        wilson_interval,
    )
    from explain_engine.models import (
        ARCHITECTURES,
        FROM_CHECKPOINT,
        available_architectures,
        build_model,
        require_extra,
    )
    from explain_engine.models.transformer import check_checkpoint
    from explain_engine.registry import DuplicateName, Registry, UnknownName, discover
    from explain_engine.reports import agreement_report, similarity_report
    from explain_engine.text import sentence_spans, word_spans, words_of
    from explain_engine.training import TrainConfig, train

__all__ = [
    "ARCHITECTURES",
    "DEFAULT_KAPPA",
    "DEFAULT_TRUST_THRESHOLD",
    "EXCLUDED",
    "FAITHFULNESS",
    "FAITHFULNESS_BINS",
    "FROM_CHECKPOINT",
    "LEVEL",
    "METHODS",
    "METRICS",
    "MissingExtra",
    "NO_PREFERENCE",
    "N_BOOT",
    "PENDING",
    "RATING_LEVELS",
    "TESTS",
    "TRUSTED",
    "Aggregation",
    "CrowdLabels",
    "DuplicateName",
    "Estimate",
    "Evidence",
    "Fitting",
    "HumanMaps",
    "KAPPA_KINDS",
    "MethodSpec",
    "Ragged",
    "Registry",
    "TrainConfig",
    "TrainedModel",
    "TrustTable",
    "UnknownName",
    "agreement_report",
    "answer_categories",
    "answer_weights",
    "attention_levels",
    "average_k",
    "available_architectures",
    "behavioral_similarity",
    "build_model",
    "category_counts",
    "category_set",
    "check_checkpoint",
    "cohen_kappa",
    "confidence_curve",
    "confidence_summary",
    "consensus_maps",
    "crowd_labels",
    "dawid_skene",
    "discover",
    "distance_agreement",
    "encode_ratings",
    "evidence_and_counter",
    "expert_oracle",
    "faithfulness",
    "explain",
    "explain_many",
    "fleiss_kappa",
    "fleiss_kappa_from_counts",
    "forced_choice_kappa",
    "get_method",
    "hard_oracle",
    "human_human_similarity",
    "importance_alignment",
    "json_safe",
    "krippendorff_alpha",
    "leave_one_out_trust",
    "majority_vote",
    "marking_agreement",
    "marking_alignment",
    "mean_of",
    "methods_for",
    "pairwise_agreement",
    "pairwise_table",
    "pearson_r",
    "random_derangement",
    "rating_matrix",
    "read_raw",
    "replacement_std",
    "require_extra",
    "resolve_methods",
    "roc_auc_per_text",
    "score_answers",
    "select_evidence",
    "sentence_scores",
    "sentence_spans",
    "similarity_report",
    "summarize_faithfulness",
    "summarize_scores",
    "tag_documents",
    "tag_words",
    "train",
    "trust_table",
    "wilson_interval",
    "winning_category",
    "word_spans",
    "words_of",
]
