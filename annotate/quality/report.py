"""What the admin's quality dashboard shows of a study, as rows for its page and its API: per worker
the gold record, trust with its Wilson interval, behaviour signals and the risk score with its reasons;
per gold item how often it is missed, overall and by trusted workers."""

from __future__ import annotations

import json
import math
from typing import Any

from annotate.models import GoldReview, Item, Study, Worker, WorkerBlock, WorkerTrust
from annotate.quality import gold_review
from annotate.quality.exclusion import standing
from annotate.quality.risk import WorkerRisk
from annotate.quality.signals import worker_signals


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(value, digits)


def worker_rows(study: Study, risks: dict[int, WorkerRisk] | None = None) -> list[dict[str, Any]]:
    """One row per worker who answered in the study: gold record, trust, status, behaviour, and the risk
    score with its reasons (``risks``: :func:`annotate.quality.risk.study_risks`). ``excluded`` is the
    results' own verdict (:func:`annotate.quality.exclusion.standing`): their answers are left out, by
    gold trust or for risk (a pending worker's answers wait, and are not excluded)."""
    behaviour = worker_signals(study)
    risks = risks or {}
    trust = {t.worker_id: t for t in WorkerTrust.objects.filter(study=study)}
    workers = list(Worker.objects.filter(pk__in=set(behaviour) | set(trust)).order_by("id"))
    excluded = standing(study, [w.pk for w in workers]).excluded
    blocked = {w.pk for w in workers if w.status == Worker.Status.BLOCKED} | set(
        WorkerBlock.objects.filter(owner_id=study.owner_id, worker__in=workers).values_list(
            "worker_id", flat=True
        )
    )
    rows = []
    for worker in workers:
        t = trust.get(worker.pk)
        b = behaviour.get(worker.pk, {})
        risk = risks.get(worker.pk)
        risk_exclusion = t.risk_exclusion if t else ""
        rows.append(
            {
                "id": worker.pk,
                "worker": worker.pseudonym_for(study.owner_id),
                "provider": worker.provider,
                "golds_seen": t.golds_seen if t else 0,
                "golds_passed": t.golds_passed if t else 0,
                "trust": _round(t.trust) if t else None,
                "trust_low": _round(t.trust_low) if t else None,
                "trust_high": _round(t.trust_high) if t else None,
                "status": t.status if t else "pending",
                "blocked": worker.pk in blocked,
                "responses": b.get("responses", 0),
                "median_time_ms": b.get("median_time_ms"),
                "fast": b.get("fast", 0),
                "focus_changes": b.get("focus_changes", 0),
                "pastes": b.get("pastes", 0),
                "risk": _round(risk.score) if risk else None,
                "risk_flagged": bool(risk and risk.flagged),
                "risk_reasons": [r.as_dict() for r in risk.reasons] if risk else [],
                "risk_exclusion": risk_exclusion,
                "excluded": worker.pk in excluded,
            }
        )
    return rows


def gold_rows(study: Study, reviews: list[GoldReview] | None = None) -> list[dict[str, Any]]:
    reviews = reviews if reviews is not None else gold_review.review_golds(study)
    items = {i.pk: i for i in Item.objects.filter(study=study, is_gold=True).select_related("document")}
    return [
        {
            "item": r.item_id,
            "document": items[r.item_id].document.external_id if items[r.item_id].document else "",
            "gold": items[r.item_id].secret.get("gold"),
            "gold_json": json.dumps(items[r.item_id].secret.get("gold")),
            "seen": r.seen,
            "missed": r.missed,
            "miss_rate": _round(r.missed / r.seen) if r.seen else None,
            "trusted_seen": r.trusted_seen,
            "trusted_missed": r.trusted_missed,
            "flagged": r.flagged,
            "retired": items[r.item_id].retired,
            "resolution": r.resolution,
            "note": r.note,
        }
        for r in reviews
    ]
