"""The common hand-out in one round trip (:func:`annotate.handout.assignment._in_one_trip`): one statement,
committed when it returns, and everything it does not decide left to the general path."""

from __future__ import annotations

import psycopg2
import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

import annotate.handout.assignment as assignment_module
from annotate.handout.assignment import WorkerBlocked, next_assignment, next_with_progress
from annotate.models import Assignment, Worker, WorkerBlock
from tests.annotate.conftest import make_study, make_worker
from tests.services import database_url

pytestmark = [
    pytest.mark.django_db(transaction=True),  # autocommit, as in a request
    pytest.mark.postgres_only(reason="a PL/pgSQL function on PostgreSQL's hand-out"),
]


def other_connection_sees(assignment_id: int) -> bool:
    link = psycopg2.connect(database_url(connection.settings_dict))
    try:
        with link.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM annotate_assignment WHERE id = %s", [assignment_id])
            return cursor.fetchone()[0] == 1
    finally:
        link.close()


def test_a_hand_out_is_one_statement_committed_when_it_returns(researcher, dataset):
    study = make_study(researcher, dataset, name="one trip")
    # the first two make the function and prepare the statement on this connection (a function an earlier
    # test's rollback took is made again); each item takes three annotators
    before = [next_assignment(study, make_worker(name)) for name in ("first", "again")]
    second = make_worker("second")
    with CaptureQueriesContext(connection) as queries:
        assignment, progress = next_with_progress(study, second.pk)
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 1 and statements[0].startswith("EXECUTE hatlab_hand_out"), statements
    assert other_connection_sees(assignment.pk)  # committed, not waiting for a COMMIT of its own
    assert [a.slot for a in before] == [0, 1] and before[0].item_id == before[1].item_id == assignment.item_id
    assert assignment.slot == 2 and assignment.item.payload["words"] and progress["done"] == 0
    stored = Assignment.objects.get(pk=assignment.pk)
    assert (stored.uid, stored.item_id, stored.worker_id) == (assignment.uid, assignment.item_id, second.pk)
    assert stored.expires_at == assignment.expires_at and stored.assigned_at == assignment.assigned_at


def test_what_it_does_not_decide_goes_to_the_general_path(researcher, dataset):
    study = make_study(researcher, dataset, name="held")
    worker = make_worker("holder")
    held = next_assignment(study, worker)
    with CaptureQueriesContext(connection) as queries:
        again = next_assignment(study, worker)  # a held assignment: not the function's to hand back
    assert again.pk == held.pk
    assert len(queries) > 1 and queries.captured_queries[0]["sql"].startswith("EXECUTE hatlab_hand_out")


def test_a_slot_refused_under_it_is_retried_on_the_general_path(researcher, dataset, monkeypatch):
    study = make_study(researcher, dataset, name="refused")
    real = assignment_module._HAND_OUT

    class Refused:
        def execute(self, cursor, args):
            raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(assignment_module, "_HAND_OUT", Refused())
    assignment = next_assignment(study, make_worker("refused"))
    assert assignment is not None and Assignment.objects.filter(pk=assignment.pk).count() == 1
    monkeypatch.setattr(assignment_module, "_HAND_OUT", real)


def test_a_worker_the_owner_blocked_gets_nothing_from_it(researcher, dataset):
    study = make_study(researcher, dataset, name="blocked")
    worker = make_worker("blocked")
    WorkerBlock.objects.create(owner=researcher, worker=worker)
    with pytest.raises(WorkerBlocked):
        assignment_module._in_one_trip(study, worker.pk, assignment_module.timezone.now(), None, "", False)
    Worker.objects.filter(pk=worker.pk).update(status=Worker.Status.BLOCKED)
    WorkerBlock.objects.all().delete()
    with pytest.raises(WorkerBlocked):
        next_assignment(study, worker)
    assert not Assignment.objects.filter(worker=worker).exists()


def test_inside_a_transaction_it_joins_it(researcher, dataset):
    study = make_study(researcher, dataset, name="joined")
    with transaction.atomic():
        assignment = next_assignment(study, make_worker("inside"))
        assert assignment is not None and not other_connection_sees(assignment.pk)
    assert other_connection_sees(assignment.pk)


def test_a_function_a_rollback_took_is_made_again(researcher, dataset):
    """DDL is transactional: the function made inside a transaction that rolls back is gone, while the statement
    prepared with it is not. The next hand-out is still made (by the general path, after forgetting the
    statement), and the one after that is one statement again."""
    study = make_study(researcher, dataset, name="rolled back")
    workers = [make_worker(name) for name in ("made", "lost", "made again", "one trip")]
    assignment_module.sql.forget(assignment_module._HAND_OUT)
    with connection.cursor() as cursor:
        cursor.execute("DROP FUNCTION IF EXISTS pg_temp.hatlab_hand_out")
    with transaction.atomic():
        assert next_assignment(study, workers[0]) is not None  # makes the function, in here
        transaction.set_rollback(True)
    with CaptureQueriesContext(connection) as queries:
        assert next_assignment(study, workers[1]) is not None
    assert any(q["sql"] == "DEALLOCATE hatlab_hand_out" for q in queries.captured_queries)
    assert next_assignment(study, workers[2]) is not None  # makes it again
    with CaptureQueriesContext(connection) as queries:
        assert next_assignment(study, workers[3]) is not None
    assert [q["sql"][:23] for q in queries.captured_queries] == ["EXECUTE hatlab_hand_out"]


def test_a_kind_that_keeps_items_from_a_worker_is_handed_out_by_the_general_path(
    researcher, dataset, monkeypatch
):
    """A kind's ``excluded_items`` is Python, which the function cannot call: such a study's hand-outs go the
    general way, and the excluded item is never handed to the worker."""
    study = make_study(researcher, dataset, name="excluding")
    first = study.items.order_by("position", "id").first()
    monkeypatch.setattr(
        assignment_module, "_exclusion_hook", lambda study: lambda study, worker_id: [first.pk]
    )
    worker = make_worker("kept from the first")
    with CaptureQueriesContext(connection) as queries:
        assignment = next_assignment(study, worker)
    assert assignment is not None and assignment.item_id != first.pk
    assert not any("hatlab_hand_out" in q["sql"] for q in queries.captured_queries)
