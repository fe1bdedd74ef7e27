"""Trust moves as gold answers arrive through the annotator API (Pappas & Popescu-Belis 2016 §3: judges
under 70 % of the golds are out). In a local study with three golds and a minimum of two, a worker who
answers two golds right is trusted, and their answers count, the moment the second one is stored; one who
misses both is excluded and blocked at once; one with a single gold waits (pending). No job runs. A retry
refreshes nothing again, a provisional answer waits for its verification, a failed refresh never loses the
answer, and an ordinary answer costs no query more than before.
"""

from __future__ import annotations

import logging
import uuid

import pytest
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext

from annotate.crowd import blocks
from annotate.handout import hooks
from annotate.handout.assignment import next_assignment
from annotate.handout.submission import submit
from annotate.handout.workers import Seat
from annotate.models import Assignment, Item, QualityPolicy, Response, Study, Worker, WorkerTrust
from annotate.quality import aggregation, exclusion
from tests.annotate.conftest import make_dataset, make_study
from tests.annotate.crowd_helpers import answer_of
from tests.annotate.test_api import Annotator

pytestmark = pytest.mark.django_db

TIMINGS = {"read_ms": 1200, "answer_ms": 800, "label_at_ms": 1200, "first_highlight_at_ms": 1500}
PATHS = pytest.mark.parametrize(
    "native",
    [
        pytest.param(True, marks=pytest.mark.postgres_only(reason="the two-statement SQL path")),
        False,
    ],
    ids=["postgresql", "portable"],
)


@pytest.fixture
def study(researcher) -> Study:
    """Six reviews, the 1st, 3rd and 5th gold (handed out in queue order), three workers per item, a
    minimum of two golds, and a policy that blocks the excluded."""
    dataset = make_dataset(researcher, n=6, name="golds", gold_every=2)
    study = make_study(researcher, dataset, name="trust on submit", annotators_per_item=3)
    QualityPolicy.objects.update_or_create(study=study, defaults={"min_golds": 2, "block_mode": "platform"})
    return Study.objects.get(pk=study.pk)


def use_path(monkeypatch, native: bool) -> None:
    if not native:
        monkeypatch.setattr("annotate.infra.sql.native", lambda: False)


class Worked:
    """One annotator's browser and what it answered."""

    def __init__(self, study: Study):
        self.annotator = Annotator(study)
        self.items: list[Item] = []
        self.bodies: list[dict] = []

    @property
    def worker_id(self) -> int:
        return Assignment.objects.get(uid=self.bodies[0]["assignment"]).worker_id

    def answer(self, correct: bool, then_next: bool = False):
        """Take the next item and answer it (right or wrong: its gold, or its document's label)."""
        data = self.annotator.next().json()
        item = Item.objects.get(assignments__uid=data["assignment"])
        body = {
            "submission_key": str(uuid.uuid4()),
            "answer": answer_of(item, correct),
            "timings": TIMINGS,
            "next": then_next,
        }
        reply = self.annotator.submit(data["assignment"], body)
        self.items.append(item)
        self.bodies.append({**body, "assignment": data["assignment"]})
        return reply

    def again(self, k: int = -1):
        """Send the ``k``-th submission again (same key): a retry."""
        body = dict(self.bodies[k])
        return self.annotator.submit(body.pop("assignment"), body)


def trust_of(study: Study, worker_id: int) -> WorkerTrust | None:
    return WorkerTrust.objects.filter(study=study, worker_id=worker_id).first()


@PATHS
def test_trust_moves_as_golds_are_submitted_and_the_results_follow_without_a_job(study, monkeypatch, native):
    use_path(monkeypatch, native)
    a, b, c = Worked(study), Worked(study), Worked(study)
    for correct in (True, True, True):  # gold, ordinary, gold: all right
        assert a.answer(correct).status_code == 201
    assert [i.is_gold for i in a.items] == [True, False, True]
    row = trust_of(study, a.worker_id)
    assert (row.status, row.golds_seen, row.golds_passed, row.trust) == ("trusted", 2, 2, 1.0)

    assert b.answer(False).status_code == 201
    assert trust_of(study, b.worker_id).status == "pending"  # one gold of two
    assert b.answer(False).status_code == 201  # the ordinary item, labelled wrong
    second = b.answer(False, then_next=True)  # the second gold missed: excluded, blocked before `next`
    assert second.status_code == 201 and second.json()["next"] is None
    row = trust_of(study, b.worker_id)
    assert (row.status, row.golds_seen, row.golds_passed, row.blocked) == ("excluded", 2, 0, True)
    assert exclusion.is_blocked(study, b.worker_id)
    assert b.annotator.next().status_code == 403

    assert c.answer(True).status_code == 201  # one gold right, short of two
    assert c.answer(False).status_code == 201
    assert [i.is_gold for i in c.items] == [True, False]
    row = trust_of(study, c.worker_id)
    assert (row.status, row.golds_seen, row.golds_passed) == ("pending", 1, 1)

    ids = [a.worker_id, b.worker_id, c.worker_id]
    standing = exclusion.standing(study, ids)
    assert standing.weights == {a.worker_id: 1.0, b.worker_id: 0.0, c.worker_id: 0.0}
    assert (standing.excluded, standing.waiting) == ({b.worker_id}, {c.worker_id})
    assert exclusion.excluded_worker_ids(study) == {b.worker_id, c.worker_id}
    ordinary = a.items[1]
    assert b.items[1] == c.items[1] == ordinary
    row = next(r for r in aggregation.aggregation_rows(study) if r["item"] == ordinary.pk)
    # B and C called it the other way; only A counts
    assert (row["responses"], row["majority"]) == (1, ordinary.secret["label"])


