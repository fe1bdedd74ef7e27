"""How far a study has come: items done of total, and responses per (anonymised) annotator."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, Max, Q, Sum

from annotate.models import Assignment, Item, Response, Study, Worker


def study_progress(study: Study) -> dict[str, Any]:
    """Counts for the progress page and API. An item is done when it has all the responses it needs."""
    items = Item.objects.filter(study=study, retired=False).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(responses_done__gte=F("responses_needed"))),
        needed=Sum("responses_needed"),
    )
    total, done = items["total"] or 0, items["done"] or 0
    per_worker = (
        Response.objects.filter(study=study)
        .values("worker__provider", "worker__external_id")
        .annotate(
            responses=Count("id"),
            golds=Count("id", filter=Q(gold_passed__isnull=False)),
            golds_passed=Count("id", filter=Q(gold_passed=True)),
            last=Max("created"),
        )
        .order_by("-responses", "worker__provider", "worker__external_id")
    )
    annotators = [
        {
            "worker": Worker(
                provider=row["worker__provider"], external_id=row["worker__external_id"]
            ).anonymous_id,
            "provider": row["worker__provider"],
            "responses": row["responses"],
            "golds": row["golds"],
            "golds_passed": row["golds_passed"],
            "last": row["last"],
        }
        for row in per_worker
    ]
    return {
        "status": study.status,
        "items_done": done,
        "items_total": total,
        "percent": round(100.0 * done / total, 1) if total else 0.0,
        "responses": sum(a["responses"] for a in annotators),
        "responses_needed": items["needed"] or 0,
        "open_assignments": Assignment.objects.filter(study=study, status=Assignment.Status.ASSIGNED).count(),
        "annotators": annotators,
    }
