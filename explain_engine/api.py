"""The engine's one public module: everything the web app (``annotate``) may use, as plain data in and out.

Nothing else of the engine is imported by the web app, so the engine's insides can move freely; a name
is added here when the web app needs it. This module never imports Django.

The names are listed once, in the ``if TYPE_CHECKING:`` block below as imports from the engine modules
(so the module path says the area). The areas: the canonical words of a text; data (YELP-HAT raw CSV,
Sen et al. 2020; the public human-rationale sets in, ERASER and Hugging Face folders out; offline Penn
tags); models, their optional extras, training and trained models;
explanation methods (their registry, with each method's title and source; evidence selection,
Lertvittayakumjorn & Toni 2019 §4.3); estimates with bootstrap intervals; agreement statistics; human vs
machine maps (Sen et al. 2020 §4) and the metrics by name; faithfulness (DeYoung et al. 2020 §4; Jain &
Wallace 2019 §4); importance alignment (Prasad et al. 2021 §3); sentence ratings (Pappas & Popescu-Belis
2016); crowd quality (Dawid & Skene 1979, gold trust, the gold review); crowd-worker risk and answer
speed (Brysbaert 2019's reading rate); forced choice (Lertvittayakumjorn & Toni 2019 §5); and the
registries. A results page makes one call: the report of its analysis (agreement and similarity, Sen et
al. 2020 Tables 2–5; sentence ratings; token marking, and importance alignment with a model; forced
choice; the risk score and the speed signals), plain lists and dicts in, plain data out.

Type checkers and editors read that block as ordinary imports. At run time it is not executed: this
module parses its own source once at import (:func:`listed`), and every ``from MODULE import NAME [as
ALIAS]`` of the block becomes an entry of ``_HOMES``, from which ``__all__``, ``__dir__`` and the lazy
loader derive. A name is imported on its first use (PEP 562 ``__getattr__``), so a process that needs
only the tokeniser or a metric (a management command, the annotator API) does not load torch.
"""

# ruff: noqa: F401 (the block below is the list of names this module offers; nothing here uses them)
from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the one list of the names (see the docstring)
    from explain_engine.artifacts import PRETRAINED_FOLDER, TrainedModel
    from explain_engine.datasets.eraser import write_eraser
    from explain_engine.datasets.hf_folder import write_hf_folder
    from explain_engine.datasets.public_rationales import FORMATS as RATIONALE_FORMATS
    from explain_engine.datasets.public_rationales import read_rationales
    from explain_engine.datasets.rationale_record import RationaleFormatError
    from explain_engine.datasets.yelphat import read_raw
    from explain_engine.evidence import Evidence, evidence_and_counter, select_evidence
    from explain_engine.explainers import (
        METHODS,
        Fitting,
        MethodInfo,
        MethodSpec,
        Param,
        ParamError,
        check_params,
        explain,
        explain_many,
        resolve_methods,
    )
    from explain_engine.explainers import get as get_method
    from explain_engine.extras import MissingExtra
    from explain_engine.jsonsafe import json_safe
    from explain_engine.method_catalogue import describe_method, methods_for
    from explain_engine.method_names import TRAINING_ATTENTION
    from explain_engine.metrics import METRICS
    from explain_engine.metrics.aggregation import Aggregation, dawid_skene, majority_vote, winning_category
    from explain_engine.metrics.agreement import (
        category_counts,
        cohen_kappa,
        encode_ratings,
        fleiss_kappa,
        fleiss_kappa_from_counts,
        krippendorff_alpha,
        majority_agreement,
        observed_agreement,
        pairwise_table,
        pearson_r,
    )
    from explain_engine.metrics.alignment import (
        alignment_report,
        expert_oracle,
        hard_oracle,
        importance_alignment,
        marking_alignment,
        marking_report,
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
        forced_choice_report,
        score_answers,
        score_distribution,
        summarize_scores,
    )
    from explain_engine.metrics.forced_choice import SCORE_VALUES as FORCED_CHOICE_SCORES
    from explain_engine.metrics.permutation_alignment import NULL_DESCRIPTION as ALIGNMENT_NULL
    from explain_engine.metrics.permutation_alignment import permutation_alignment, shared_marks_alignment
    from explain_engine.metrics.plausibility import eraser_plausibility, map_overlap
    from explain_engine.metrics.pos import tag_documents, tag_words
    from explain_engine.metrics.ragged import Ragged
    from explain_engine.metrics.ratings import ALL_ASPECTS as RATING_ALL_ASPECTS
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
        rating_report,
        replacement_std,
        sentence_scores,
    )
    from explain_engine.metrics.ratings import LEVELS as RATING_LEVELS
    from explain_engine.metrics.risk import Reason as RiskReason
    from explain_engine.metrics.risk import (
        WorkerRisk,
        answer_entropy,
        fast_mask,
        risk_of,
        risk_report,
        signal_report,
        words_per_minute,
        worker_reasons,
    )
    from explain_engine.metrics.risk import combine as combine_reasons
    from explain_engine.metrics.trust import DEFAULT_THRESHOLD as DEFAULT_TRUST_THRESHOLD
    from explain_engine.metrics.trust import (
        EXCLUDED,
        PENDING,
        TRUSTED,
        TrustTable,
        answer_weights,
        gold_review_counts,
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
    from explain_engine.models.transformer import CHECKPOINT_REFUSED, check_checkpoint, hub_snapshot
    from explain_engine.redundancy import RULES as STOPPING_RULES
    from explain_engine.redundancy import CountedAnswer, StoppingPolicy, item_stopped
    from explain_engine.registry import DuplicateName, Registry, UnknownName, discover
    from explain_engine.reports import agreement_report, similarity_report
    from explain_engine.text import sentence_spans, word_spans, words_of
    from explain_engine.training import TrainConfig, train


def listed(source: str) -> list[tuple[str, str, str]]:
    """``(name, module, attribute)`` for each import of the ``if TYPE_CHECKING:`` block of ``source``,
    in order (a name listed twice appears twice)."""
    tree = ast.parse(source)
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    )
    names = []
    for statement in block.body:
        if not isinstance(statement, ast.ImportFrom) or not statement.module or statement.level:
            raise TypeError(f"line {statement.lineno}: the list holds only absolute 'from ... import' lines")
        names += [(alias.asname or alias.name, statement.module, alias.name) for alias in statement.names]
    return names


def _homes(source: str) -> dict[str, tuple[str, str]]:
    homes: dict[str, tuple[str, str]] = {}
    for name, module, attribute in listed(source):
        if name in homes:
            raise ImportError(f"{__name__}: {name!r} is listed twice")
        homes[name] = (module, attribute)
    return homes


#: Where each name lives: ``{name: (module, attribute)}``, read from the block above.
_HOMES = _homes(Path(__file__).read_text(encoding="utf-8"))
__all__ = sorted(_HOMES)


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
