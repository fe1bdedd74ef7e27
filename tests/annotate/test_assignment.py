"""Handing out items: N distinct annotators per item, nobody twice, open assignments kept, expiry."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotate.handout.assignment import (
    WorkerBlocked,
    next_assignment,
    next_with_progress,
    release_expired,
    unconfirmed_holders,
    worker_progress,
)
from annotate.handout.jobs import release_expired_assignments
from annotate.handout.submission import submit
from annotate.models import Assignment, Item, Worker
from annotate.quality import gold_mixing
from annotate.studies.lifecycle import start_study
from tests.annotate.conftest import good_answer, make_dataset, make_study, make_worker

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True, params=["one trip", "general path"])
def hand_out_path(request, monkeypatch):
    """Every rule holds on both PostgreSQL hand-outs: the one-statement common case (``_in_one_trip``) and
    the general path it leaves the rest to (here made to take every hand-out)."""
    if request.param == "general path":
        import annotate.handout.assignment as assignment_module

        monkeypatch.setattr(assignment_module, "_in_one_trip", lambda *args: None)
    return request.param


def answer(assignment, worker):
    ans, timings = good_answer(assignment.item)
    return submit(assignment.uid, {worker.pk}, uuid.uuid4(), ans, timings)


def test_every_item_gets_exactly_n_distinct_annotators(study):
    workers = [make_worker(f"w{i}") for i in range(5)]
    given = []
    for _ in range(len(workers) * study.items.count()):
        for w in workers:
            a = next_assignment(study, w)
            if a is not None:
                answer(a, w)
                given.append((a.item_id, w.pk, a.slot))
    per_item = {}
    for item_id, worker_id, slot in given:
        per_item.setdefault(item_id, []).append((worker_id, slot))
    assert set(per_item) == set(study.items.values_list("id", flat=True))
    for pairs in per_item.values():
        assert len(pairs) == study.annotators_per_item == 2
        assert len({w for w, _ in pairs}) == 2  # distinct annotators
        assert sorted(s for _, s in pairs) == [0, 1]  # each slot once
    assert all(next_assignment(study, w) is None for w in workers)
    assert set(Item.objects.filter(study=study).values_list("responses_done", flat=True)) == {2}


def test_nobody_sees_an_item_twice(study):
    w = make_worker("solo")
    seen = []
    while (a := next_assignment(study, w)) is not None:
        seen.append(a.item_id)
        answer(a, w)
    assert len(seen) == len(set(seen)) == study.items.count()


def test_asking_again_returns_the_held_assignment(study):
    w = make_worker("again")
    first = next_assignment(study, w)
    second = next_assignment(study, w)
    assert first.uid == second.uid
    assert second.item.payload == first.item.payload
    assert Assignment.objects.filter(worker=w).count() == 1


def test_items_are_handed_out_in_position_order_with_payload(study):
    w = make_worker("order")
    a = next_assignment(study, w)
    first_item = study.items.order_by("position").first()
    assert a.item_id == first_item.pk
    assert a.item.payload == first_item.payload
    assert a.slot == 0
    assert a.expires_at - a.assigned_at == timedelta(seconds=study.time_limit_s)


def test_expired_assignment_is_released_on_the_next_request(researcher, dataset):
    study = make_study(researcher, dataset, annotators_per_item=1, name="one each")
    slow, fast = make_worker("slow"), make_worker("fast")
    held = next_assignment(study, slow)
    later = timezone.now() + timedelta(seconds=study.time_limit_s + 1)
    taken = next_assignment(study, fast, now=later)
    assert taken.item_id == held.item_id  # the abandoned slot went back to the pool
    assert taken.slot == held.slot
    assert Assignment.objects.get(pk=held.pk).status == Assignment.Status.RELEASED
    # the slow worker never gets that item again
    again = next_assignment(study, slow, now=later)
    assert again.item_id != held.item_id


def test_release_expired_and_its_celery_task(study, other_researcher):
    """The scheduled release reaches every study's expired assignments and leaves the unexpired alone."""
    other = make_study(other_researcher, make_dataset(other_researcher, n=2, name="other's"), name="other")
    late = [next_assignment(study, make_worker("late")), next_assignment(other, make_worker("late2"))]
    on_time = next_assignment(other, make_worker("on time"))
    assert release_expired(now=timezone.now()) == 0
    Assignment.objects.filter(pk__in=[a.pk for a in late]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert release_expired_assignments.apply().get() == 2
    statuses = dict(Assignment.objects.values_list("pk", "status"))
    assert [statuses[a.pk] for a in late] == [Assignment.Status.RELEASED] * 2
    assert statuses[on_time.pk] == Assignment.Status.ASSIGNED
    assert release_expired_assignments.apply().get() == 0


def test_beat_schedule_runs_the_release_task():
    from config.celery import app

    entry = app.conf.beat_schedule["release-expired-assignments"]
    assert entry["task"] == release_expired_assignments.name
    assert entry["schedule"] > 0


def test_max_items_per_worker_and_progress(researcher, dataset):
    study = make_study(researcher, dataset, config={"max_items_per_worker": 2}, name="capped")
    w = make_worker("capped")
    assert worker_progress(study, w.pk) == {"done": 0, "total": 2}
    for _ in range(2):
        answer(next_assignment(study, w), w)
    assert worker_progress(study, w.pk) == {"done": 2, "total": 2}
    assert next_assignment(study, w) is None


def test_blocked_worker_gets_nothing(study):
    w = make_worker("blocked")
    Worker.objects.filter(pk=w.pk).update(status=Worker.Status.BLOCKED)
    with pytest.raises(WorkerBlocked):
        next_assignment(study, w)
    assert not Assignment.objects.filter(worker=w).exists()


def test_gold_filter_and_retired_items(researcher):
    dataset = make_dataset(researcher, n=6, name="with gold", gold_every=3)
    study = make_study(researcher, dataset, name="gold")
    gold_ids = set(study.items.filter(is_gold=True).values_list("id", flat=True))
    assert len(gold_ids) == 2
    w = make_worker("goldie")
    a = next_assignment(study, w, gold=True)
    assert a.item_id in gold_ids and a.item.is_gold
    answer(a, w)
    b = next_assignment(study, w, gold=False)
    assert b.item_id not in gold_ids
    answer(b, w)
    Item.objects.filter(study=study).exclude(pk__in=[a.item_id, b.item_id]).update(retired=True)
    assert next_assignment(study, w) is None


def test_portable_path_hands_out_the_same_way(study, monkeypatch):
    """The ORM steps used on databases other than PostgreSQL (the SQLite demo) follow the same rules."""
    monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    workers = [make_worker(f"p{i}") for i in range(3)]
    for _ in range(study.items.count()):
        for w in workers:
            a = next_assignment(study, w)
            if a is not None:
                assert next_assignment(study, w).uid == a.uid
                answer(a, w)
    assert set(Item.objects.filter(study=study).values_list("responses_done", flat=True)) == {2}
    pairs = list(Assignment.objects.filter(study=study).values_list("item_id", "slot"))
    assert len(pairs) == len(set(pairs)) == 2 * study.items.count()
    assert all(next_assignment(study, w) is None for w in workers)


def test_a_refused_insert_retries_the_transaction(study, monkeypatch):
    """When a unique constraint refuses the row, the whole transaction runs again; not forever."""
    from django.db import IntegrityError

    import annotate.handout.assignment as assignment_module

    monkeypatch.setattr(assignment_module, "_in_one_trip", lambda *args: None)  # the general path
    real = assignment_module._take_slot
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise IntegrityError("duplicate key value violates unique constraint")
        return real(*args, **kwargs)

    monkeypatch.setattr(assignment_module, "_take_slot", flaky)
    a = next_assignment(study, make_worker("retry"))
    assert a is not None and calls["n"] == 2
    assert Assignment.objects.filter(pk=a.pk).exists()

    def always(*args, **kwargs):
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(assignment_module, "_take_slot", always)
    with pytest.raises(IntegrityError):
        next_assignment(study, make_worker("refused"))


@pytest.mark.postgres_only(reason="a BEGIN carried by the first statement is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_a_transaction_begun_by_its_first_statement_commits_or_rolls_back(researcher, dataset):
    from django.db import connection

    from annotate.infra.sql import BEGIN, transaction_begun_by_first_statement

    study = make_study(researcher, dataset, name="one trip")
    worker = make_worker("w-trip")
    with transaction_begun_by_first_statement() as begin:
        assert begin == BEGIN and not connection.in_atomic_block
        assignment = next_assignment(study, worker)  # nested: it joins the enclosing transaction
    assert Assignment.objects.filter(pk=assignment.pk).exists()
    with pytest.raises(RuntimeError), transaction_begun_by_first_statement() as begin:
        with connection.cursor() as cursor:
            cursor.execute(f"{begin}UPDATE annotate_worker SET status = 'blocked' WHERE id = %s", [worker.pk])
        raise RuntimeError("something failed after the first statement")
    assert Worker.objects.get(pk=worker.pk).status == Worker.Status.ACTIVE  # rolled back
    # and the hand-out itself, outside any atomic block, goes through it
    assert not connection.in_atomic_block
    other = next_assignment(study, make_worker("w-trip-2"))
    assert Assignment.objects.get(pk=other.pk).status == Assignment.Status.ASSIGNED


def test_each_platform_unit_holds_its_own_open_assignment(study):
    """A worker id used on two platform units (two browsers on two MTurk assignments) gets a separate
    assignment on each, stored under its unit; asking again under a unit returns that unit's own."""
    worker = make_worker("twin")
    first = next_assignment(study, worker, ref="A1")
    second = next_assignment(study, worker, ref="A2")
    assert second is not None and first.item_id != second.item_id
    assert next_assignment(study, worker, ref="A1").pk == first.pk
    assert next_assignment(study, worker, ref="A2").pk == second.pk
    units = dict(Assignment.objects.filter(worker=worker).values_list("pk", "provider_assignment_id"))
    assert units == {first.pk: "A1", second.pk: "A2"}


def test_a_confirmed_workers_progress_counts_their_answers_from_every_unit(study):
    """A confirmed worker's answers are theirs whatever platform unit (MTurk assignment) they came
    through, so their share counts them all, under any unit."""
    confirmed = make_worker("confirmed")
    for ref in ("A1", "A2"):
        answer(next_assignment(study, confirmed, ref=ref), confirmed)
    assert worker_progress(study, confirmed.pk, "A2")["done"] == 2
    assert worker_progress(study, confirmed.pk, "A3")["done"] == 2
    assert worker_progress(study, confirmed.pk)["done"] == 2


@pytest.mark.postgres_only(reason="the planner's statistics are PostgreSQL's")
def test_a_started_study_s_items_are_counted_by_the_planner_at_once(
    researcher, django_capture_on_commit_callbacks
):
    """The hand-out's generic plans must see the new items before the crowd arrives (autovacuum may take a
    minute): after a start, the planner estimates the study's items near their number, not near zero."""
    study = make_study(researcher, make_dataset(researcher, n=400), start=False)
    with django_capture_on_commit_callbacks(execute=True):
        start_study(study)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) SELECT 1 FROM annotate_item WHERE study_id = %s", [study.pk])
        estimate = cursor.fetchone()[0][0]["Plan"]["Plan Rows"]
    assert estimate >= 200, estimate


@pytest.mark.parametrize("rate", [1.0, 0.01])
def test_a_gold_rate_hands_out_the_other_kind_once_the_wanted_one_runs_out(researcher, rate, monkeypatch):
    """A study mixing golds in at a rate still hands out every item: when the kind the rate asks for next
    has run out (every gold at rate 1, every ordinary item at a rate near 0), the worker gets the other.
    The worker's phase is pinned: drawn from the study's random uid, a phase above 0.98 would ask for a
    gold within the first two items even at rate 0.01."""
    monkeypatch.setattr(gold_mixing, "worker_phase", lambda study, worker_id: 0.5)
    dataset = make_dataset(researcher, n=6, name=f"mixed {rate}", gold_every=3)
    study = make_study(researcher, dataset, name=f"gold rate {rate}")
    study.config["gold_rate"] = rate
    study.save(update_fields=["config"])
    w = make_worker(f"mixed{rate}")
    kinds = []
    while (a := next_assignment(study, w)) is not None:
        kinds.append(a.item.is_gold)
        answer(a, w)
    assert len(kinds) == 6 and sum(kinds) == 2
    assert kinds == ([True, True] + [False] * 4 if rate == 1.0 else [False] * 4 + [True, True])


def test_progress_comes_with_every_answer_to_a_request_and_only_when_asked(study):
    """The progress shown beside an item is the worker's (done, total) whether the request made a new
    assignment, handed back the one held or found nothing left; ``with_progress=False`` reads none."""
    w = make_worker("progress")
    total = study.items.count()
    first, progress = next_with_progress(study, w.pk)
    assert first is not None and progress == worker_progress(study, w.pk) == {"done": 0, "total": total}
    held, again = next_with_progress(study, w.pk)
    assert held.uid == first.uid and again == {"done": 0, "total": total}
    assert next_with_progress(study, w.pk, with_progress=False) == (held, {})
    answer(held, w)
    while (a := next_assignment(study, w)) is not None:
        answer(a, w)
    nothing, last = next_with_progress(study, w.pk)
    assert nothing is None and last == {"done": total, "total": total}


@pytest.mark.parametrize("native", [True, False], ids=["postgresql", "portable"])
def test_unconfirmed_holders_of_every_slot_keep_no_confirmed_worker_from_the_item(
    researcher, monkeypatch, native
):
    """The overflow pass on both database paths: when unconfirmed identities hold every slot of the only item,
    confirmed workers are still handed it, on the slots past its own, until it has its confirmed holders."""
    if not native:
        monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    study = make_study(researcher, make_dataset(researcher, n=1, name="one item"), name="overflow")
    needed = study.items.get().responses_needed
    held = [next_assignment(study, make_worker(f"unconfirmed{i}"), provisional=True) for i in range(needed)]
    assert sorted(a.slot for a in held) == list(range(needed))
    confirmed = [next_assignment(study, make_worker(f"confirmed{i}")) for i in range(needed + 1)]
    assert [a.slot for a in confirmed[:needed]] == list(range(needed, 2 * needed))
    assert confirmed[needed] is None  # the item has its confirmed holders


@pytest.mark.parametrize("native", [True, False], ids=["postgresql", "portable"])
def test_the_end_of_a_study_with_no_unconfirmed_holder_skips_the_overflow_pass(
    researcher, monkeypatch, native
):
    """Every slot held by confirmed workers (the end of every study): the overflow pass, which counts the
    live assignments of every item, is not run; one unconfirmed holder and it is."""
    if not native:
        monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    import annotate.handout.assignment as handout

    passes: list[bool] = []
    candidate = handout._candidate

    def counted(*args, overflow: bool = False, **kwargs):
        passes.append(overflow)
        return candidate(*args, overflow=overflow, **kwargs)

    monkeypatch.setattr(handout, "_candidate", counted)
    study = make_study(researcher, make_dataset(researcher, n=2, name="two items"), annotators_per_item=1)
    assert next_assignment(study, make_worker("first")) is not None
    assert next_assignment(study, make_worker("second")) is not None
    passes.clear()
    assert next_assignment(study, make_worker("late")) is None
    assert passes and not any(passes)
    Assignment.objects.filter(worker__external_id="second").update(provisional=True)
    passes.clear()
    late = next_assignment(study, make_worker("later"))
    assert late is not None and late.slot == 1 and any(passes)


@pytest.mark.parametrize("native", [True, False], ids=["postgresql", "portable"])
def test_an_item_whose_answers_are_all_in_is_not_handed_out_again(researcher, monkeypatch, native):
    """An item counted as answered with none of its assignments live (answers brought in with an imported
    corpus) is not handed out: the overflow pass is only for unconfirmed holders."""
    if not native:
        monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    study = make_study(researcher, make_dataset(researcher, n=1, name="answered"), annotators_per_item=2)
    Item.objects.filter(study=study).update(responses_done=2)
    assert next_assignment(study, make_worker("anyone")) is None


@pytest.mark.postgres_only(reason="reads PostgreSQL's plan of the check for unconfirmed holders")
def test_the_check_for_unconfirmed_holders_is_one_probe_of_its_index(researcher):
    study = make_study(researcher, make_dataset(researcher, n=2, name="probe"), annotators_per_item=1)
    next_assignment(study, make_worker("held"), provisional=True)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # tiny tables: the plan a study's size gives
        assert "assignment_unconfirmed_idx" in unconfirmed_holders(study.pk).explain()
    assert unconfirmed_holders(study.pk).exists()
