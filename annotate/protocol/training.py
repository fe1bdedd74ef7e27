"""The training phase: worked examples in the kind's own widget, each answer graded against its expected
answer (the kind's gold grading, :meth:`annotate.tasks.base.TaskKind.grade_gold`) and followed by the
expected answer and its explanation. Unlike a gold, a training item is shown: it is the document's
item taken out of the hand-out (``retired``), so its answers never count as data; they are kept apart
(:class:`~annotate.models.TrainingAnswer`) and exported apart.

A participant passes an attempt when the share of training items answered right reaches the pass mark;
after a failed attempt they try again, up to ``tries`` attempts, then the study ends for them politely
(as for a failed screen)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from annotate.models import Item, Study, TrainingAnswer, TrainingItem
from annotate.tasks import get_kind


class TrainingInvalid(ValueError):
    """The study's training items cannot be made from its items (a document missing, or without gold)."""


def settings_of(study: Study) -> dict[str, Any]:
    return dict((study.protocol or {}).get("training") or {})


def prepare_training(study: Study) -> int:
    """Make the study's training items from its built items (on start; once): each named document's
    item, with its gold answer, becomes a training item and leaves the hand-out. Returns how many were
    made; :class:`TrainingInvalid` names a document that is missing or has no gold answer."""
    wanted = settings_of(study).get("items") or []
    if not wanted or TrainingItem.objects.filter(study=study).exists():
        return 0
    items = {
        i.document.external_id: i
        for i in Item.objects.filter(study=study, document__external_id__in=[w["document"] for w in wanted])
        .select_related("document")
        .order_by("position", "id")
    }
    made = []
    for position, entry in enumerate(wanted):
        item = items.get(entry["document"])
        if item is None:
            raise TrainingInvalid(
                f"training item {position + 1}: no document {entry['document']!r} in the dataset"
            )
        if not (item.secret or {}).get("gold"):
            raise TrainingInvalid(
                f"training item {position + 1}: document {entry['document']!r} has no gold answer to show"
            )
        made.append(
            TrainingItem(
                study=study,
                source=item,
                position=position,
                payload=item.payload,
                secret=item.secret,
                explanation=entry.get("explanation", ""),
            )
        )
    TrainingItem.objects.bulk_create(made)
    Item.objects.filter(pk__in=[t.source_id for t in made]).update(retired=True, is_gold=False)
    return len(made)


@dataclass(frozen=True)
class TrainingState:
    """Where a participant stands in the training: the attempt under way, the items answered in it,
    and the verdict (``passed`` true/false once decided, ``None`` while under way)."""

    attempt: int
    answered: int
    total: int
    passed: bool | None


def state(study: Study, worker_id: int, ref: str) -> TrainingState | None:
    """The participant's training state (``None`` when the study has no training items)."""
    settings = settings_of(study)
    if not settings.get("items"):
        return None  # no query for a study without training: this sits on the annotator API's path
    total = TrainingItem.objects.filter(study=study).count()
    if total == 0:
        return None
    rows = list(
        TrainingAnswer.objects.filter(study=study, worker_id=worker_id, ref=ref).values_list(
            "attempt", "passed"
        )
    )
    attempt = max((a for a, _ in rows), default=1)
    current = [p for a, p in rows if a == attempt]
    if len(current) < total:
        return TrainingState(attempt, len(current), total, None)
    if sum(1 for p in current if p) >= settings.get("pass_mark", 1.0) * total:
        return TrainingState(attempt, total, total, True)
    if attempt >= settings.get("tries", 2):
        return TrainingState(attempt, total, total, False)
    return TrainingState(attempt + 1, 0, total, None)  # failed: the next attempt starts


def next_item(study: Study, worker_id: int, ref: str) -> tuple[TrainingItem | None, TrainingState | None]:
    """The training item the participant answers next in their attempt, and their state."""
    now = state(study, worker_id, ref)
    if now is None or now.passed is not None:
        return None, now
    done = TrainingAnswer.objects.filter(study=study, worker_id=worker_id, ref=ref, attempt=now.attempt)
    item = (
        TrainingItem.objects.filter(study=study)
        .exclude(pk__in=done.values("item_id"))
        .order_by("position")
        .first()
    )
    return item, now


def _unsaved_item(study: Study, training: TrainingItem) -> Item:
    item = Item(
        pk=training.source_id, study=study, payload=training.payload, secret=training.secret, is_gold=True
    )
    item.document_id = training.source.document_id
    return item


def answer(
    study: Study, worker_id: int, ref: str, training: TrainingItem, given: Any, timings: dict[str, Any]
) -> tuple[TrainingAnswer, bool]:
    """Grade and keep a training answer in the participant's attempt: ``(answer, created)``; a second
    answer to the same item in the same attempt keeps the first. DRF ``ValidationError`` for an answer
    the kind refuses."""
    now = state(study, worker_id, ref)
    attempt = now.attempt if now is not None else 1
    existing = TrainingAnswer.objects.filter(
        study=study, worker_id=worker_id, ref=ref, item=training, attempt=attempt
    ).first()
    if existing is not None:
        return existing, False
    kind = get_kind(study.kind)
    item = _unsaved_item(study, training)
    cleaned = kind.validate_answer(item, given, timings)
    try:
        with transaction.atomic():
            made = TrainingAnswer.objects.create(
                study=study,
                worker_id=worker_id,
                ref=ref,
                item=training,
                attempt=attempt,
                answer=cleaned,
                passed=kind.grade_gold(item, cleaned),
            )
    except IntegrityError:
        found = TrainingAnswer.objects.get(
            study=study, worker_id=worker_id, ref=ref, item=training, attempt=attempt
        )
        return found, False
    return made, True


def feedback(study: Study, training: TrainingItem, given: TrainingAnswer) -> dict[str, Any]:
    """What the worker is shown after answering a training item: whether it was right, the expected
    answer in words and as the kind's answer object, and the explanation."""
    kind = get_kind(study.kind)
    gold = training.secret.get("gold") or {}
    return {
        "passed": given.passed,
        "expected": kind.describe_gold(_unsaved_item(study, training), gold),
        "expected_answer": gold,
        "explanation": training.explanation,
    }
