"""Many annotators at once: each thread has its own database connection and commits for real."""

from __future__ import annotations

import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection, transaction

from annotate.handout.assignment import next_assignment
from annotate.handout.submission import submit
from annotate.models import Assignment, Item, Response
from tests.annotate.conftest import good_answer, make_dataset, make_study, make_user, make_worker

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def item_locked_for_a_second(item_pk: int) -> Iterator[None]:
    """The item's row locked by another connection (another request) until a second after entering."""
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        try:
            with transaction.atomic():
                Item.objects.select_for_update().get(pk=item_pk)
                locked.set()
                release.wait(20)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    assert locked.wait(20)
    timer = threading.Timer(1.0, release.set)
    timer.start()
    try:
        yield
    finally:
        release.set()
        holder.join(30)


def run_threads(target, count: int) -> list[BaseException]:
    """Run ``target(index, barrier)`` in ``count`` threads; return the exceptions they raised."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def wrapper(index: int) -> None:
        try:
            target(index, barrier)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrapper, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def test_many_annotators_end_with_exactly_n_responses_per_item():
    owner = make_user("owner")
    study = make_study(owner, make_dataset(owner, n=10, name="crowd"), annotators_per_item=3, name="crowd")
    workers = [make_worker(f"crowd-{i}") for i in range(12)]
    acknowledged: dict[int, list[int]] = defaultdict(list)

    def annotate(index: int, barrier: threading.Barrier) -> None:
        worker = workers[index]
        barrier.wait()
        while (a := next_assignment(study, worker)) is not None:
            ans, timings = good_answer(a.item)
            key = uuid.uuid4()
            first = submit(a.uid, {worker.pk}, key, ans, timings)
            retry = submit(a.uid, {worker.pk}, key, ans, timings)  # a retried POST
            assert first.created and not retry.created and first.response_id == retry.response_id
            acknowledged[index].append(first.response_id)

    assert run_threads(annotate, len(workers)) == []
    stored = set(Response.objects.filter(study=study).values_list("id", flat=True))
    sent = [rid for ids in acknowledged.values() for rid in ids]
    assert len(sent) == len(set(sent)) == len(stored) == 30  # none lost, none doubled
    assert set(sent) == stored
    per_item = Counter(Response.objects.filter(study=study).values_list("item_id", flat=True))
    assert set(per_item.values()) == {3} and len(per_item) == 10
    pairs = list(Response.objects.filter(study=study).values_list("item_id", "worker_id"))
    assert len(set(pairs)) == len(pairs)  # nobody answered an item twice
    slots = defaultdict(set)
    for item_id, slot in Assignment.objects.filter(study=study).values_list("item_id", "slot"):
        slots[item_id].add(slot)
    assert all(s == {0, 1, 2} for s in slots.values())
    assert set(Item.objects.filter(study=study).values_list("responses_done", flat=True)) == {3}


def test_two_annotators_asking_at_the_same_instant_get_different_slots():
    owner = make_user("owner2")
    study = make_study(owner, make_dataset(owner, n=1, name="one"), annotators_per_item=2, name="one")
    for round_ in range(5):
        workers = [make_worker(f"pair-{round_}-{i}") for i in range(2)]
        got: dict[int, Assignment] = {}

        def ask(index: int, barrier: threading.Barrier, workers=workers, got=got) -> None:
            barrier.wait()
            got[index] = next_assignment(study, workers[index])

        assert run_threads(ask, 2) == []
        assert got[0].item_id == got[1].item_id
        assert {got[0].slot, got[1].slot} == {0, 1}
        Assignment.objects.filter(study=study).update(status=Assignment.Status.RELEASED)


def test_one_worker_asking_twice_at_once_holds_one_assignment():
    owner = make_user("owner3")
    study = make_study(owner, make_dataset(owner, n=4, name="twice"), name="twice")
    worker = make_worker("eager")
    got: list[uuid.UUID] = []

    def ask(index: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        got.append(next_assignment(study, worker).uid)

    assert run_threads(ask, 4) == []
    assert len(set(got)) == 1
    assert Assignment.objects.filter(worker=worker).count() == 1


def test_a_submission_sent_twice_at_once_is_stored_once():
    owner = make_user("owner4")
    study = make_study(owner, make_dataset(owner, n=2, name="dup"), name="dup")
    worker = make_worker("double")
    a = next_assignment(study, worker)
    ans, timings = good_answer(a.item)
    key = uuid.uuid4()
    results = []

    def send(index: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        results.append(submit(a.uid, {worker.pk}, key, ans, timings))

    assert run_threads(send, 4) == []
    assert sorted(r.created for r in results) == [False, False, False, True]
    assert len({r.response_id for r in results}) == 1
    assert Response.objects.filter(assignment=a).count() == 1
    assert Item.objects.get(pk=a.item_id).responses_done == 1


def test_a_worker_waits_for_an_overflow_item_another_request_holds_instead_of_being_told_nothing_is_left():
    """One item, one annotator per item, held by a worker the platform has not confirmed: a confirmed
    worker may take the overflow slot. While another request holds the item's row lock, the confirmed
    worker's request waits for it and gets the slot; it is never told the study has nothing left."""
    owner = make_user("owner-overflow")
    study = make_study(
        owner, make_dataset(owner, n=1, name="overflow"), annotators_per_item=1, name="overflow"
    )
    assert next_assignment(study, make_worker("unconfirmed"), ref="P1", provisional=True) is not None
    item = Item.objects.get(study=study)
    with item_locked_for_a_second(item.pk):
        got = next_assignment(study, make_worker("confirmed"))
    assert got is not None and got.item_id == item.pk and got.slot == 1