@PATHS
def test_a_retry_refreshes_nothing_again_and_an_ordinary_answer_nothing_at_all(study, monkeypatch, native):
    use_path(monkeypatch, native)
    calls: list[list[int]] = []
    real = hooks.refresh_trust

    def counted(study, worker_ids=None):
        calls.append(list(worker_ids))
        return real(study, worker_ids)

    monkeypatch.setattr(hooks, "refresh_trust", counted)
    a = Worked(study)
    assert a.answer(True).status_code == 201
    assert len(calls) == 1
    assert a.again().status_code == 200  # the same key: found, not stored again
    assert a.answer(True).status_code == 201  # ordinary
    assert a.again().status_code == 200
    assert len(calls) == 1
    assert a.answer(True).status_code == 201
    assert a.again().status_code == 200
    assert a.again(0).status_code == 200
    assert calls == [[a.worker_id], [a.worker_id]]
    assert trust_of(study, a.worker_id).golds_seen == 2


@PATHS
def test_a_failed_refresh_keeps_the_answer_and_the_quality_job_catches_up(study, monkeypatch, native, caplog):
    use_path(monkeypatch, native)

    def broken(study, worker_ids=None):
        raise DatabaseError("the trust table is locked")

    monkeypatch.setattr(hooks, "refresh_trust", broken)
    a = Worked(study)
    with caplog.at_level(logging.ERROR, logger="annotate.handout.hooks"):
        for _ in range(3):
            assert a.answer(True).status_code == 201
    assert Response.objects.filter(worker_id=a.worker_id).counted().count() == 3
    assert trust_of(study, a.worker_id) is None
    assert sum("refreshing the trust of worker" in r.getMessage() for r in caplog.records) == 2
    monkeypatch.undo()
    blocks.apply_quality(study, mirror=False)
    assert trust_of(study, a.worker_id).status == "trusted"


def test_trust_and_its_block_are_stored_together(study, monkeypatch):
    """Blocking fails after trust was recomputed: both are undone, so the quality job (which blocks on a
    change of status only) still sees the change and blocks."""

    def broken(study, changes):
        raise DatabaseError("the worker table is locked")

    monkeypatch.setattr(hooks, "apply_local", broken)
    b = Worked(study)
    for _ in range(3):
        assert b.answer(False).status_code == 201
    assert trust_of(study, b.worker_id) is None
    monkeypatch.undo()
    assert blocks.apply_quality(study, mirror=False).blocked == [b.worker_id]
    assert exclusion.is_blocked(study, b.worker_id)


@PATHS
def test_a_provisional_gold_answer_waits_for_its_verification(study, monkeypatch, native):
    use_path(monkeypatch, native)
    worker = Worker.objects.create(external_id="unconfirmed")
    seats = {str(study.uid): Seat(worker.pk, "", verified=False)}
    for _ in range(3):
        item = Item.objects.filter(study=study).exclude(responses__worker=worker).order_by("position").first()
        assignment = next_assignment(study, worker.pk)
        assert assignment.item_id == item.pk
        result = submit(assignment.uid, seats, uuid.uuid4(), answer_of(item, False), TIMINGS)
        assert result.created and not result.moves_trust
        assert result.gold_passed is (False if item.is_gold else None)
        with CaptureQueriesContext(connection) as queries:
            assert hooks.on_submitted(result).changes == []
        assert len(queries) == 0
    assert trust_of(study, worker.pk) is None
    Response.objects.filter(worker=worker).update(verification=Response.Verification.VERIFIED)
    assert hooks.on_verification_changed(study, [worker.pk]).blocked == [worker.pk]


# Queries of one ordinary submission through the HTTP API, as counted before the trust hook existed
# (sessions and throttles live in the cache): the two statements of the PostgreSQL path, whose read also
# says whether the seat's invite was revoked, inside the test's savepoint; or the general path's lock,
# insert and two updates, each inside the test's savepoint, and for an invite's seat the one query that
# finds no revoked invite of the study (annotate.crowd.providers.local.adapter.revoked_seats).
ORDINARY_SUBMIT_QUERIES = {True: 4, False: 7}


@PATHS
def test_an_ordinary_answer_costs_no_query_more(study, monkeypatch, native, django_assert_num_queries):
    use_path(monkeypatch, native)
    a = Worked(study)
    assert a.answer(True).status_code == 201  # the gold first
    data = a.annotator.next().json()
    item = Item.objects.get(assignments__uid=data["assignment"])
    assert not item.is_gold
    body = {"submission_key": str(uuid.uuid4()), "answer": answer_of(item), "timings": TIMINGS}
    with django_assert_num_queries(ORDINARY_SUBMIT_QUERIES[native]) as queries:
        assert a.annotator.submit(data["assignment"], body).status_code == 201
    assert not any("workertrust" in q["sql"] for q in queries.captured_queries)
    # a gold answer pays for its refresh, and only it
    data = a.annotator.next().json()
    gold = Item.objects.get(assignments__uid=data["assignment"])
    assert gold.is_gold
    body = {"submission_key": str(uuid.uuid4()), "answer": answer_of(gold), "timings": TIMINGS}
    with CaptureQueriesContext(connection) as queries:
        assert a.annotator.submit(data["assignment"], body).status_code == 201
    assert len(queries) > ORDINARY_SUBMIT_QUERIES[native]
    assert any("workertrust" in q["sql"] for q in queries.captured_queries)
