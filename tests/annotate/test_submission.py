"""Submitting: one transaction, idempotent by key, validated, 409 when the slot went to someone else."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from annotate.handout.assignment import next_assignment
from annotate.handout.submission import FINISHED_MESSAGE, AssignmentNotFound, SubmissionConflict, submit
from annotate.handout.workers import Seat
from annotate.models import Assignment, Item, Response, Study
from tests.annotate.conftest import good_answer, make_dataset, make_study, make_worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(study):
    worker = make_worker("sub")
    return worker, next_assignment(study, worker)


def test_submit_stores_one_response_and_counts_it(held):
    worker, a = held
    ans, timings = good_answer(a.item, "negative")
    result = submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings, {"blur": 1})
    assert result.created
    response = Response.objects.get(pk=result.response_id)
    assert response.answer == ans
    assert (response.read_ms, response.answer_ms) == (900, 400)
    assert response.signals == {
        "blur": 1,
        "page": False,  # no page token came
        "timings": {"label_at_ms": 900, "first_highlight_at_ms": 1000},
    }
    assert response.gold_passed is None
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED and a.submitted_at is not None
    assert Item.objects.get(pk=a.item_id).responses_done == 1


def test_same_key_twice_stores_once_and_answers_the_same(held):
    worker, a = held
    ans, timings = good_answer(a.item)
    key = uuid.uuid4()
    first = submit(a.uid, {worker.pk}, key, ans, timings)
    second = submit(a.uid, {worker.pk}, key, ans, timings)
    assert (first.created, second.created) == (True, False)
    assert first.body() == second.body()
    assert Response.objects.filter(assignment=a).count() == 1
    assert Item.objects.get(pk=a.item_id).responses_done == 1


def test_another_key_on_a_submitted_assignment_is_a_conflict(held):
    worker, a = held
    ans, timings = good_answer(a.item)
    submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings)
    with pytest.raises(SubmissionConflict) as exc:
        submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings)
    assert exc.value.field == "assignment"


def test_key_used_for_another_assignment_is_rejected(researcher, dataset):
    study = make_study(researcher, dataset, name="two")
    w1, w2 = make_worker("k1"), make_worker("k2")
    a1, a2 = next_assignment(study, w1), next_assignment(study, w2)
    key = uuid.uuid4()
    submit(a1.uid, {w1.pk}, key, *good_answer(a1.item))
    with pytest.raises(ValidationError) as exc:
        submit(a2.uid, {w2.pk}, key, *good_answer(a2.item))
    assert "submission_key" in exc.value.detail
    assert Assignment.objects.get(pk=a2.pk).status == Assignment.Status.ASSIGNED


def test_someone_elses_assignment_is_not_found(held):
    worker, a = held
    stranger = make_worker("stranger")
    with pytest.raises(AssignmentNotFound):
        submit(a.uid, {stranger.pk}, uuid.uuid4(), *good_answer(a.item))
    with pytest.raises(AssignmentNotFound):
        submit(uuid.uuid4(), {worker.pk}, uuid.uuid4(), *good_answer(a.item))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda ans, t: ans.update(label="great"), "label"),
        (lambda ans, t: ans.update(map=ans["map"][:-1]), "map"),
        (lambda ans, t: ans.update(map=[2] * len(ans["map"])), "map"),
        (lambda ans, t: ans.update(map=[True] + ans["map"][1:]), "map"),
        (lambda ans, t: ans.update(map=[0] * len(ans["map"])), "map"),  # positive needs a highlight
        (lambda ans, t: ans.pop("label"), "label"),
    ],
)
def test_invalid_answers_name_the_field_and_store_nothing(held, change, field):
    worker, a = held
    ans, timings = good_answer(a.item)
    change(ans, timings)
    with pytest.raises(ValidationError) as exc:
        submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings)
    assert field in exc.value.detail["answer"]
    assert not Response.objects.exists()
    assert Assignment.objects.get(pk=a.pk).status == Assignment.Status.ASSIGNED


def test_answer_must_be_an_object(held):
    worker, a = held
    with pytest.raises(ValidationError) as exc:
        submit(a.uid, {worker.pk}, uuid.uuid4(), ["positive"], good_answer(a.item)[1])
    assert "answer" in exc.value.detail


def test_cannot_decide_may_submit_without_highlights(held):
    worker, a = held
    ans = {"label": "cannot decide", "map": [0] * len(a.item.payload["words"])}
    result = submit(a.uid, {worker.pk}, uuid.uuid4(), ans, {"label_at_ms": 3000})
    assert Response.objects.get(pk=result.response_id).read_ms == 3000  # read time = time to the label


@pytest.mark.parametrize(
    ("timings", "field"),
    [
        ({"label_at_ms": 2000, "first_highlight_at_ms": 1500}, "first_highlight_at_ms"),
        ({"first_highlight_at_ms": 1500}, "label_at_ms"),
        ({"label_at_ms": 2000}, "first_highlight_at_ms"),
    ],
)
def test_read_first_rejects_highlighting_before_labelling(held, timings, field):
    worker, a = held
    ans, _ = good_answer(a.item)
    with pytest.raises(ValidationError) as exc:
        submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings)
    assert field in exc.value.detail["timings"]
    assert not Response.objects.exists()


def test_free_style_accepts_highlighting_while_reading(researcher, dataset):
    study = make_study(researcher, dataset, config={"mode": "free"}, name="free")
    w = make_worker("free")
    a = next_assignment(study, w)
    ans, _ = good_answer(a.item)
    result = submit(a.uid, {w.pk}, uuid.uuid4(), ans, {"label_at_ms": 5000, "first_highlight_at_ms": 100})
    assert result.created


def test_expired_but_not_released_is_still_accepted(held):
    worker, a = held
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(minutes=5))
    assert submit(a.uid, {worker.pk}, uuid.uuid4(), *good_answer(a.item)).created


def test_released_slot_nobody_took_is_revived(held):
    worker, a = held
    Assignment.objects.filter(pk=a.pk).update(status=Assignment.Status.RELEASED)
    assert submit(a.uid, {worker.pk}, uuid.uuid4(), *good_answer(a.item)).created
    assert Assignment.objects.get(pk=a.pk).status == Assignment.Status.SUBMITTED


def test_expired_and_reassigned_slot_is_a_conflict(researcher, dataset):
    study = make_study(researcher, dataset, annotators_per_item=1, name="single")
    slow, fast = make_worker("slow"), make_worker("fast")
    a = next_assignment(study, slow)
    later = timezone.now() + timedelta(seconds=study.time_limit_s + 5)
    b = next_assignment(study, fast, now=later)
    assert (b.item_id, b.slot) == (a.item_id, a.slot)
    with pytest.raises(SubmissionConflict) as exc:
        submit(a.uid, {slow.pk}, uuid.uuid4(), *good_answer(a.item))
    assert "another annotator" in exc.value.message
    assert submit(b.uid, {fast.pk}, uuid.uuid4(), *good_answer(b.item)).created
    assert Response.objects.filter(item_id=a.item_id).count() == 1


def test_gold_items_are_graded(researcher):
    dataset = make_dataset(researcher, n=2, name="gold", gold_every=1)
    study = make_study(researcher, dataset, name="gold", config={"gold_overlap": 0.5})
    w = make_worker("gold")
    a = next_assignment(study, w)
    gold = Item.objects.get(pk=a.item_id).secret["gold"]
    timings = {"label_at_ms": 1, "first_highlight_at_ms": 2}
    ok = submit(a.uid, {w.pk}, uuid.uuid4(), dict(gold), timings)
    assert Response.objects.get(pk=ok.response_id).gold_passed is True
    b = next_assignment(study, w)
    gold_b = Item.objects.get(pk=b.item_id).secret["gold"]
    wrong = {"label": "negative" if gold_b["label"] == "positive" else "positive", "map": gold_b["map"]}
    bad = submit(b.uid, {w.pk}, uuid.uuid4(), wrong, timings)
    assert Response.objects.get(pk=bad.response_id).gold_passed is False


def test_general_path_stores_the_same(held, monkeypatch):
    """The portable path (used off PostgreSQL) stores what the two-statement path stores."""
    monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    worker, a = held
    ans, timings = good_answer(a.item)
    key = uuid.uuid4()
    first = submit(a.uid, {worker.pk}, key, ans, timings, {"x": 1})
    assert first.created and not submit(a.uid, {worker.pk}, key, ans, timings).created
    response = Response.objects.get(pk=first.response_id)
    assert (response.answer, response.read_ms, response.signals["x"]) == (ans, 900, 1)
    assert Item.objects.get(pk=a.item_id).responses_done == 1


@pytest.mark.parametrize("native", [True, False], ids=["fast-path-where-native", "portable"])
def test_a_session_submits_only_under_its_own_platform_unit(study, monkeypatch, native):
    """Two sessions of one worker id (two browsers on two MTurk assignments) never share an assignment:
    each submits only assignments made under the unit it entered with, as verified or provisional as its
    seat says; a retry answers the same; a finished study takes no new answer."""
    if not native:
        monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    worker = make_worker("twin")
    first = next_assignment(study, worker, ref="A1")
    second = next_assignment(study, worker, ref="A2")
    assert first.item_id != second.item_id
    mine = {str(study.uid): Seat(worker.pk, "A1", verified=False)}
    other = {str(study.uid): Seat(worker.pk, "A2")}
    ans, timings = good_answer(first.item)
    with pytest.raises(AssignmentNotFound):
        submit(first.uid, other, uuid.uuid4(), ans, timings)
    key = uuid.uuid4()
    stored = submit(first.uid, mine, key, ans, timings)
    assert Response.objects.get(pk=stored.response_id).verification == Response.Verification.PROVISIONAL
    assert not Response.objects.filter(pk=stored.response_id).counted().exists()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
    assert submit(first.uid, mine, key, ans, timings).response_id == stored.response_id  # a retry
    late, late_timings = good_answer(second.item)
    with pytest.raises(SubmissionConflict) as info:
        submit(second.uid, other, uuid.uuid4(), late, late_timings)
    assert (info.value.field, info.value.message) == ("study", FINISHED_MESSAGE)
    assert Item.objects.get(pk=second.item_id).responses_done == 0
