"""Computed dashboards kept until the data changes (computing them: :mod:`annotate.dashboards.compute`;
answering a request from here, inline or by a job: :mod:`annotate.dashboards.serve`).

The cache key of a dashboard is ``(study, name, digest of its params)``; the stored row carries the
*fingerprint* of the data it was computed from: counts and largest ids of the study's verified
responses (and the sum of their ids, so that an answer verified or set aside changes it even when
another one's change keeps the count), of its items, every worker's trust row as far as whose answers
count reads it (status, trust, risk exclusion: :func:`annotate.quality.exclusion.standing`, so a trust
refresh that lets a pending worker's answers in makes the row stale even when no answer changed), and
for human vs machine, of the selected runs' predictions and explanations.
A request whose current fingerprint equals the stored one is answered from the row; otherwise the
dashboard is recomputed. The study's POS tags (slow to compute, fixed per document) are cached
per document, and a new document is tagged once.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Q, Sum

from annotate.corpus.lexicon import lexicon_fingerprint
from annotate.dashboards.gather import ATTENTION, Selection
from annotate.machine.progress import Progress, no_progress
from annotate.models import Explanation, Item, ModelRun, Prediction, Response, Study, WorkerTrust
from annotate.models.dashboards import DashboardCache
from explain_engine.api import tag_documents

# Bump when the shape or the meaning of a computed dashboard changes: every cached row goes stale.
VERSION = 6
STUDY = "study"
SIMILARITY = "similarity"
POS_TAGS = "pos_tags"
DASHBOARDS = (STUDY, SIMILARITY)
# A study with at most this many responses (times the selections, for human vs machine) is computed in
# the request; a larger one in a background job. ``settings.HATLAB_DASHBOARD_INLINE_RESPONSES`` overrides.
INLINE_RESPONSES = 3000
INLINE_UNTAGGED = 200
POS_CHUNK = 25


def canonical(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(value: Any) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()


def study_fingerprint(study: Study) -> dict:
    """What the study dashboard depends on (three queries). Only verified responses enter a dashboard,
    so a provisional answer arriving leaves it current, and one verified or set aside makes it stale."""
    responses = (
        Response.objects.filter(study=study)
        .counted()
        .aggregate(
            n=Count("id"),
            last=Max("id"),
            ids=Sum("id"),
            graded=Count("id", filter=Q(gold_passed__isnull=False)),
            passed=Count("id", filter=Q(gold_passed=True)),
        )
    )
    items = Item.objects.filter(study=study).aggregate(
        n=Count("id"),
        last=Max("id"),
        retired=Count("id", filter=Q(retired=True)),
        gold=Count("id", filter=Q(is_gold=True)),
    )
    trust = list(
        WorkerTrust.objects.filter(study=study)
        .order_by("worker_id")
        .values_list("worker_id", "status", "trust", "risk_exclusion")
    )
    return {"v": VERSION, "config": study.config, "responses": responses, "items": items, "trust": trust}


def machine_fingerprint(selections: list[Selection]) -> dict:
    """What the machine maps of ``selections`` depend on (three queries)."""
    runs = sorted({s.run for s in selections})
    methods = sorted({s.method for s in selections if s.method != ATTENTION})
    explanations = list(
        Explanation.objects.filter(model_run_id__in=runs, method__in=methods)
        .values_list("model_run_id", "method")
        .annotate(n=Count("id"), last=Max("id"))
        .order_by("model_run_id", "method")
    )
    predictions = list(
        Prediction.objects.filter(model_run_id__in=runs)
        .values_list("model_run_id")
        .annotate(n=Count("id"), last=Max("id"))
        .order_by("model_run_id")
    )
    states = list(ModelRun.objects.filter(pk__in=runs).order_by("pk").values_list("pk", "status", "finished"))
    return {"explanations": explanations, "predictions": predictions, "runs": states}


def fingerprint(study: Study, name: str, params: dict) -> str:
    """The digest of the data dashboard ``name`` of ``study`` with ``params`` is computed from."""
    parts: dict[str, Any] = {"study": study_fingerprint(study)}
    if name == SIMILARITY:
        parts["machine"] = machine_fingerprint(selections_of(params))
        parts["lexicon"] = lexicon_fingerprint(study.owner_id)
    return digest(parts)


def selections_of(params: dict) -> list[Selection]:
    return [Selection(int(run), str(method)) for run, method in params.get("selections", [])]


# --------------------------------------------------------------------------------------------- store


def store(study: Study, name: str, params: dict, fp: str, result: dict) -> None:
    key = digest(params)
    for _ in range(2):  # a concurrent first store may win the insert: then update it
        try:
            with transaction.atomic():
                DashboardCache.objects.update_or_create(
                    study=study,
                    name=name,
                    params_digest=key,
                    defaults={"params": params, "fingerprint": fp, "result": result},
                )
            return
        except IntegrityError:
            continue


def cached(study: Study, name: str, params: dict, fp: str | None = None) -> dict | None:
    """The cached result when it was computed from the current data, else None."""
    fp = fp or fingerprint(study, name, params)
    row = (
        DashboardCache.objects.filter(study=study, name=name, params_digest=digest(params), fingerprint=fp)
        .values_list("result", flat=True)
        .first()
    )
    return row


# ------------------------------------------------------------------------------------------ POS tags


def pos_row(study: Study) -> DashboardCache | None:
    return DashboardCache.objects.filter(study=study, name=POS_TAGS, params_digest=digest({})).first()


def ensure_pos_tags(study: Study, records: list[dict], progress: Progress = no_progress) -> None:
    """Set ``record["pos"]`` (one Penn tag per word, :func:`explain_engine.api.tag_words`) on
    every record, tagging only documents not tagged before, ``POS_CHUNK`` at a time with progress."""
    row = pos_row(study)
    tags: dict[str, list[str]] = dict(row.result.get("tags", {})) if row else {}
    missing = [
        r
        for r in records
        if str(r["document"]) not in tags or len(tags[str(r["document"])]) != len(r["words"])
    ]
    for start in range(0, len(missing), POS_CHUNK):
        chunk = missing[start : start + POS_CHUNK]
        for rec, tagged in zip(
            chunk, tag_documents([r["text"] for r in chunk], [r["words"] for r in chunk]), strict=True
        ):
            tags[str(rec["document"])] = tagged
        progress(
            (start + len(chunk)) / len(missing), f"POS tags: {start + len(chunk)} of {len(missing)} texts"
        )
    if missing:
        store(study, POS_TAGS, {}, "", {"tags": tags})
    for rec in records:
        rec["pos"] = tags[str(rec["document"])]
    progress(1.0, "POS tags ready")
