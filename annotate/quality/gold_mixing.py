"""Mixing gold items into each worker's queue at the study's rate (hidden test questions with known
answers, randomly inserted: Pappas & Popescu-Belis 2016, Lertvittayakumjorn & Toni 2019).

A study opts in with ``config["gold_rate"]`` (a share from 0 to 1, see :func:`validate_gold_rate`);
:func:`annotate.handout.assignment.next_with_progress` then asks :func:`gold_wanted` which kind of item to
hand out next. Without it (``None``, the default) items come in queue order and golds sit at their
queue positions.

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
from typing import Any

from django.conf import settings
from django.db import connection

from annotate.models import Assignment, Item, Study
from annotate.tasks.base import GOLD_RATE_KEY

GOLD_CAPACITY = 32767


def validate_gold_rate(value: Any) -> float | None:
    """A study's ``config["gold_rate"]``: ``None`` (keep queue order) or a number from 0 to 1.
    Raises ``ValueError`` with a message for the researcher otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            "must be a number from 0 to 1 (the share of gold items), or null to keep queue order"
        )
    rate = float(value)
    if not 0.0 <= rate <= 1.0:  # also refuses NaN
        raise ValueError(f"must be from 0 to 1 (the share of gold items), not {value}")
    return rate


def prepare_gold_items(study: Study) -> int:
    """Open every gold item of the study to every worker; returns how many were updated."""
    return (
        Item.objects.filter(study=study, is_gold=True)
        .exclude(responses_needed=GOLD_CAPACITY)
        .update(responses_needed=GOLD_CAPACITY)
    )


def set_gold_rate(study: Study, rate: float | None) -> None:
    """Set (or, with ``None``, remove) the study's gold rate; golds mixed in at a rate are opened to
    every worker. The study's config is the one place the hand-out reads it."""
    rate = validate_gold_rate(rate)
    config = dict(study.config)
    if rate is None:
        config.pop(GOLD_RATE_KEY, None)
    else:
        config[GOLD_RATE_KEY] = rate
    if config != study.config:
        study.config = config
        Study.objects.filter(pk=study.pk).update(config=config)
    if rate is not None:
        prepare_gold_items(study)


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


def gold_wanted(study: Study, worker_id: int, rate: float) -> bool | None:
    """Whether the worker's next new item should be a gold at ``rate``; ``None`` when the study mixes
    no golds (rate 0 or no gold item in use). One round trip: it sits on the annotator API's path."""
    if rate <= 0:
        return None
    item, assignment = Item._meta.db_table, Assignment._meta.db_table
    live = f"FROM {assignment} a WHERE a.study_id = %s AND a.worker_id = %s AND a.status <> %s"
    released = Assignment.Status.RELEASED.value
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT EXISTS(SELECT 1 FROM {item} WHERE study_id = %s AND is_gold AND NOT retired),
                       (SELECT COUNT(*) {live}),
                       (SELECT COUNT(*) {live} AND a.item_id IN (SELECT id FROM {item} WHERE is_gold))""",
            [study.pk, study.pk, worker_id, released, study.pk, worker_id, released],
        )
        has_gold, taken, golds_taken = cursor.fetchone()
    if not has_gold:
        return None
    return wants_gold(rate, taken, golds_taken, worker_phase(study, worker_id))