def test_a_free_slot_another_request_holds_for_a_moment_comes_before_an_overflow_slot():
    """Two items of one annotator each: the first held by a worker the platform has not confirmed (so a
    confirmed worker could take an overflow slot on it), the second free but its row locked by another
    request for a moment. The confirmed worker's request waits for the lock and takes the free slot 0 of
    the second item; an overflow slot is only for when no free slot is left."""
    owner = make_user("owner-free")
    study = make_study(owner, make_dataset(owner, n=2, name="free"), annotators_per_item=1, name="free")
    held = next_assignment(study, make_worker("unconfirmed"), ref="P1", provisional=True)
    assert held is not None
    free = Item.objects.filter(study=study).exclude(pk=held.item_id).get()
    with item_locked_for_a_second(free.pk):
        got = next_assignment(study, make_worker("waiting"))
    assert got is not None and (got.item_id, got.slot) == (free.pk, 0)


def test_the_slot_count_stays_exact_while_items_are_taken_given_back_and_answered_at_once():
    """Hand-outs, answers and expiry releases from many connections at once: every item ends with its N
    answers, and its slot count (kept by the database's triggers, which the queue index reads) matches its live
    assignments: a count that lost an update would hide an item from the queue or hand out one slot too many."""
    from datetime import timedelta

    from django.db.models import Count, Q
    from django.utils import timezone

    owner = make_user("owner-count")
    study = make_study(owner, make_dataset(owner, n=8, name="count"), annotators_per_item=2, name="count")
    workers = [make_worker(f"count-{i}") for i in range(10)]
    walked_away = Counter()

    def annotate(index: int, barrier: threading.Barrier) -> None:
        worker = workers[index]
        barrier.wait()
        while (a := next_assignment(study, worker)) is not None:
            # every third worker leaves two items without answering: the next hand-out frees them
            if index % 3 == 0 and walked_away[index] < 2:
                Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
                walked_away[index] += 1
                continue
            ans, timings = good_answer(a.item)
            submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings)

    assert run_threads(annotate, len(workers)) == []
    per_item = Counter(Response.objects.filter(study=study).values_list("item_id", flat=True))
    assert set(per_item.values()) == {2} and len(per_item) == 8
    assert sum(walked_away.values()) >= 4  # each of the four walkers left one item at least
    live = Count("assignments", filter=~Q(assignments__status=Assignment.Status.RELEASED))
    counts = Item.objects.filter(study=study).annotate(live=live).values_list("slots_taken", "live")
    assert all(kept == held for kept, held in counts), list(counts)
