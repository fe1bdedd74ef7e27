"""How far a study has come: items done of total, answers received and how many of them are verified,
and responses per (anonymised) annotator."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, Count, F, Max, Q, Sum, Value, When
from django.db.models.functions import Least

from annotate.models import Assignment, Item, Response, Study
from annotate.models.crowd import pseudonym

VERIFIED, PROVISIONAL, SET_ASIDE = (
    Response.Verification.VERIFIED,
    Response.Verification.PROVISIONAL,
    Response.Verification.SET_ASIDE,
)


def answers_wanted(study: Study):
    """An item's answers needed, as an expression: its ``responses_needed``, a gold item's at most the
    study's workers per item (a gold open to every worker has room for many more answers than it needs:
    :data:`annotate.quality.gold_mixing.GOLD_CAPACITY`). Summed, the plan's answers needed
    (:mod:`annotate.studies.plan`)."""
    return Case(
        When(is_gold=True, then=Least(F("responses_needed"), Value(study.annotators_per_item))),
        default=F("responses_needed"),
    )


def study_progress(study: Study) -> dict[str, Any]:
    """Counts for the progress page and API. An item is done when it has all the responses it needs
    (:func:`answers_wanted`; a provisional answer holds its slot); it is *verified* when that many of its
    answers are verified, the only ones that count in results. ``responses`` counts every answer
    received, ``verified``, ``provisional`` and ``set_aside`` split it by verification."""
    wanted = answers_wanted(study)
    in_use = Item.objects.filter(study=study, retired=False).annotate(wanted=wanted)
    items = in_use.aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(responses_done__gte=F("wanted"))),
        needed=Sum("wanted"),
    )
    total, done = items["total"] or 0, items["done"] or 0
    items_verified = (
        in_use.annotate(verified=Count("responses", filter=Q(responses__verification=VERIFIED)))
        .filter(verified__gte=F("wanted"))
        .count()
    )
    per_worker = (
        Response.objects.filter(study=study)
        .values("worker__provider", "worker__external_id")
        .annotate(
            responses=Count("id"),
            verified=Count("id", filter=Q(verification=VERIFIED)),
            provisional=Count("id", filter=Q(verification=PROVISIONAL)),
            set_aside=Count("id", filter=Q(verification=SET_ASIDE)),
            golds=Count("id", filter=Q(gold_passed__isnull=False, verification=VERIFIED)),
            golds_passed=Count("id", filter=Q(gold_passed=True, verification=VERIFIED)),
            last=Max("created"),
        )
        .order_by("-responses", "worker__provider", "worker__external_id")
    )
    annotators = [
        {
            "worker": pseudonym(study.owner_id, row["worker__provider"], row["worker__external_id"]),
            "provider": row["worker__provider"],
            "responses": row["responses"],
            "verified": row["verified"],
            "provisional": row["provisional"],
            "set_aside": row["set_aside"],
            "golds": row["golds"],
            "golds_passed": row["golds_passed"],
            "last": row["last"],
        }
        for row in per_worker
    ]
    return {
        "status": study.status,
        "items_done": done,
        "items_verified": items_verified,
        "items_total": total,
        "percent": round(100.0 * done / total, 1) if total else 0.0,
        "percent_verified": round(100.0 * items_verified / total, 1) if total else 0.0,
        "responses": sum(a["responses"] for a in annotators),
        "verified": sum(a["verified"] for a in annotators),
        "provisional": sum(a["provisional"] for a in annotators),
        "set_aside": sum(a["set_aside"] for a in annotators),
        "responses_needed": items["needed"] or 0,
        # expires_at is never NULL: saying so lets the count use assignment_open_expiry_idx
        "open_assignments": Assignment.objects.filter(
            study=study, status=Assignment.Status.ASSIGNED, expires_at__isnull=False
        ).count(),
        "annotators": annotators,
    }
