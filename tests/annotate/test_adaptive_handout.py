"""Adaptive redundancy in the hand-out (annotate.quality.redundancy): an item that agrees stops at its
minimum, one that disagrees gets more answers up to its maximum, answers that do not count (an excluded
worker's, a provisional one) never stop an item, and under load no item gets more than its maximum."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import pytest

from annotate.handout.assignment import next_assignment
from annotate.handout.submission import submit
from annotate.models import Item, Response, Study, WorkerTrust
from annotate.quality.redundancy import policy_of, refresh_study
from annotate.studies.lifecycle import start_study
from annotate.studies.service import StudyInvalid, create_study
from tests.annotate.conftest import good_answer, make_dataset, make_user, make_worker
from tests.annotate.test_concurrency import run_threads

ADAPTIVE = {"mode": "adaptive", "min": 2, "max": 4, "rule": "label_share", "threshold": 0.9}


def adaptive_study(owner, n: int = 3, redundancy: dict | None = None, name: str = "adaptive") -> Study:
    dataset = make_dataset(owner, n=n, name=name)
    study = create_study(
        owner,
        {
            "name": name,
            "dataset": dataset.pk,
            "kind": "highlight",
            "config": {"redundancy": redundancy or ADAPTIVE},
            "annotators_per_item": 3,
        },
    )
    start_study(study)
    return study


def answer(study: Study, worker, label: str):
    """``worker`` takes the next item and answers ``label``; returns the item's id (None: nothing left)."""
    a = next_assignment(study, worker)
    if a is None:
        return None
    ans, timings = good_answer(a.item, label)
    submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings)
    return a.item_id


def test_the_policy_is_validated_with_the_field_named_and_publishes_up_to_its_maximum(researcher):
    dataset = make_dataset(researcher, n=2)
    base = {"name": "s", "dataset": dataset.pk, "kind": "highlight", "annotators_per_item": 3}
    with pytest.raises(StudyInvalid) as bad:
        create_study(researcher, {**base, "config": {"redundancy": {**ADAPTIVE, "min": 5}}})
    assert bad.value.fields == {"config.redundancy.max": ["must be at least min (5)"]}
    with pytest.raises(StudyInvalid) as bad:
        create_study(researcher, {**base, "config": {"redundancy": {**ADAPTIVE, "rule": "ci_widht"}}})
    assert list(bad.value.fields) == ["config.redundancy.rule"]
    with pytest.raises(StudyInvalid) as bad:
        create_study(researcher, {**base, "config": {"redundancy": {"mode": "adaptive", "min": 2}}})
    assert set(bad.value.fields) == {f"config.redundancy.{f}" for f in ("max", "rule", "threshold")}
    study = create_study(researcher, {**base, "config": {"redundancy": ADAPTIVE}})
    assert study.annotators_per_item == 4 and policy_of(study).adaptive
    fixed = create_study(researcher, {**base, "name": "f"})
    assert not policy_of(fixed).adaptive and fixed.annotators_per_item == 3


def test_token_marking_offers_only_map_agreement(researcher):
    from rest_framework.exceptions import ValidationError

    from annotate.quality.redundancy import validate_redundancy

    with pytest.raises(ValidationError) as bad:
        validate_redundancy(ADAPTIVE, "token_marking")
    assert "map_agreement" in str(bad.value.detail["rule"][0])
    assert (
        validate_redundancy({**ADAPTIVE, "rule": "map_agreement"}, "token_marking")["rule"] == "map_agreement"
    )


def test_an_agreeing_item_stops_at_its_minimum_and_a_disagreeing_one_gets_more(researcher):
    study = adaptive_study(researcher, n=2)
    first, second = Item.objects.filter(study=study).order_by("position", "id")
    assert {first.responses_needed, second.responses_needed} == {2}  # every item opens its minimum
    # item 1: two agreeing answers; item 2: two answers that disagree
    plan = {first.pk: ["positive", "positive"], second.pk: ["positive", "negative", "negative", "negative"]}
    workers = [make_worker(f"w{i}") for i in range(6)]
    given: dict[int, list[str]] = {first.pk: [], second.pk: []}
    for worker in workers:
        while True:
            a = next_assignment(study, worker)
            if a is None:
                break
            label = plan[a.item_id][len(given[a.item_id])]
            ans, timings = good_answer(a.item, label)
            submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings)
            given[a.item_id].append(label)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.responses_done == 2 and first.stop_reason.startswith("label_share 1.000 >= 0.9 at 2")
    # 1/2, 2/3 and 3/4 never reach 0.9: it goes on to its maximum of 4
    assert second.responses_done == 4 and second.stop_reason.startswith("maximum of 4 answers")
    assert Counter(Response.objects.filter(study=study).values_list("item_id", flat=True)) == {
        first.pk: 2,
        second.pk: 4,
    }
    assert next_assignment(study, make_worker("late")) is None  # every item stopped: the study is done


