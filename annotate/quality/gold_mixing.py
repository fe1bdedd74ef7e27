"""Mixing gold items into each worker's queue at the study's rate (papers 001 / 004: hidden test
questions with known answers, randomly inserted).

Gold items look like any other item to the worker: same page, same API answer (``public_payload``
never includes ``Item.secret``), so only *when* a gold comes gives them away. The schedule spreads
golds evenly at the rate ``r`` (the k-th item of a worker is a gold when ``floor((k + 1) r + phase)``
steps up), with a phase drawn per worker and study from a keyed hash, so different workers meet their
golds at different positions. A gold is asked for when the worker is behind the schedule and ordinary
items when ahead; when one kind runs out the other is given, so a worker still meets the golds left
after the ordinary items.

Every worker should be able to meet every gold, so gold items get :data:`GOLD_CAPACITY` places
(:func:`prepare_gold_items`) instead of the study's ``annotators_per_item``.
"""

from __future__ import annotations

import hashlib
import math

from django.conf import settings
from django.db import connection

from annotate.assignment import next_assignment
from annotate.models import Assignment, Item, QualityPolicy, Study

GOLD_CAPACITY = 32767
DEFAULT_GOLD_RATE = QualityPolicy._meta.get_field("gold_rate").default


def prepare_gold_items(study: Study) -> int:
    """Open every gold item of the study to every worker; returns how many were updated."""
    return (
        Item.objects.filter(study=study, is_gold=True)
        .exclude(responses_needed=GOLD_CAPACITY)
        .update(responses_needed=GOLD_CAPACITY)
    )


def worker_phase(study: Study, worker_id: int) -> float:
    """A stable number in [0, 1) per worker and study, unknown to the worker (keyed by the secret key)."""
    digest = hashlib.sha256(f"{settings.SECRET_KEY}:gold:{study.uid}:{worker_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def wants_gold(rate: float, taken: int, golds_taken: int, phase: float) -> bool:
    """Whether the next item (after ``taken`` items, ``golds_taken`` of them golds) should be a gold."""
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    return golds_taken < math.floor((taken + 1) * rate + phase)


def gold_wanted(study: Study, worker_id: int) -> bool | None:
    """Whether the worker's next new item should be a gold; ``None`` when the study mixes no golds
    (rate 0 or no gold item in use). One round trip: it sits on the annotator API's hot path."""
    policy, item, assignment = QualityPolicy._meta.db_table, Item._meta.db_table, Assignment._meta.db_table
    live = f"FROM {assignment} a WHERE a.study_id = %s AND a.worker_id = %s AND a.status <> 'released'"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT COALESCE((SELECT gold_rate FROM {policy} WHERE study_id = %s), %s),
                       EXISTS(SELECT 1 FROM {item} WHERE study_id = %s AND is_gold AND NOT retired),
                       (SELECT COUNT(*) {live}),
                       (SELECT COUNT(*) {live} AND a.item_id IN (SELECT id FROM {item} WHERE is_gold))""",
            [study.pk, DEFAULT_GOLD_RATE, study.pk, study.pk, worker_id, study.pk, worker_id],
        )
        rate, has_gold, taken, golds_taken = cursor.fetchone()
    if rate <= 0 or not has_gold:
        return None
    return wants_gold(rate, taken, golds_taken, worker_phase(study, worker_id))


def next_mixed_assignment(study: Study, worker_id: int) -> Assignment | None:
    """:func:`annotate.assignment.next_assignment` with golds mixed in at the study's ``gold_rate``.
    An assignment the worker already holds is returned as it is."""
    gold = gold_wanted(study, worker_id)
    assignment = next_assignment(study, worker_id, gold=gold)
    if assignment is None and gold is not None:  # that kind ran out: the other one, if any is left
        assignment = next_assignment(study, worker_id, gold=not gold)
    return assignment
