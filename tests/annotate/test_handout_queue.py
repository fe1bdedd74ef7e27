"""The hand-out's queue: ``Item.slots_taken`` (kept by the database's triggers) is every item's count of live
assignments after any change to them, on PostgreSQL and SQLite, so the queue index can leave out the items
whose slots are all held; and on PostgreSQL the hand-out no longer walks past them."""

from __future__ import annotations

import importlib
import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotate.handout.assignment import _CANDIDATE, _LOCK_AND_RELEASE, next_assignment, release_expired
from annotate.handout.submission import submit
from annotate.infra.sql import Prepared
from annotate.models import Assignment, Item
from annotate.protocol.consent import release_held
from tests.annotate.conftest import good_answer, make_dataset, make_study, make_worker

pytestmark = pytest.mark.django_db
RELEASED = Assignment.Status.RELEASED


def live_counts(study) -> dict[int, int]:
    """Each item's live assignments, counted from the assignments themselves."""
    rows = Item.objects.filter(study=study).annotate(
        live=Count("assignments", filter=~Q(assignments__status=RELEASED))
    )
    return {item.pk: item.live for item in rows}


def kept_counts(study) -> dict[int, int]:
    return dict(Item.objects.filter(study=study).values_list("id", "slots_taken"))


def assert_kept(study) -> None:
    assert kept_counts(study) == live_counts(study)


def test_the_count_follows_every_change_of_an_assignment(researcher):
    study = make_study(researcher, make_dataset(researcher, n=4), annotators_per_item=2)
    workers = [make_worker(f"q{i}") for i in range(5)]
    held = [next_assignment(study, w) for w in workers]  # 2 + 2 + 1: the first items' slots are all held
    assert_kept(study)
    assert sorted(kept_counts(study).values()) == [0, 1, 2, 2]

    first = held[0]
    ans, timings = good_answer(first.item)
    submit(first.uid, {workers[0].pk}, uuid.uuid4(), ans, timings)  # answered: still holds its slot
    assert_kept(study)

    release_held(study, workers[1].pk, "")  # a worker who leaves gives the item back
    assert_kept(study)
    assert kept_counts(study)[held[1].item_id] == 1

    Assignment.objects.filter(pk=held[4].pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert release_expired(study) == 1
    assert_kept(study)

    Assignment.objects.filter(pk=held[1].pk).update(status=Assignment.Status.SUBMITTED)  # a late answer
    assert_kept(study)
    other = next(pk for pk, n in kept_counts(study).items() if n == 0)
    Assignment.objects.filter(pk=held[2].pk).update(item_id=other)  # moved to another item
    assert_kept(study)
    Assignment.objects.filter(pk__in=[held[2].pk, held[3].pk]).update(status=RELEASED)  # several at once
    assert_kept(study)
    Assignment.objects.filter(pk__in=[held[0].pk, held[3].pk]).delete()  # a live one and a released one
    assert_kept(study)
    assert set(kept_counts(study).values()) <= {0, 1}


def test_the_hand_out_fills_a_slot_given_back(researcher):
    """A released slot is handed out again: the count went down with the release (were it left up, the queue
    index would hide the item for good)."""
    study = make_study(researcher, make_dataset(researcher, n=1), annotators_per_item=1)
    first, second = make_worker("first"), make_worker("second")
    taken = next_assignment(study, first)
    assert next_assignment(study, second) is None  # the only slot is held
    release_held(study, first.pk, "")
    again = next_assignment(study, second)
    assert again is not None and again.item_id == taken.item_id
    assert_kept(study)


def test_saving_a_copy_read_earlier_keeps_the_count(researcher):
    study = make_study(researcher, make_dataset(researcher, n=1), annotators_per_item=2)
    stale = Item.objects.get(study=study)
    next_assignment(study, make_worker("holder"))
    stale.payload = {**stale.payload, "note": "edited"}
    stale.save()
    fresh = Item.objects.get(pk=stale.pk)
    assert fresh.slots_taken == 1 and fresh.payload["note"] == "edited"
    partial = Item.objects.only("id", "position").get(pk=stale.pk)  # deferred fields stay as they are
    partial.position = 99
    partial.save()
    fresh = Item.objects.get(pk=stale.pk)
    assert (fresh.position, fresh.slots_taken, fresh.payload["note"]) == (99, 1, "edited")


def test_the_migration_counts_the_assignments_already_there(researcher):
    study = make_study(researcher, make_dataset(researcher, n=3), annotators_per_item=2)
    for name in ("m1", "m2", "m3"):
        next_assignment(study, make_worker(name))
    Item.objects.filter(study=study).update(slots_taken=0)
    migration = importlib.import_module("annotate.migrations.0016_handout_queue")
    with connection.cursor() as cursor:
        cursor.execute(migration._COUNT)
    assert_kept(study)
    assert sum(kept_counts(study).values()) == 3


@pytest.mark.postgres_only(reason="reads PostgreSQL's plan of the hand-out's candidate statement")
def test_the_candidate_statement_does_not_walk_past_held_items(researcher):
    """With the first 30 items' slots all held, the first-pass candidate reads no item it then refuses: the
    queue index holds only items with a free slot (before, every held item was read and its assignments
    counted, a cost that grew with the crowd)."""
    study = make_study(researcher, make_dataset(researcher, n=40), annotators_per_item=1)
    for i in range(30):
        assert next_assignment(study, make_worker(f"h{i}")) is not None
    newcomer = make_worker("newcomer")
    statement = _CANDIDATE[None, False]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: the plan the crowd's size gives
        cursor.execute(f"PREPARE queue_probe({', '.join(statement.types)}) AS {statement.sql}")
        try:
            cursor.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE queue_probe(%s, %s, NULL, '{}', NULL, '')",
                [study.pk, newcomer.pk],
            )
            plan = cursor.fetchone()[0]
        finally:
            cursor.execute("DEALLOCATE queue_probe")
    plan = json.loads(plan) if isinstance(plan, str) else plan
    scans = [node for node in _nodes(plan[0]["Plan"]) if node.get("Relation Name") == Item._meta.db_table]
    assert [node.get("Index Name") for node in scans] == ["item_queue_idx"]
    assert scans[0]["Actual Rows"] == 1 and scans[0].get("Rows Removed by Filter", 0) == 0