def test_items_collecting_their_minimum_come_before_items_asked_for_more(researcher):
    study = adaptive_study(researcher, n=3)
    items = list(Item.objects.filter(study=study).order_by("position", "id"))
    a, b = make_worker("a"), make_worker("b")
    assert answer(study, a, "positive") == items[0].pk
    assert answer(study, b, "negative") == items[0].pk  # item 1 disagrees: asked for a third answer
    items[0].refresh_from_db()
    assert (items[0].responses_needed, items[0].round, items[0].stop_reason) == (3, 1, "")
    # a's next item is item 2 (collecting its minimum), not item 1's extra place
    assert answer(study, a, "positive") == items[1].pk


def test_an_excluded_workers_answers_do_not_count_towards_the_rule(researcher):
    study = adaptive_study(researcher, n=1)
    item = Item.objects.get(study=study)
    cheat = make_worker("cheat")
    WorkerTrust.objects.create(study=study, worker=cheat, risk_exclusion=WorkerTrust.RiskExclusion.RESEARCHER)
    honest = [make_worker(f"h{i}") for i in range(3)]
    assert answer(study, cheat, "positive") == item.pk
    assert answer(study, honest[0], "positive") == item.pk
    item.refresh_from_db()
    # two answers agree, but one is the excluded worker's: only one counts, below the minimum of 2
    assert item.stop_reason == "" and item.responses_needed == 3
    assert answer(study, honest[1], "positive") == item.pk
    item.refresh_from_db()
    assert item.responses_done == 3 and item.stop_reason.startswith("label_share 1.000 >= 0.9 at 2")
    assert answer(study, honest[2], "positive") is None


def test_lifting_an_exclusion_reopens_or_stops_items_when_the_study_is_refreshed(researcher):
    study = adaptive_study(researcher, n=1)
    item = Item.objects.get(study=study)
    w1, w2 = make_worker("x1"), make_worker("x2")
    answer(study, w1, "positive")
    answer(study, w2, "positive")
    item.refresh_from_db()
    assert item.stop_reason != ""
    WorkerTrust.objects.create(study=study, worker=w2, risk_exclusion=WorkerTrust.RiskExclusion.RESEARCHER)
    assert refresh_study(study) == 1
    item.refresh_from_db()
    assert item.stop_reason == "" and item.responses_needed == 3  # reopened: one counted answer left
    assert answer(study, make_worker("x3"), "positive") == item.pk


def test_a_fixed_study_is_untouched(researcher):
    dataset = make_dataset(researcher, n=2, name="fixed")
    study = create_study(
        researcher, {"name": "f", "dataset": dataset.pk, "kind": "highlight", "annotators_per_item": 2}
    )
    start_study(study)
    workers = [make_worker(f"f{i}") for i in range(3)]
    for w in workers:
        while answer(study, w, "positive" if w.external_id != "f1" else "negative") is not None:
            pass
    done = Item.objects.filter(study=study).values_list("responses_done", "responses_needed", "stop_reason")
    assert set(done) == {(2, 2, "")}


@pytest.mark.django_db(transaction=True)
def test_under_load_no_item_gets_more_than_its_maximum_nor_one_worker_twice():
    owner = make_user("load-owner")
    study = adaptive_study(owner, n=8, redundancy={**ADAPTIVE, "max": 5}, name="load")
    items = list(Item.objects.filter(study=study).order_by("position", "id").values_list("id", flat=True))
    agreeing = set(items[::2])  # half the items agree, half split evenly
    workers = [make_worker(f"load-{i}") for i in range(12)]

    def annotate(index: int, barrier: threading.Barrier) -> None:
        """Answer while the study has an open item this worker has not answered (an item asking for one
        more answer waits for the one in flight: the worker comes back for it, as a crowd does)."""
        worker = workers[index]
        barrier.wait()
        open_to_me = Item.objects.filter(study=study, stop_reason="").exclude(responses__worker=worker)
        while open_to_me.exists():
            a = next_assignment(study, worker)
            if a is None:
                time.sleep(0.02)
                continue
            label = "positive" if a.item_id in agreeing or index % 2 else "negative"
            ans, timings = good_answer(a.item, label)
            submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings)

    assert run_threads(annotate, len(workers)) == []
    per_item = Counter(Response.objects.filter(study=study).values_list("item_id", flat=True))
    assert max(per_item.values()) <= 5 and set(per_item) == set(items)
    pairs = list(Response.objects.filter(study=study).values_list("item_id", "worker_id"))
    assert len(set(pairs)) == len(pairs)
    stopped = dict(Item.objects.filter(study=study).values_list("id", "stop_reason"))
    assert all(stopped.values())  # every item stopped: by its rule or at its maximum
    assert all(per_item[i] == 2 for i in agreeing)  # agreeing items stopped at their minimum


