"""Attention checks: instructed-response items of the kind's own shape ("for this item, choose
*negative* and highlight the word *purple*"), named in the protocol by their documents, whose gold
answer is the instructed one. They are gold items (mixed into the queue as golds are:
:mod:`annotate.quality.gold_mixing`) marked ``secret["attention"]`` and carrying their ``instruction``
in the payload the worker sees; gold trust and gold review leave them out, and they have their own
policy: a worker who fails more than ``max_failures`` of them is handed no more items (the answers
they gave stay, marked in the participants export)."""

from __future__ import annotations

from typing import Any

from annotate.models import Item, Response, Study
from annotate.models.crowd import pseudonym
from annotate.quality.gold_mixing import GOLD_CAPACITY
from annotate.tasks.base import ATTENTION_KEY


class AttentionInvalid(ValueError):
    """An attention check cannot be made (a document missing, or without its instructed answer)."""


def settings_of(study: Study) -> dict[str, Any]:
    return dict((study.protocol or {}).get("attention") or {})


def prepare_attention(study: Study) -> int:
    """Turn the items of the protocol's attention documents into attention checks (on start): gold items
    marked as checks, with the instruction in their payload, open to every worker. Returns how many;
    :class:`AttentionInvalid` names a document that is missing or has no instructed answer."""
    wanted = settings_of(study).get("items") or []
    if not wanted:
        return 0
    items = {
        i.document.external_id: i
        for i in Item.objects.filter(
            study=study, document__external_id__in=[w["document"] for w in wanted]
        ).select_related("document")
    }
    for position, entry in enumerate(wanted):
        item = items.get(entry["document"])
        where = f"attention check {position + 1}"
        if item is None:
            raise AttentionInvalid(f"{where}: no document {entry['document']!r} in the dataset")
        if not (item.secret or {}).get("gold"):
            raise AttentionInvalid(f"{where}: document {entry['document']!r} has no instructed answer (gold)")
        item.secret = {**item.secret, ATTENTION_KEY: True}
        item.payload = {**item.payload, "instruction": entry["instruction"]}
        item.is_gold = True
        item.responses_needed = GOLD_CAPACITY
    Item.objects.bulk_update(list(items.values()), ["secret", "payload", "is_gold", "responses_needed"])
    return len(items)


def failures(study: Study, worker_id: int, ref: str) -> int:
    """The attention checks the seat answered wrong."""
    return (
        Response.objects.filter(study=study, worker_id=worker_id, gold_passed=False)
        .filter(item__secret__has_key=ATTENTION_KEY)
        .filter(assignment__provider_assignment_id=ref)
        .count()
    )


def failed(study: Study, worker_id: int, ref: str) -> bool:
    """Whether the seat failed more attention checks than the study allows (no query without checks)."""
    setting = settings_of(study)
    if not setting.get("items"):
        return False
    return failures(study, worker_id, ref) > setting.get("max_failures", 0)


def check_rows(study: Study) -> list[dict[str, Any]]:
    """Per worker (pseudonym for the study's owner): attention checks passed and failed, the worst first
    (for the quality page, apart from the golds)."""
    rows = (
        Response.objects.filter(study=study, gold_passed__isnull=False)
        .filter(item__secret__has_key=ATTENTION_KEY)
        .values_list("worker_id", "worker__provider", "worker__external_id", "gold_passed")
    )
    found: dict[int, dict[str, Any]] = {}
    for worker_id, provider, external, passed in rows:
        entry = found.setdefault(
            worker_id, {"worker": pseudonym(study.owner_id, provider, external), "passed": 0, "failed": 0}
        )
        entry["passed" if passed else "failed"] += 1
    limit = settings_of(study).get("max_failures", 0)
    out = [{**e, "stopped": e["failed"] > limit} for e in found.values()]
    return sorted(out, key=lambda e: (-e["failed"], e["worker"]))
