"""The identities a crowd platform never confirmed: workers of a study with answers awaiting
confirmation or set aside, and not one verified answer. The researcher's crowd page lists them."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Exists, Max, Min, OuterRef, Q

from annotate.models import Response, Study
from annotate.models.crowd import pseudonym

VERIFIED = Response.Verification.VERIFIED


def unconfirmed_workers(study: Study) -> list[dict[str, Any]]:
    """One row per never-confirmed worker, latest seen first: ``worker`` (pseudonym), ``provider``,
    ``provisional`` and ``set_aside`` answer counts, ``first_seen`` and ``last_seen``. One query: the
    study's unverified answers (the partial index on study and verification) whose worker has no
    verified answer in the study (the index on study and worker)."""
    confirmed = Response.objects.filter(study=study, worker_id=OuterRef("worker_id"), verification=VERIFIED)
    rows = (
        Response.objects.filter(study=study)
        .exclude(verification=VERIFIED)
        .exclude(Exists(confirmed))
        .values("worker_id", "worker__provider", "worker__external_id")
        .annotate(
            provisional=Count("id", filter=Q(verification=Response.Verification.PROVISIONAL)),
            set_aside=Count("id", filter=Q(verification=Response.Verification.SET_ASIDE)),
            first_seen=Min("created"),
            last_seen=Max("created"),
        )
        .order_by("-last_seen", "worker_id")
    )
    return [
        {
            "worker": pseudonym(study.owner_id, row["worker__provider"], row["worker__external_id"]),
            "provider": row["worker__provider"],
            "provisional": row["provisional"],
            "set_aside": row["set_aside"],
            "first_seen": row["first_seen"],
            "last_seen": row["last_seen"],
        }
        for row in rows
    ]
