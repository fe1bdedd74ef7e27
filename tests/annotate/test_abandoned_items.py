"""The "never the same item twice" rule where it can fail: two answers wanted per item, so an item a
worker abandoned (their assignment expired and was released) still has free slots, and only the rule
keeps it from going back to that worker. Checked on the three paths of the hand-out: PostgreSQL in
one round trip, PostgreSQL statement by statement (kinds with an exclusion hook), and the ORM path of
the SQLite demo."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

import annotate.handout.assignment as assignment_module
from annotate.handout.assignment import next_assignment
from annotate.handout.submission import submit
from annotate.models import Assignment, Item
from tests.annotate.conftest import good_answer, make_dataset, make_study, make_worker

pytestmark = pytest.mark.django_db

PATHS = ("native-together", "native-stepwise", "portable")


@pytest.fixture(params=PATHS)
def path(request, monkeypatch) -> str:
    if request.param == "native-stepwise":  # an exclusion hook that excludes nothing: the stepwise SQL path
        monkeypatch.setattr(assignment_module, "_exclusion_hook", lambda study: lambda study, worker_id: [])
    if request.param == "portable":
        monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    return request.param


def answer(assignment, worker):
    ans, timings = good_answer(assignment.item)
    return submit(assignment.uid, {worker.pk}, uuid.uuid4(), ans, timings)


def test_a_worker_never_gets_back_an_item_they_abandoned(researcher, path):
    dataset = make_dataset(researcher, n=2, name=f"abandon-{path}")
    study = make_study(researcher, dataset, annotators_per_item=2, name=f"abandon {path}")
    first, second = study.items.order_by("position", "id")
    quitter, other, third = make_worker("quitter"), make_worker("other"), make_worker("third")

    held = next_assignment(study, quitter)
    assert held.item_id == first.pk and held.slot == 0
    later = timezone.now() + timedelta(seconds=study.time_limit_s + 1)

    # The quitter comes back after expiry: their assignment is released, the first item has two free
    # slots and comes first in the queue, yet they get the second item.
    back = next_assignment(study, quitter, now=later)
    assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.RELEASED
    assert back.item_id == second.pk, "the hand-out gave a worker back an item they had abandoned"
    answer(back, quitter)
    # Only the abandoned item is left open for them: nothing.
    assert next_assignment(study, quitter, now=later) is None

    # Everybody else may take the abandoned item, on both of its slots.
    a = next_assignment(study, other, now=later)
    assert (a.item_id, a.slot) == (first.pk, 0)
    answer(a, other)
    b = next_assignment(study, third, now=later)
    assert (b.item_id, b.slot) == (first.pk, 1)
    answer(b, third)
    assert next_assignment(study, quitter, now=later) is None

    takers = set(
        Assignment.objects.filter(item=first, status=Assignment.Status.SUBMITTED).values_list(
            "worker_id", flat=True
        )
    )
    assert takers == {other.pk, third.pk}
    assert Item.objects.get(pk=first.pk).responses_done == 2
    assert list(Assignment.objects.filter(item=first, worker=quitter).values_list("status", flat=True)) == [
        Assignment.Status.RELEASED
    ]


def test_an_abandoned_item_stays_barred_while_others_still_work_on_it(researcher, path):
    """Three answers wanted, the item half taken by others when the quitter returns."""
    dataset = make_dataset(researcher, n=1, name=f"busy-{path}")
    study = make_study(researcher, dataset, annotators_per_item=3, name=f"busy {path}")
    (only,) = study.items.all()
    quitter, other = make_worker("quitter"), make_worker("other")
    next_assignment(study, quitter)
    later = timezone.now() + timedelta(seconds=study.time_limit_s + 1)
    taken = next_assignment(study, other, now=later)
    assert taken.item_id == only.pk
    assert next_assignment(study, quitter, now=later) is None  # two slots are free, none for them
    assert (
        Assignment.objects.filter(item=only, worker=quitter, status=Assignment.Status.ASSIGNED).count() == 0
    )