def test_the_study_page_exports_and_datasheet_show_each_items_answers_and_why_it_stopped(researcher, client):
    from django.urls import reverse

    from annotate.exports.datasheet import datasheet
    from annotate.exports.tables import response_columns, response_rows

    study = adaptive_study(researcher, n=2)
    first, second = Item.objects.filter(study=study).order_by("position", "id")
    for i, label in enumerate(["positive", "positive"]):
        answer(study, make_worker(f"p{i}"), label)  # item 1 agrees and stops at 2
    second_answers = ["positive", "negative"]
    for i, label in enumerate(second_answers):
        assert answer(study, make_worker(f"q{i}"), label) == second.pk
    client.force_login(researcher)
    page = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    assert "adaptive: 2 to 4 answers per item, an item stops when label_share is at least 0.9" in page
    assert 'id="stopped-by-rule">1<' in page and 'id="still-open">1<' in page
    assert "label_share 1.000 &gt;= 0.9 at 2 answers" in page
    names = [name for name, _ in response_columns(study)]
    assert names[-2:] == ["item_answers", "item_stop_reason"]
    rows = {r["item"]: (r["item_answers"], r["item_stop_reason"]) for r in response_rows(study)}
    assert rows[first.pk][0] == 2 and rows[first.pk][1].startswith("label_share")
    assert rows[second.pk] == (2, "")
    sheet = datasheet(study)
    assert "- Redundancy: adaptive: 2 to 4 answers per item" in sheet
    assert "Items stopped by their rule: 1; at the maximum: 0; still collecting: 1" in sheet
    # a fixed study's exports are as they were
    fixed = create_study(
        researcher,
        {"name": "f", "dataset": study.dataset_id, "kind": "highlight", "annotators_per_item": 2},
    )
    assert "item_stop_reason" not in [name for name, _ in response_columns(fixed)]
    assert "- Redundancy: fixed: 2 answers per item" in datasheet(fixed)


def test_the_cost_is_a_range_with_the_expected_value_and_the_saving(researcher):
    from annotate.quality.redundancy import cost_range

    study = adaptive_study(researcher, n=4)  # 2 .. 4 answers per item
    fresh = cost_range(study, 0.5)
    assert fresh == {
        "places_min": 8, "places_max": 16, "min": 4.0, "max": 8.0, "expected": 6.0, "expected_from": "halfway",
        "saved": 0.0,
    }  # fmt: skip
    for i in range(2):
        answer(study, make_worker(f"c{i}"), "positive")
    stopped = cost_range(study, 0.5)
    assert stopped is not None
    assert stopped["expected"] == 4.0 and stopped["expected_from"] == "answers per stopped item so far"
    assert stopped["saved"] == 1.0  # one item stopped at 2 answers instead of 4: 2 × 0.5


def test_a_researcher_excluding_a_worker_reopens_the_items_their_answers_stopped(researcher, client):
    from django.urls import reverse

    study = adaptive_study(researcher, n=1)
    item = Item.objects.get(study=study)
    w1, w2 = make_worker("r1"), make_worker("r2")
    answer(study, w1, "positive")
    answer(study, w2, "positive")
    item.refresh_from_db()
    assert item.stop_reason.startswith("label_share")
    client.force_login(researcher)
    url = reverse("quality-worker", kwargs={"uid": study.uid, "worker_id": w2.pk, "action": "exclude"})
    assert client.post(url).status_code == 302
    item.refresh_from_db()
    assert item.stop_reason == "" and item.responses_needed == 3
    client.post(reverse("quality-worker", kwargs={"uid": study.uid, "worker_id": w2.pk, "action": "include"}))
    item.refresh_from_db()
    assert item.stop_reason.startswith("label_share 1.000 >= 0.9 at 2")


