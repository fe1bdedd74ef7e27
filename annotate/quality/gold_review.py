"""Gold items under review: a gold that most *trusted* workers miss is probably wrong.

For every gold item we count who saw it and who missed it, overall and among the workers trusted on
the *other* golds (leave-one-out trust, so a wrong gold cannot hide by pulling its own judges' trust
down). When enough trusted workers saw it and too many of them missed it, it is flagged; an admin then
fixes its answer or retires it, and the study's answers to it are re-graded and trust refreshed.

"Trusted on the other golds" is the trust rule of :mod:`annotate.quality.grading` applied to them: at
least ``min_golds`` of them seen, capped, as grading caps it, at how many there are to see (every
counted gold but this one), so that a study with no more golds than ``min_golds`` can still have a gold
flagged (without the cap nobody could ever be trusted on the others); and a worker whose answers are
excluded for risk (:mod:`annotate.quality.exclusion`) judges no gold. How many trusted workers must have
seen a gold, and how many of them missed it, is the applied rule's
(:class:`annotate.quality.policy.AppliedRule`: the policy's minimum, capped at the workers who answered).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from rest_framework.exceptions import ValidationError

from annotate.models import GoldReview, Item, Response, Study, WorkerTrust
from annotate.quality.gold_mixing import prepare_gold_items
from annotate.quality.grading import gold_counts, refresh_trust, regrade_item
from annotate.quality.policy import applied_rule, policy_for
from annotate.tasks import get_kind
from annotate.tasks.base import ATTENTION_KEY, GOLD_RATE_KEY
from explain_engine.api import gold_review_counts

# A gold answer is validated as an answer would be; these timings satisfy the read-first rule.
GOLD_TIMINGS = {"read_ms": 0, "answer_ms": 0, "label_at_ms": 0, "first_highlight_at_ms": 0}


def review_golds(study: Study) -> list[GoldReview]:
    """Recount and (re)flag every gold item of the study; returns the reviews, item order."""
    policy = policy_for(study)
    rule = applied_rule(study)
    counts = gold_counts(study)
    golds = list(
        Item.objects.filter(study=study, is_gold=True)
        .exclude(secret__has_key=ATTENTION_KEY)
        .order_by("position", "id")
    )
    rows = list(
        Response.objects.filter(item__in=golds, gold_passed__isnull=False)
        .counted()
        .values_list("item_id", "worker_id", "gold_passed")
    )
    reviews = {r.item_id: r for r in GoldReview.objects.filter(item__in=golds)}
    retired = {g.pk for g in golds if g.retired}
    risky = WorkerTrust.objects.filter(study=study, risk_exclusion__in=WorkerTrust.RISK_EXCLUDED)
    tallies = gold_review_counts(
        items=[r[0] for r in rows],
        workers=[r[1] for r in rows],
        passed=[bool(r[2]) for r in rows],
        passed_total=[counts.get(r[1], (0, 0))[0] for r in rows],
        seen_total=[counts.get(r[1], (0, 0))[1] for r in rows],
        # A retired gold is not in the worker's totals; leave-one-out must not subtract it again.
        in_totals=[r[0] not in retired for r in rows],
        counted_golds=sum(not g.retired for g in golds),
        min_golds=policy.min_golds,
        threshold=policy.trust_threshold,
        excluded=list(risky.values_list("worker_id", flat=True)),
    )
    out = []
    for gold in golds:
        seen, missed, t_seen, t_missed = tallies.get(gold.pk, (0, 0, 0, 0))
        review = reviews.get(gold.pk) or GoldReview(item=gold)
        review.seen, review.missed, review.trusted_seen, review.trusted_missed = (
            seen,
            missed,
            t_seen,
            t_missed,
        )
        review.flagged = (
            not gold.retired
            and review.resolution != GoldReview.Resolution.KEPT
            and t_seen >= rule.flag_min_trusted
            and t_missed >= rule.flag_miss_rate * t_seen
        )
        review.save()
        out.append(review)
    return out


@transaction.atomic
def retire_gold(item: Item, note: str = "") -> GoldReview:
    """Take a gold item out of use: no more workers get it, and it no longer counts towards trust."""
    Item.objects.filter(pk=item.pk).update(retired=True)
    item.retired = True
    regrade_item(item)
    refresh_trust(item.study)
    return _resolve(item, GoldReview.Resolution.RETIRED, note)


@transaction.atomic
def fix_gold(item: Item, gold: Any, note: str = "") -> GoldReview:
    """Replace a gold item's answer (validated as an answer of its task kind, and refused when it
    contradicts the item's answer key: :meth:`~annotate.tasks.base.TaskKind.validate_gold`), re-grade its
    answers and refresh trust. ``ValidationError`` names the bad field."""
    kind = get_kind(item.study.kind)
    try:
        cleaned = kind.validate_gold(item, gold, dict(GOLD_TIMINGS))
    except ValidationError as exc:
        detail = exc.detail.get("answer", exc.detail) if isinstance(exc.detail, dict) else exc.detail
        raise ValidationError({"gold": detail}) from None
    item.secret = {**item.secret, "gold": cleaned}
    item.is_gold = True
    Item.objects.filter(pk=item.pk).update(secret=item.secret, is_gold=True)
    regrade_item(item)
    refresh_trust(item.study)
    return _resolve(item, GoldReview.Resolution.FIXED, note)


def set_gold(item: Item, gold: Any) -> dict[str, Any]:
    """Mark ``item`` as gold with the answer ``gold`` (validated as an answer of its kind), or replace
    its gold answer; answers already given are graded again. In a study that mixes golds in at a rate,
    the item opens to every worker. ``ValidationError`` with ``{"gold": {field: [...]}}`` otherwise."""
    fix_gold(item, gold)
    if item.study.config.get(GOLD_RATE_KEY) is not None and item.study.status != Study.Status.DRAFT:
        prepare_gold_items(item.study)
    return item.secret["gold"]


@transaction.atomic
def remove_gold(item: Item) -> None:
    """``item`` is an ordinary item again: its gold answer is dropped, its answers ungraded."""
    secret = {k: v for k, v in item.secret.items() if k != "gold"}
    Item.objects.filter(pk=item.pk).update(secret=secret, is_gold=False)
    item.secret, item.is_gold = secret, False
    GoldReview.objects.filter(item=item).delete()
    regrade_item(item)
    refresh_trust(item.study)


def keep_gold(item: Item, note: str = "") -> GoldReview:
    """The admin checked a flagged gold and its answer stands: stop flagging it."""
    return _resolve(item, GoldReview.Resolution.KEPT, note)


def _resolve(item: Item, resolution: str, note: str) -> GoldReview:
    review, _ = GoldReview.objects.get_or_create(item=item)
    review.resolution = resolution
    review.flagged = False
    if note:
        review.note = note
    review.save()
    return review
