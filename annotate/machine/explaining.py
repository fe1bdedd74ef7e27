"""Explanations of a trained run over its dataset.

An explanation job names its methods (registry names, or ``"all"`` for every method that applies
to the run's architecture), the documents (default: every document of the run's dataset), the
target class (the run's ``predicted`` label, the ``gold`` label, or a label name), and the evidence
it keeps: the top-``m`` words, or with ``ngram_sizes`` the top-``m`` non-overlapping n-grams
(Lertvittayakumjorn & Toni 2019 §4.3; for a CNN the natural sizes are its filter widths). Rows are upserted on
``(model_run, document, method, target)``, so the job is idempotent. What a method reports about a
text is stored with it (``diagnostics``: integrated gradients' completeness, with ``warnings`` when it
was not met at the step cap; the job's result counts those flagged), and so are the scores a method
ranks counter-evidence by when they are not its word scores (``counter_scores``, Grad-CAM-Text).
Unless ``faithfulness`` is false, each explanation is also measured against the run's model while it is
loaded (``faithfulness``: ERASER's comprehensiveness and sufficiency per bin and their AOPC, DeYoung et
al. 2020 §4, and Kendall's τ with leave-one-word-out importance, Jain & Wallace 2019 §4, for the
explained class): the dashboards read the stored values instead of loading every run's model.
"""

from __future__ import annotations

import hashlib
import json
import math
from contextlib import nullcontext
from typing import Any

from annotate.machine.errors import MachineInputError
from annotate.machine.progress import Progress, no_progress
from annotate.machine.runs import documents_with_words
from annotate.machine.training import Fence, load_trained
from annotate.models import Explanation, ModelRun, Prediction
from explain_engine import api as engine
from explain_engine.api import evidence_and_counter, json_safe

TARGET_PREDICTED = "predicted"
TARGET_GOLD = "gold"
DOCUMENT_CHUNK = 32
MAX_M = 50


#: The diagnostics key of the word ranges a method detected itself (Grad-CAM-Text's n-grams,
#: Lertvittayakumjorn & Toni 2019 §4.3.1): evidence is chosen only among them, now and when questions are made.
DETECTED_NGRAMS = "detected_ngrams"