def test_a_sentence_rating_study_made_on_its_form_stops_items_whose_ratings_agree(researcher, client):
    """The create form carries the policy; ci_width over the ratings: two equal ratings stop an item at its
    minimum, two far apart ask for more."""
    from django.urls import reverse

    from tests.annotate.test_study_management import page_text, rating_dataset

    dataset = rating_dataset(researcher)
    client.force_login(researcher)
    url = reverse("study-create") + "?kind=sentence_rating"
    assert "Adaptive: stopping rule" in client.get(url).content.decode()
    form = {
        "kind": "sentence_rating", "name": "ratings", "dataset": dataset.pk, "aspects": "overall",
        "rating_max": 5, "gold_tolerance": 1, "min_judges": 3, "annotators_per_item": 3, "time_limit_min": 10,
        "provider": "local", "redundancy": "adaptive", "redundancy_min": 2, "redundancy_max": 4,
        "redundancy_rule": "map_agreement", "redundancy_threshold": 1.5,
    }  # fmt: skip
    bad = page_text(client.post(url, form))
    assert "is not a rule of this kind; use one of label_share, label_posterior, ci_width" in bad
    assert not Study.objects.exists()
    assert client.post(url, {**form, "redundancy_rule": "ci_width"}).status_code == 302
    study = Study.objects.get()
    assert study.config["redundancy"] == {
        "mode": "adaptive", "min": 2, "max": 4, "rule": "ci_width", "threshold": 1.5,
    }  # fmt: skip
    assert study.annotators_per_item == 4
    start_study(study)
    items = list(Item.objects.filter(study=study).order_by("position", "id"))
    assert {i.responses_needed for i in items} == {2}
    ratings = {items[0].pk: [4, 4], items[1].pk: [1, 5]}
    for n in range(2):
        worker = make_worker(f"rater{n}")
        for _ in items[:2]:
            a = next_assignment(study, worker)
            submit(a.uid, {worker.pk}, uuid.uuid4(), {"rating": ratings[a.item_id][n]}, {"read_ms": 3000})
    items[0].refresh_from_db()
    items[1].refresh_from_db()
    assert items[0].stop_reason.startswith("ci_width 0.000 <= 1.5 at 2")
    assert items[1].stop_reason == "" and items[1].responses_needed == 3


def test_forced_choice_answers_agree_on_the_option_whatever_the_confidence():
    from annotate.tasks import get_kind

    kind = get_kind("justify")
    sure, unsure = {"choice": "A", "confident": True}, {"choice": "A", "confident": False}
    assert kind.agreement_value(sure) != kind.agreement_value(unsure)
    assert kind.stop_answer(sure) == kind.stop_answer(unsure) == {"label": "A"}
    assert "label_share" in kind.stopping_rules and "map_agreement" not in kind.stopping_rules


def test_the_publish_page_shows_the_places_and_cost_as_a_range(researcher, client):
    import re

    from tests.annotate.crowd_helpers import MTURK_CONFIG

    dataset = make_dataset(researcher, n=2, name="paid")
    study = create_study(
        researcher,
        {
            "name": "paid", "dataset": dataset.pk, "kind": "highlight", "config": {"redundancy": ADAPTIVE},
            "provider": "mturk", "provider_config": dict(MTURK_CONFIG),
        },
    )  # fmt: skip
    start_study(study)
    client.force_login(researcher)
    shown = " ".join(
        re.sub(r"<[^>]+>", " ", client.get(f"/studies/{study.uid}/crowd/").content.decode()).split()
    )
    assert "6 × 0.50 USD" in shown and "3.60 USD" in shown  # the platform's places, 0.60 an answer with fees
    assert "Places the policy needs 4 … 8" in shown  # 2 items × 2 .. 4 answers
    assert "2.4 … 4.8 USD, expected 3.6 (halfway)" in shown


def test_a_provisional_answer_stops_nothing_until_the_platform_verifies_it(researcher):
    from annotate.handout.hooks import on_verification_changed
    from annotate.handout.workers import Seat

    study = adaptive_study(researcher, n=1)
    item = Item.objects.get(study=study)
    answer(study, make_worker("v1"), "positive")
    unconfirmed = make_worker("u1", provider="mturk")
    a = next_assignment(study, unconfirmed, ref="unit-1", provisional=True)
    assert a is not None and a.item_id == item.pk
    ans, timings = good_answer(a.item, "positive")
    submit(a.uid, {str(study.uid): Seat(unconfirmed.pk, "unit-1", False)}, uuid.uuid4(), ans, timings)
    item.refresh_from_db()
    # two answers agree, but one waits for the platform: the item does not stop
    assert item.stop_reason == "" and item.responses_done == item.responses_needed == 2
    # a confirmed worker still gets a place (an unconfirmed holder keeps nobody out), and the two verified
    # answers decide
    assert answer(study, make_worker("v2"), "positive") == item.pk
    item.refresh_from_db()
    assert item.responses_done == 3 and item.stop_reason.startswith("label_share 1.000 >= 0.9 at 2 answers")
    Response.objects.filter(worker=unconfirmed).update(verification=Response.Verification.VERIFIED)
    on_verification_changed(study, [unconfirmed.pk])
    item.refresh_from_db()
    assert item.stop_reason.startswith("label_share 1.000 >= 0.9 at 3 answers")


