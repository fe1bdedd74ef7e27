"""A draft's items and golds beside the study rule (:mod:`annotate.studies.service` edits and clones): build
a draft's items early so golds can be marked on them before it starts, build them again after an edit,
carry golds over to a clone, and delete a draft.

A draft's items are built only when something needs them (the golds page, or the start). Editing a draft
that has items builds them again from the new settings; a gold marked on an item is carried over to the
new item showing the same document and payload when its answer still fits the new settings, and dropped
(and counted) otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import transaction
from rest_framework.exceptions import ValidationError

from annotate.models import Item, Study
from annotate.quality.gold_review import GOLD_TIMINGS
from annotate.studies.lifecycle import BATCH_SIZE, StudyStateError
from annotate.tasks import get_kind


@dataclass(frozen=True)
class Rebuilt:
    """Items built again after an edit: how many, and how many golds were kept or dropped."""

    items: int = 0
    golds_kept: int = 0
    golds_dropped: int = 0


def require_draft(study: Study, what: str) -> None:
    """``StudyStateError`` unless ``study`` is a draft."""
    if study.status != Study.Status.DRAFT:
        raise StudyStateError(
            f"only a draft can be {what}; this study is {study.get_status_display().lower()}"
        )


def prepare_items(study: Study) -> int:
    """Build and save the items of a draft that has none (so golds can be marked); returns how many were
    made (0 when it already had items). ``ValidationError`` when the kind cannot build them."""
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        require_draft(locked, "prepared")
        if Item.objects.filter(study=locked).exists():
            return 0
        items = get_kind(locked.kind).build_items(locked)
        if not items:
            raise StudyStateError("the study's dataset has no documents")
        Item.objects.bulk_create(items, batch_size=BATCH_SIZE)
        return len(items)


def _item_key(document_id: int | None, payload: dict) -> str:
    return f"{document_id}:{json.dumps(payload, sort_keys=True)}"


def gold_answers(study: Study) -> dict[str, dict]:
    """The gold answers marked on ``study``'s items, by document and payload."""
    items = Item.objects.filter(study=study, is_gold=True, retired=False).only(
        "document_id", "payload", "secret"
    )
    return {_item_key(i.document_id, i.payload): i.secret["gold"] for i in items if "gold" in i.secret}


def build_with_golds(study: Study, golds: dict[str, dict]) -> Rebuilt:
    """Build and save ``study``'s items, each gold of ``golds`` on the item with its document and payload
    when the kind accepts the answer under ``study``'s settings."""
    kind = get_kind(study.kind)
    items = kind.build_items(study)
    kept = 0
    for item in items:
        gold = golds.get(_item_key(item.document_id, item.payload))
        if gold is None:
            continue
        item.study = study
        try:
            cleaned = kind.validate_gold(item, gold, dict(GOLD_TIMINGS))
        except ValidationError:
            continue
        item.secret = {**item.secret, "gold": cleaned}
        item.is_gold = True
        kept += 1
    Item.objects.bulk_create(items, batch_size=BATCH_SIZE)
    return Rebuilt(items=len(items), golds_kept=kept, golds_dropped=len(golds) - kept)


def rebuild_items(study: Study) -> Rebuilt:
    """After an edit: build a draft's items again (when it had any), carrying each gold answer over to
    the item showing the same document and payload when the kind still accepts it."""
    require_draft(study, "edited")
    with transaction.atomic():
        if not Item.objects.filter(study=study).exists():
            return Rebuilt()
        golds = gold_answers(study)
        Item.objects.filter(study=study).delete()
        return build_with_golds(study, golds)


def delete_draft(study: Study) -> None:
    """Delete a draft study and its items (a draft has no answers). ``StudyStateError`` otherwise."""
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        require_draft(locked, "deleted")
        locked.delete()
