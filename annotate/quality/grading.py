"""Grading gold answers and keeping each worker's trust up to date (Pappas & Popescu-Belis 2016 §3,
Lertvittayakumjorn & Toni 2019 §5).

``Response.gold_passed`` is set when an answer is stored (the task kind's ``grade_gold``); this module
re-grades when a gold answer changes, and turns the grades into ``WorkerTrust`` rows. Retired gold
items do not count, nor do answers not (yet) verified (``Response.objects.counted()``): a worker is
trusted or excluded only on answers that count, though every answer is graded, so that one verified
later already carries its grade. All counting is one grouped query per study; the arithmetic (trust, its Wilson interval,
each worker's status) is the engine's :func:`explain_engine.api.trust_table`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Q

from annotate.models import Item, Response, Study, WorkerTrust
from annotate.quality.policy import golds_in_use, judged_after, policy_for
from annotate.tasks import get_kind
from annotate.tasks.base import ATTENTION_KEY
from explain_engine.api import trust_table

TRUST_FIELDS = ("golds_seen", "golds_passed", "trust", "trust_low", "trust_high", "status")


@dataclass(frozen=True)
class TrustChange:
    worker_id: int
    before: str | None
    after: str


def gold_counts(study: Study, worker_ids: Iterable[int] | None = None) -> dict[int, tuple[int, int]]:
    """``{worker_id: (golds passed, golds seen)}`` over the study's graded, verified answers to
    non-retired gold items (attention checks, ``secret["attention"]``, are not golds here)."""
    qs = (
        Response.objects.filter(
            study=study, item__is_gold=True, item__retired=False, gold_passed__isnull=False
        )
        .exclude(item__secret__has_key=ATTENTION_KEY)  # attention checks have their own policy
        .counted()
    )
    if worker_ids is not None:
        qs = qs.filter(worker_id__in=list(worker_ids))
    rows = qs.values("worker_id").annotate(seen=Count("id"), passed=Count("id", filter=Q(gold_passed=True)))
    return {r["worker_id"]: (r["passed"], r["seen"]) for r in rows}


def refresh_trust(study: Study, worker_ids: Iterable[int] | None = None) -> list[TrustChange]:
    """Recompute ``WorkerTrust`` for the study's workers (or the ones given) from their verified gold
    grades; returns the workers whose status changed. A worker with a trust row but no verified answer
    left (the platform never confirmed them) is recomputed too, to no golds seen.

    A worker leaves *pending* after the applied rule's ``min_golds`` golds
    (:class:`annotate.quality.policy.AppliedRule`: the policy's, or every gold in use when the study has
    fewer)."""
    policy = policy_for(study)
    wanted = None if worker_ids is None else list(worker_ids)
    mine = {} if wanted is None else {"worker_id__in": wanted}
    counts = gold_counts(study, wanted)
    workers = sorted(
        set(counts)
        | set(
            Response.objects.filter(study=study, **mine)
            .counted()
            .order_by()
            .values_list("worker_id", flat=True)
            .distinct()
        )
        | set(WorkerTrust.objects.filter(study=study, **mine).values_list("worker_id", flat=True))
    )
    if not workers:
        return []
    passed = [counts.get(w, (0, 0))[0] for w in workers]
    seen = [counts.get(w, (0, 0))[1] for w in workers]
    table = trust_table(
        passed,
        seen,
        threshold=policy.trust_threshold,
        min_golds=judged_after(policy.min_golds, golds_in_use(study)),
        confidence=policy.confidence,
    )
    changes: list[TrustChange] = []
    with transaction.atomic():
        existing = {
            t.worker_id: t
            for t in WorkerTrust.objects.select_for_update().filter(study=study, worker_id__in=workers)
        }
        new, changed = [], []
        for i, worker_id in enumerate(workers):
            trust = None if math.isnan(table.trust[i]) else float(table.trust[i])
            fields: dict = {
                "golds_seen": int(table.seen[i]),
                "golds_passed": int(table.passed[i]),
                "trust": trust,
                "trust_low": float(table.low[i]),
                "trust_high": float(table.high[i]),
                "status": str(table.status[i]),
            }
            row = existing.get(worker_id)
            if row is None:
                new.append(WorkerTrust(study=study, worker_id=worker_id, **fields))
                changes.append(TrustChange(worker_id, None, fields["status"]))
                continue
            if row.status != fields["status"]:
                changes.append(TrustChange(worker_id, row.status, fields["status"]))
            if any(getattr(row, k) != v for k, v in fields.items()):
                for key, value in fields.items():
                    setattr(row, key, value)
                changed.append(row)
        WorkerTrust.objects.bulk_create(new, ignore_conflicts=True)
        WorkerTrust.objects.bulk_update(changed, TRUST_FIELDS, batch_size=500)
    return changes


def regrade_item(item: Item) -> int:
    """Grade every response to ``item`` again against its current gold answer (none when retired),
    verified or not; returns how many grades changed."""
    kind = get_kind(item.study.kind)
    changed = []
    for response in Response.objects.filter(item=item).only("id", "answer", "gold_passed"):
        grade = None if item.retired or not item.is_gold else kind.grade_gold(item, response.answer)
        if grade != response.gold_passed:
            response.gold_passed = grade
            changed.append(response)
    Response.objects.bulk_update(changed, ["gold_passed"], batch_size=500)
    return len(changed)


def regrade_study(study: Study) -> int:
    """Re-grade all gold responses of the study and refresh trust; returns how many grades changed."""
    total = 0
    for item in Item.objects.filter(study=study, is_gold=True).select_related("study"):
        total += regrade_item(item)
    refresh_trust(study)
    return total