STATISTICS = ["as-found", "analysed-when-all-held", "analysed-after-answers"]
PLAN_MODES = pytest.mark.parametrize(
    "plan_mode", ["force_generic_plan", "force_custom_plan"], ids=["generic", "custom"]
)


def _probe_after_answers(
    cursor, study, statistics: str, plan_mode: str, statement: Prepared, args: list
) -> dict:
    """``statement``'s plan run with ``args`` (EXPLAIN ANALYZE) once 30 of the study's first 40 assignments
    are answered, with the table's statistics as earlier tests left them, taken while all 40 were held, or
    taken after the answers; the plan a connection reuses (generic) or one made for the values (custom).
    ``args`` is called with the 40 ``(worker, assignment)`` pairs; tiny tables: no sequential scan."""
    pairs = [(worker := make_worker(f"w{i}"), next_assignment(study, worker)) for i in range(40)]
    if statistics == "analysed-when-all-held":  # ANALYZE counts its own transaction's rows
        cursor.execute(f"ANALYZE {Assignment._meta.db_table}")
    for worker, assignment in pairs[:30]:
        submit(assignment.uid, {worker.pk}, uuid.uuid4(), *good_answer(assignment.item))
    if statistics == "analysed-after-answers":
        cursor.execute(f"ANALYZE {Assignment._meta.db_table}")
    cursor.execute("SET LOCAL enable_seqscan = off")
    cursor.execute(f"SET LOCAL plan_cache_mode = {plan_mode}")
    values = args(pairs)
    cursor.execute(f"PREPARE probe({', '.join(statement.types)}) AS {statement.sql}")
    try:
        cursor.execute(
            f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE probe({', '.join(['%s'] * len(values))})", values
        )
        plan = cursor.fetchone()[0]
    finally:
        cursor.execute("DEALLOCATE probe")
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def _assignment_reads(plan: dict) -> list[dict]:
    """The plan's scans of the assignment table: each with the index names it (or its bitmap) probes."""
    reads = [
        node
        for node in _nodes(plan)
        if node.get("Relation Name") == Assignment._meta.db_table and node["Node Type"] != "ModifyTable"
    ]
    for node in reads:
        node["indexes"] = {n["Index Name"] for n in [node, *node.get("Plans", [])] if "Index Name" in n}
    return reads


