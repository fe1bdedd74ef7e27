"""A study's life: draft → running ⇄ paused → finished. Starting a draft builds its items (unless they
were built earlier for its golds: :mod:`annotate.studies.drafts`). Paused, a study hands out nothing new but takes
the answers to items already handed out; finished, it takes no answer at all."""

from __future__ import annotations

from django.db import transaction

from annotate.infra import sql
from annotate.models import Item, Study
from annotate.protocol.attention import AttentionInvalid, prepare_attention
from annotate.protocol.training import TrainingInvalid, prepare_training
from annotate.quality.gold_mixing import prepare_gold_items
from annotate.quality.redundancy import prepare_adaptive_items
from annotate.tasks import get_kind
from annotate.tasks.base import GOLD_RATE_KEY

BATCH_SIZE = 1000
_ALLOWED = {
    "start": {Study.Status.DRAFT, Study.Status.PAUSED},
    "pause": {Study.Status.RUNNING},
    "finish": {Study.Status.RUNNING, Study.Status.PAUSED},
}
_TARGET = {"start": Study.Status.RUNNING, "pause": Study.Status.PAUSED, "finish": Study.Status.FINISHED}


class StudyStateError(ValueError):
    """The action does not apply to the study in its present state."""


def apply(study: Study, action: str) -> int:
    """Run ``action`` (``start``, ``pause`` or ``finish``) on ``study``; returns the number of items
    created (only a first start creates any). The study row is locked, so a double click is harmless."""
    if action not in _TARGET:
        raise StudyStateError(f"unknown action {action!r}; use one of {sorted(_TARGET)}")
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        if locked.status == _TARGET[action]:
            study.status = locked.status
            return 0
        if locked.status not in _ALLOWED[action]:
            raise StudyStateError(f"cannot {action} a {locked.get_status_display().lower()} study")
        created = 0
        if action == "start" and not Item.objects.filter(study=locked).exists():
            items = get_kind(locked.kind).build_items(locked)
            if not items:
                raise StudyStateError("the study's dataset has no documents")
            Item.objects.bulk_create(items, batch_size=BATCH_SIZE)
            created = len(items)
        if locked.status == Study.Status.DRAFT:
            try:  # the training examples leave the hand-out before anyone is handed an item
                prepare_training(locked)
                prepare_attention(locked)
            except (TrainingInvalid, AttentionInvalid) as exc:
                raise StudyStateError(str(exc)) from None
        if locked.status == Study.Status.DRAFT and locked.config.get(GOLD_RATE_KEY) is not None:
            prepare_gold_items(locked)  # golds mixed in at a rate meet everyone (items built now or earlier)
        if locked.status == Study.Status.DRAFT:
            prepare_adaptive_items(locked)  # an adaptive study's items open their minimum first
            sql.refresh_statistics(Item)  # the hand-out's plans see the new items
        locked.status = _TARGET[action]
        locked.save(update_fields=["status"])
        study.status = locked.status
        return created


def start_study(study: Study) -> int:
    return apply(study, "start")