def _int_in(field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise MachineInputError(field, f"must be a whole number from {low} to {high}")
    return value


def clean_explanation_params(model_run: ModelRun, data: Any) -> dict:
    """Validate an explanation request for ``model_run``; return it in canonical (stored) form.

    Fields: ``methods`` (list of names or ``"all"``), ``documents`` (list of document ids of the
    run's dataset, or omitted for all), ``target`` (``predicted``, ``gold`` or a label), ``m``
    (evidence count, default 3), ``ngram_sizes`` (list of n, or omitted for single words),
    ``method_params`` (``{method: {keyword: value}}``), ``batch_size``, ``faithfulness`` (measure each
    explanation's faithfulness, default true).
    """
    if model_run.status != ModelRun.Status.DONE:
        raise MachineInputError("model_run", "the model run has not finished training")
    if not isinstance(data, dict):
        raise MachineInputError("params", "must be an object")
    names = _clean_methods(model_run, data.get("methods"))
    documents = _clean_documents(model_run, data.get("documents"))
    target = _clean_target(model_run, data.get("target", TARGET_PREDICTED))
    m = _int_in("m", data.get("m", 3), 1, MAX_M)
    sizes = _clean_ngram_sizes(data.get("ngram_sizes"))
    method_params = _clean_method_params(data.get("method_params") or {}, names)
    batch_size = _int_in("batch_size", data.get("batch_size", 16), 1, 1024)
    measure = data.get("faithfulness", True)
    if not isinstance(measure, bool):
        raise MachineInputError("faithfulness", "must be true or false")
    return {
        "methods": names,
        "documents": documents,
        "target": target,
        "m": m,
        "ngram_sizes": sizes,
        "method_params": method_params,
        "batch_size": batch_size,
        "faithfulness": measure,
    }


def _clean_methods(model_run: ModelRun, methods: Any) -> list[str]:
    """The requested method names (or ``"all"``) resolved for the run's architecture, sorted."""
    if methods in (None, "", []):
        raise MachineInputError("methods", "choose at least one explanation method")
    if isinstance(methods, list) and not all(isinstance(m, str) for m in methods):
        raise MachineInputError("methods", "must be a list of method names")
    if not isinstance(methods, str | list):
        raise MachineInputError("methods", "must be a list of method names or 'all'")
    try:
        names = engine.resolve_methods(methods, model_run.architecture)
    except ValueError as exc:
        raise MachineInputError("methods", str(exc)) from None
    names = sorted(set(names))
    if not names:
        raise MachineInputError("methods", f"no method applies to architecture {model_run.architecture!r}")
    return names


def _clean_documents(model_run: ModelRun, documents: Any) -> list[int] | None:
    """The requested document ids, sorted, each a document with words of the run's dataset; None: all."""
    if documents is None:
        return None
    if (
        not isinstance(documents, list)
        or not documents
        or not all(isinstance(d, int) and not isinstance(d, bool) for d in documents)
    ):
        raise MachineInputError("documents", "must be a non-empty list of document ids")
    documents = sorted(set(documents))
    found = set(documents_with_words(model_run.dataset).filter(pk__in=documents).values_list("pk", flat=True))
    missing = [d for d in documents if d not in found]
    if missing:
        raise MachineInputError(
            "documents", f"not documents (with words) of this run's dataset: {missing[:10]}"
        )
    return documents


def _clean_target(model_run: ModelRun, target: Any) -> str:
    """``predicted`` (also for an empty target), ``gold`` or one of the run's labels."""
    labels = list(model_run.metrics.get("labels") or [])
    target = target or TARGET_PREDICTED
    if not isinstance(target, str) or (
        target not in (TARGET_PREDICTED, TARGET_GOLD) and target not in labels
    ):
        raise MachineInputError("target", f"must be '{TARGET_PREDICTED}', '{TARGET_GOLD}' or one of {labels}")
    return target


def _clean_ngram_sizes(sizes: Any) -> list[int] | None:
    """The n-gram lengths, sorted and distinct; None (also for an empty list): single words."""
    if sizes in (None, [], ""):
        return None
    if not isinstance(sizes, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 20 for n in sizes
    ):
        raise MachineInputError("ngram_sizes", "must be a list of n-gram lengths from 1 to 20")
    return sorted(set(sizes))


def _clean_method_params(method_params: Any, names: list[str]) -> dict:
    """Per requested method (or method group) an object of its parameters, each checked against the
    types and ranges the method declares in the engine's registry (:class:`explain_engine.api.Param`):
    an unknown key or a value out of range (``n_samples`` of 1e9, ``max_steps`` of 1e8) is refused
    naming ``method_params.<method>.<parameter>``, so one request's work stays bounded."""
    if not isinstance(method_params, dict) or not all(isinstance(v, dict) for v in method_params.values()):
        raise MachineInputError("method_params", "must map a method name to an object of its parameters")
    groups = {spec.group for spec in engine.METHODS.values() if spec.group and spec.name in names}
    unknown = sorted(k for k in method_params if k not in names and k not in groups)
    if unknown:
        raise MachineInputError(
            f"method_params.{unknown[0]}", f"parameters for a method not requested: {unknown[0]!r}"
        )
    try:
        return {key: engine.check_params(key, values) for key, values in method_params.items()}
    except engine.ParamError as exc:
        raise MachineInputError(f"method_params.{exc.field}", exc.message) from None


def params_digest(params: dict) -> str:
    """A short, stable digest of canonical explanation parameters (part of the job's key)."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


def _targets(model_run: ModelRun, trained, documents: list, target: str) -> list[str | None]:
    """The target label of each document; None where it has none (no gold label, or a gold label
    the model does not know)."""
    if target == TARGET_GOLD:
        return [doc.label if doc.label in trained.labels else None for doc in documents]
    if target != TARGET_PREDICTED:
        return [target] * len(documents)
    stored = dict(
        Prediction.objects.filter(model_run=model_run, document__in=documents).values_list(
            "document_id", "label"
        )
    )
    missing = [doc for doc in documents if doc.pk not in stored]
    if missing:
        for doc, res in zip(missing, trained.predict([doc.text for doc in missing]), strict=True):
            stored[doc.pk] = res["label"]
    return [stored[doc.pk] for doc in documents]


def run_explanations(
    model_run_id: int, params: dict, progress: Progress = no_progress, *, fence: Fence = nullcontext
) -> dict:
    """Compute ``params["methods"]`` for the requested documents of run ``model_run_id`` and upsert
    one ``Explanation`` per document, method and target. ``params`` is the output of
    :func:`clean_explanation_params`. Returns counts for the job's result. A job's run passes its
    ``fence`` (:func:`annotate.jobs.base.fenced`): each chunk's rows are written inside it, so a run that
    lost its job to a later attempt raises :class:`~annotate.jobs.base.Superseded` and writes no more."""
    run = ModelRun.objects.select_related("dataset").get(pk=model_run_id)
    trained = load_trained(run)
    methods = list(params["methods"])
    queryset = documents_with_words(run.dataset).only("id", "text", "words", "label")
    if params.get("documents") is not None:
        queryset = queryset.filter(pk__in=params["documents"])
    documents = list(queryset)
    stored = skipped = flagged = 0
    progress(0.0, f"explaining {len(documents)} documents with {len(methods)} methods")
    for first in range(0, len(documents), DOCUMENT_CHUNK):
        chunk = documents[first : first + DOCUMENT_CHUNK]
        targets = _targets(run, trained, chunk, params["target"])
        kept = [(doc, t) for doc, t in zip(chunk, targets, strict=True) if t is not None]
        skipped += len(chunk) - len(kept)
        if kept:
            rows, chunk_flagged = _explain_chunk(run, trained, kept, methods, params)
            with fence():
                _upsert(rows)
            stored += len(rows)
            flagged += chunk_flagged
        done = first + len(chunk)
        progress(done / len(documents), f"explained {done} of {len(documents)} documents")
    note = f", {flagged} flagged (see their diagnostics)" if flagged else ""
    progress(1.0, f"stored {stored} explanations{note}")
    return {
        "model_run": run.pk,
        "methods": methods,
        "documents": len(documents) - skipped,
        "skipped_documents": skipped,
        "explanations": stored,
        "flagged_explanations": flagged,
    }


def _explain_chunk(
    run: ModelRun, trained, kept: list[tuple[Any, str]], methods: list[str], params: dict
) -> tuple[list[Explanation], int]:
    """Every method's explanation of each (document, target) of ``kept`` with its evidence, diagnostics
    and (unless turned off) faithfulness, as unsaved rows; and how many of them a method flagged."""
    texts, targets = [doc.text for doc, _ in kept], [t for _, t in kept]
    batch_size = params.get("batch_size", 16)
    scores = engine.explain_many(
        trained, texts, methods, targets, batch_size=batch_size, params=params.get("method_params") or {}
    )
    faithful = (
        _measured(trained, texts, targets, scores, methods, params)
        if params.get("faithfulness", True)
        else {}
    )
    rows, flagged = [], 0
    for i, (doc, target) in enumerate(kept):
        for method in methods:
            values = scores[method][i]
            counter = scores.counter[method][i] if method in scores.counter else None
            chosen = evidence_and_counter(
                doc.text,
                values,
                params.get("m", 3),
                params.get("ngram_sizes"),
                doc.words,
                counter_scores=counter,
                candidates=scores.ngrams[method][i] if method in scores.ngrams else None,
            )
            report = dict(scores.diagnostics[method][i]) if method in scores.diagnostics else {}
            if method in scores.ngrams:  # the n-grams its filters detected: where evidence is chosen again
                report[DETECTED_NGRAMS] = [[int(s), int(e)] for s, e in scores.ngrams[method][i]]
            flagged += bool(report.get("warnings"))
            rows.append(
                Explanation(
                    model_run=run,
                    document=doc,
                    method=method,
                    target=target,
                    scores=json_safe(values),
                    evidence=json_safe([e.to_dict() for e in chosen["evidence"]]),
                    counter_evidence=json_safe([e.to_dict() for e in chosen["counter_evidence"]]),
                    counter_scores=None if counter is None else json_safe(counter),
                    diagnostics=json_safe(report),
                    faithfulness=json_safe(faithful[method][i]) if method in faithful else None,
                )
            )
    return rows, flagged


def _measured(
    trained, texts: list[str], targets: list[str], scores, methods: list[str], params: dict
) -> dict[str, list[dict]]:
    """Per method, the per-text faithfulness of its maps; a method with a non-finite score in any map has
    no ranking of its words and is not measured."""
    measured_methods = [m for m in methods if all(math.isfinite(v) for values in scores[m] for v in values)]
    if not measured_methods:
        return {}
    measured = engine.faithfulness(
        trained,
        texts,
        {method: scores[method] for method in measured_methods},
        targets,
        batch_size=params.get("batch_size", 16),
    )
    return {method: measured.per_text(method) for method in measured_methods}


def _upsert(rows: list[Explanation]) -> None:
    """Insert the rows, or update the stored ones of the same run, document, method and target."""
    Explanation.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["model_run", "document", "method", "target"],
        update_fields=[
            "scores",
            "evidence",
            "counter_evidence",
            "counter_scores",
            "diagnostics",
            "faithfulness",
        ],
    )


def available_methods(model_run: ModelRun) -> list[str]:
    """The registered methods that apply to the run's architecture."""
    return engine.methods_for(model_run.architecture)