@pytest.mark.postgres_only(reason="reads PostgreSQL's plan of the hand-out's release of expired assignments")
@PLAN_MODES
@pytest.mark.parametrize("statistics", STATISTICS)
def test_the_release_of_expired_assignments_reads_only_those(researcher, statistics, plan_mode):
    """Every hand-out first releases the study's expired assignments, a statement planned once per
    connection with whatever statistics the table had then. In every state it must read the expired ones
    only: planned through the study's own index it read every assignment of the study on every hand-out
    (123 M index tuples in one 30 s load run), and through the held index (a scan of all of it, dead entries
    included) where the statistics made the two tie. 30 answered, 8 held, 2 expired: 2 rows read, 2
    released."""
    study = make_study(researcher, make_dataset(researcher, n=60), annotators_per_item=1)
    now = timezone.now()

    def args(pairs):
        expired = [assignment.pk for _, assignment in pairs[30:32]]
        Assignment.objects.filter(pk__in=expired).update(expires_at=now - timedelta(minutes=1))
        return [study.pk, make_worker("newcomer").pk, now]

    with transaction.atomic(), connection.cursor() as cursor:
        plan = _probe_after_answers(cursor, study, statistics, plan_mode, _LOCK_AND_RELEASE, args)
        released = Assignment.objects.filter(study=study, status=RELEASED).count()
        transaction.set_rollback(True)
    assert released == 2
    reads = _assignment_reads(plan)
    assert reads
    for node in reads:
        assert node["indexes"] == {"assignment_open_expiry_idx"}, node
        assert node["Actual Rows"] * node["Actual Loops"] + node.get("Rows Removed by Filter", 0) <= 2, node


@pytest.mark.postgres_only(reason="reads PostgreSQL's plan of the hand-out's candidate statement")
@PLAN_MODES
@pytest.mark.parametrize("statistics", STATISTICS)
def test_the_candidate_reads_only_the_workers_own_assignments(researcher, statistics, plan_mode):
    """The candidate statement counts the worker's answers (their progress) and looks for their open
    assignment on every hand-out: each must read that worker's assignments only, never the study's answers
    (an index that led with the study and its status once took the count: 4,000 buffers a hand-out in a
    load run) nor its open ones (the expiry index, for the open one). The worker answered one of 30
    answered items and holds none: at most 1 row read by each."""
    study = make_study(researcher, make_dataset(researcher, n=60), annotators_per_item=1)

    def args(pairs):
        return [study.pk, pairs[0][0].pk, None, [], None, ""]

    with transaction.atomic(), connection.cursor() as cursor:
        plan = _probe_after_answers(cursor, study, statistics, plan_mode, _CANDIDATE[None, False], args)
        transaction.set_rollback(True)
    reads = _assignment_reads(plan)
    counts = [node for node in reads if node.get("Alias") == "d"]
    held = [node for node in reads if node.get("Alias") == "h"]
    assert counts and held  # the answers (and the skips' assignments, joined by id, where skips are read)
    for node in counts:
        assert node["indexes"] <= {"assignment_worker_idx", f"{Assignment._meta.db_table}_pkey"}, node
    for node in held:
        assert node["indexes"] <= {"assignment_worker_idx", "assignment_held_idx"}, node
    for node in counts + held:
        assert node["Actual Rows"] * node["Actual Loops"] + node.get("Rows Removed by Filter", 0) <= 1, node


def test_the_assignment_table_has_the_models_indexes_and_its_triggers():
    """After the migrations, on both databases: every index the model declares, none on the study column
    alone but the partial one of unconfirmed holders (the foreign key's, which the release could be planned
    through, is gone), and the triggers that keep ``Item.slots_taken`` (a table rebuilt on SQLite would
    have lost them)."""
    table = Assignment._meta.db_table
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    declared = {index.name for index in Assignment._meta.indexes}
    assert declared <= set(found)
    on_study = {name for name, info in found.items() if info["index"] and info["columns"] == ["study_id"]}
    assert on_study == {"assignment_unconfirmed_idx"}
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [table])
            triggers = {row[0] for row in cursor.fetchall()}
    else:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal", [table]
            )
            triggers = {row[0] for row in cursor.fetchall()}
    assert any("slots_taken" in name for name in triggers), triggers


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)