def test_a_workers_q_counts_only_the_items_they_will_be_given(researcher):
    """ "Item i of q" in an adaptive study: a newcomer's q leaves out the items that stopped before they came
    (two of three here); a worker keeps the items they answered in it; a fixed study's q is every item, and
    ``max_items_per_worker`` still caps it."""
    from annotate.handout.assignment import next_with_progress, worker_progress
    from annotate.handout.assignment import worker_share as share

    study = adaptive_study(researcher)
    first, second, newcomer = make_worker("q1"), make_worker("q2"), make_worker("q3")
    assert worker_progress(study, newcomer.pk) == {"done": 0, "total": 3}
    for label in ("positive", "positive", "positive"):
        answer(study, first, label)
    for label in ("positive", "positive", "negative"):
        answer(study, second, label)
    stopped = Item.objects.filter(study=study).exclude(stop_reason="").count()
    assert stopped == 2
    assert worker_progress(study, first.pk) == {"done": 3, "total": 3}
    assert worker_progress(study, newcomer.pk) == {"done": 0, "total": 1}
    assignment, progress = next_with_progress(study, newcomer.pk)
    assert assignment is not None and progress == {"done": 0, "total": 1}
    assert worker_progress(study, newcomer.pk) == {"done": 0, "total": 1}  # the one they hold
    again, progress = next_with_progress(study, newcomer.pk)  # asked again: the held one, and the same q
    assert again.pk == assignment.pk and progress == {"done": 0, "total": 1}
    ans, timings = good_answer(assignment.item, "negative")
    submit(assignment.uid, {newcomer.pk}, uuid.uuid4(), ans, timings)
    assert worker_progress(study, newcomer.pk) == {"done": 1, "total": 1}

    fixed = create_study(researcher, {"name": "fixed", "dataset": study.dataset_id, "kind": "highlight",
                                      "config": {}, "annotators_per_item": 2})  # fmt: skip
    start_study(fixed)
    for worker in (first, second):
        for _ in range(3):
            answer(fixed, worker, "positive")
    assert worker_progress(fixed, newcomer.pk) == {"done": 0, "total": 3} and share(fixed) == 3
    capped = adaptive_study(researcher, name="capped")
    capped.config["max_items_per_worker"] = 2
    capped.save(update_fields=["config"])
    assert worker_progress(capped, newcomer.pk) == {"done": 0, "total": 2}


def test_a_forced_choice_workers_q_counts_texts_still_collecting(researcher):
    """One question per text per worker: q counts the texts with a question still collecting answers; the
    sibling question of a text the worker holds is not theirs, nor is a text whose questions all stopped."""
    from annotate.handout.assignment import next_with_progress, worker_progress
    from tests.annotate.kinds.forced_choice.test_generation import justify_rows
    from tests.annotate.kinds.forced_choice.test_generation import make_study as make_fc_study

    dataset, _, run, _ = justify_rows(researcher)
    study = make_fc_study(researcher, dataset, "justify", {"model_run": run.pk, "n_texts": 2}, annotators=3)
    study.config = {**study.config, "redundancy": {**ADAPTIVE, "max": 3}}
    study.save(update_fields=["config"])
    start_study(study)
    items = Item.objects.filter(study=study)
    assert items.count() == 4 and len({i.document_id for i in items}) == 2  # two texts, two methods each
    holder, newcomer = make_worker("fc-holder"), make_worker("fc-new")
    assert worker_progress(study, newcomer.pk) == {"done": 0, "total": 2}
    held, progress = next_with_progress(study, holder.pk)
    assert held is not None and progress == {"done": 0, "total": 2}  # the held text and the other one
    held_text = Item.objects.get(pk=held.item_id).document_id
    stopped_text = next(i.document_id for i in items if i.document_id != held_text)
    Item.objects.filter(study=study, document_id=stopped_text).update(stop_reason="label_share 1.000 >= 0.9")
    assert worker_progress(study, holder.pk) == {"done": 0, "total": 1}
    assert worker_progress(study, newcomer.pk) == {"done": 0, "total": 1}
    Item.objects.filter(pk=held.item_id).update(stop_reason="label_share 1.000 >= 0.9")
    assert worker_progress(study, newcomer.pk) == {"done": 0, "total": 1}  # the held text's other method
    assert worker_progress(study, holder.pk) == {"done": 0, "total": 1}  # they still hold theirs
