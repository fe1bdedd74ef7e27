"""Gold questions and worker reliability: grading and trust, exclusion and blocking, gold review,
aggregation (majority vote, Dawid-Skene, trust-weighted confidence), behaviour signals, gold mixing.
The trust arithmetic itself is the engine's (tests/engine/test_metrics_crowd.py)."""

from __future__ import annotations

import math
import uuid

import boto3
import numpy as np
import pandas as pd
import pytest
from botocore.stub import ANY, Stubber

from annotate.crowd import blocks
from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base.retry import Backoff
from annotate.crowd.providers.mturk import client as mturk_client
from annotate.handout.assignment import next_assignment
from annotate.handout.hooks import on_response_stored
from annotate.handout.submission import submit
from annotate.models import GoldReview, Item, QualityPolicy, Response, WorkerTrust
from annotate.quality import aggregation, exclusion, gold_mixing, gold_review, grading, report, signals
from annotate.quality.policy import policy_for
from tests.annotate.conftest import make_worker
from tests.annotate.crowd_helpers import MTURK_CONFIG, answer, answer_of, crowd_study, golds, ordinary


def wilson_by_formula(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


# --- grading, exclusion, blocking -------------------------------------------------------------------


@pytest.fixture
def study(researcher):
    return crowd_study(researcher, n=12, gold_every=2, annotators_per_item=3)


def test_refresh_trust_counts_graded_golds_only(study):
    good, bad = make_worker("good"), make_worker("bad")
    for i, gold in enumerate(golds(study)):
        answer(study, good, gold, correct=i != 0)
        answer(study, bad, gold, correct=i == 0)
    answer(study, bad, ordinary(study)[0])
    changes = grading.refresh_trust(study)
    assert {(c.worker_id, c.after) for c in changes} == {(good.pk, "trusted"), (bad.pk, "excluded")}
    row = WorkerTrust.objects.get(study=study, worker=bad)
    assert (row.golds_seen, row.golds_passed) == (6, 1)
    assert row.trust == pytest.approx(1 / 6)
    assert row.trust_low == pytest.approx(wilson_by_formula(1, 6, 1.959963984540054)[0])
    assert grading.refresh_trust(study) == []  # nothing changed


def test_worker_below_threshold_is_excluded_and_blocked_on_mturk(study, settings):
    """A worker under the threshold leaves the results, gets no more items here, and MTurk's trust
    qualification drops to their trust (x100), which is below the HIT type's requirement."""
    settings.MTURK_SANDBOX = True
    study.provider, study.provider_config = "mturk", dict(MTURK_CONFIG)
    study.save()
    QualityPolicy.objects.create(study=study, block_mode="qualification", min_golds=4)
    bad, good = make_worker("BADWORKER1", "mturk"), make_worker("GOODWORKER1", "mturk")
    for gold in golds(study)[:5]:
        answer(study, bad, gold, correct=False)
        answer(study, good, gold, correct=True)
    first = ordinary(study)[0]
    answer(study, bad, first, correct=True)
    answer(study, good, first, correct=True)

    client = boto3.client("mturk", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
    provider = get_provider("mturk")
    provider.use_client(mturk_client.MTurkClient(client, backoff=Backoff(attempts=2), sleep=lambda s: None))
    query = {
        "Query": "hatlab gold trust",
        "MustBeRequestable": False,
        "MustBeOwnedByCaller": True,
        "MaxResults": 100,
    }
    listing = {
        "NumResults": 1,
        "QualificationTypes": [
            {
                "QualificationTypeId": "QTRUST",
                "Name": "hatlab gold trust",
                "QualificationTypeStatus": "Active",
            }
        ],
    }
    try:
        with Stubber(client) as stub:
            for worker_id, score in (("BADWORKER1", 0), ("GOODWORKER1", 100)):
                stub.add_response("list_qualification_types", listing, query)
                stub.add_response(
                    "associate_qualification_with_worker",
                    {},
                    {
                        "QualificationTypeId": "QTRUST",
                        "WorkerId": worker_id,
                        "IntegerValue": score,
                        "SendNotification": False,
                    },  # fmt: skip
                )
            summary = blocks.apply_quality(study)
            stub.assert_no_pending_responses()
            # Running again mirrors nothing twice (the Stubber has no more replies queued).
            again = blocks.apply_quality(study)
    finally:
        provider.use_client(None)
    assert summary.blocked == [bad.pk] and not summary.errors
    assert sorted(summary.mirrored) == sorted([bad.pk, good.pk])
    assert again.mirrored == [] and again.blocked == []
    assert exclusion.is_blocked(study, bad.pk)
    assert WorkerTrust.objects.get(study=study, worker=bad).blocked
    assert exclusion.excluded_worker_ids(study) == {bad.pk}
    labels = aggregation.label_frame(study)
    assert set(labels["worker"]) == {good.pk}
    with pytest.raises(Exception, match="blocked"):
        next_assignment(study, bad)


def test_worker_is_blocked_with_a_platform_block(study):
    study.provider, study.provider_config = "mturk", dict(MTURK_CONFIG)
    study.save()
    QualityPolicy.objects.create(study=study, block_mode="platform", min_golds=3)
    bad = make_worker("BADWORKER2", "mturk")
    for gold in golds(study)[:3]:
        answer(study, bad, gold, correct=False)
    client = boto3.client("mturk", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
    provider = get_provider("mturk")
    provider.use_client(mturk_client.MTurkClient(client, sleep=lambda s: None))
    try:
        with Stubber(client) as stub:
            stub.add_response("create_worker_block", {}, {"WorkerId": "BADWORKER2", "Reason": ANY})
            summary = blocks.apply_quality(study)
            stub.assert_no_pending_responses()
            # An admin unblocks: the platform block is deleted and the trust qualification restored.
            stub.add_response(
                "list_qualification_types",
                {"NumResults": 1, "QualificationTypes": [
                    {"QualificationTypeId": "Q1", "Name": "hatlab gold trust", "QualificationTypeStatus": "Active"}]},
                {"Query": "hatlab gold trust", "MustBeRequestable": False, "MustBeOwnedByCaller": True, "MaxResults": 100},
            )  # fmt: skip
            stub.add_response(
                "associate_qualification_with_worker",
                {},
                {
                    "QualificationTypeId": "Q1",
                    "WorkerId": "BADWORKER2",
                    "IntegerValue": 100,
                    "SendNotification": False,
                },
            )
            stub.add_response("delete_worker_block", {}, {"WorkerId": "BADWORKER2", "Reason": ANY})
            assert blocks.unblock(study, bad) == []
            stub.assert_no_pending_responses()
            # The admin's choice stands: the next quality run does not block them again.
            blocks.apply_quality(study)
    finally:
        provider.use_client(None)
    assert summary.blocked == [bad.pk]
    assert not exclusion.is_blocked(study, bad.pk)


def test_no_blocking_policy_only_excludes(study):
    bad = make_worker("bad")
    for gold in golds(study)[:4]:
        answer(study, bad, gold, correct=False)
    summary = blocks.apply_quality(study)
    assert summary.blocked == [] and not exclusion.is_blocked(study, bad.pk)
    assert exclusion.excluded_worker_ids(study) == {bad.pk}


def test_submission_hook_blocks_locally_at_once(study):
    QualityPolicy.objects.create(study=study, block_mode="platform", min_golds=3)
    worker = make_worker("w")
    responses = [answer(study, worker, gold, correct=False) for gold in golds(study)[:3]]
    summary = on_response_stored(Response.objects.select_related("study").get(pk=responses[-1].pk))
    assert summary.blocked == [worker.pk]
    assert exclusion.is_blocked(study, worker.pk)
    assert on_response_stored(answer(study, make_worker("x"), ordinary(study)[0])).blocked == []


def test_submission_hook_touches_trust_only_for_a_verified_gold_answer(study, django_assert_num_queries):
    """Only a graded gold answer that is verified moves trust: an ordinary answer (verified or not) and a
    provisional gold answer cost the hook no query; the verified gold answer refreshes and blocks."""
    QualityPolicy.objects.create(study=study, block_mode="platform", min_golds=1)
    worker = make_worker("w")
    plain = answer(study, worker, ordinary(study)[0])
    provisional = answer(study, worker, golds(study)[0], correct=False)
    Response.objects.filter(pk=provisional.pk).update(verification=Response.Verification.PROVISIONAL)
    plain, provisional = (Response.objects.select_related("study").get(pk=r.pk) for r in (plain, provisional))
    assert plain.gold_passed is None and plain.verification == Response.Verification.VERIFIED
    assert provisional.gold_passed is False
    with django_assert_num_queries(0):
        assert on_response_stored(plain).blocked == []
        assert on_response_stored(provisional).blocked == []
    assert not exclusion.is_blocked(study, worker.pk)
    Response.objects.filter(pk=provisional.pk).update(verification=Response.Verification.VERIFIED)
    verified = Response.objects.select_related("study").get(pk=provisional.pk)
    assert on_response_stored(verified).blocked == [worker.pk]


# --- gold review ------------------------------------------------------------------------------------


def test_a_gold_most_trusted_workers_miss_is_flagged_then_fixed(study):
    """Six careful workers pass every gold but one; that one is flagged. Fixing its answer re-grades
    their answers, so their trust rises and the flag clears."""
    policy = policy_for(study)
    policy.gold_flag_min_trusted, policy.min_golds = 5, 4
    policy.save()
    items = golds(study)
    suspect = items[0]
    workers = [make_worker(f"careful{i}") for i in range(6)]
    for worker in workers:
        answer(study, worker, suspect, correct=False)  # they all give the same "wrong" answer
        for gold in items[1:]:
            answer(study, worker, gold, correct=True)
    sloppy = make_worker("sloppy")
    answer(study, sloppy, suspect, correct=True)
    grading.refresh_trust(study)
    reviews = {r.item_id: r for r in gold_review.review_golds(study)}
    assert reviews[suspect.pk].flagged
    assert (reviews[suspect.pk].seen, reviews[suspect.pk].missed) == (7, 6)
    assert (reviews[suspect.pk].trusted_seen, reviews[suspect.pk].trusted_missed) == (6, 6)
    assert not any(reviews[g.pk].flagged for g in items[1:])

    before = WorkerTrust.objects.get(study=study, worker=workers[0]).trust
    wrong = Response.objects.filter(item=suspect, worker=workers[0]).get().answer
    gold_review.fix_gold(Item.objects.get(pk=suspect.pk), wrong, note="the careful workers were right")
    after = WorkerTrust.objects.get(study=study, worker=workers[0]).trust
    assert before == pytest.approx(5 / 6) and after == pytest.approx(1.0)
    assert WorkerTrust.objects.get(study=study, worker=sloppy).golds_passed == 0
    assert not {r.item_id: r for r in gold_review.review_golds(study)}[suspect.pk].flagged
    assert GoldReview.objects.get(item=suspect).resolution == "fixed"


def test_fix_gold_validates_the_answer_and_retire_stops_counting(study):
    gold = golds(study)[0]
    with pytest.raises(Exception) as info:
        gold_review.fix_gold(gold, {"label": "maybe", "map": [1]})
    assert "gold" in info.value.detail
    worker = make_worker("w")
    answer(study, worker, gold, correct=False)
    answer(study, worker, golds(study)[1], correct=True)
    grading.refresh_trust(study)
    assert WorkerTrust.objects.get(worker=worker).golds_seen == 2
    gold_review.retire_gold(Item.objects.get(pk=gold.pk))
    row = WorkerTrust.objects.get(worker=worker)
    assert (row.golds_seen, row.golds_passed) == (1, 1)
    assert Item.objects.get(pk=gold.pk).retired
    assert next_assignment(study, make_worker("fresh"), gold=True).item_id != gold.pk


def test_kept_gold_is_not_flagged_again(study):
    policy = policy_for(study)
    policy.gold_flag_min_trusted, policy.min_golds = 2, 2
    policy.save()
    items = golds(study)
    for i in range(3):
        worker = make_worker(f"w{i}")
        answer(study, worker, items[0], correct=False)
        for gold in items[1:4]:
            answer(study, worker, gold, correct=True)
    grading.refresh_trust(study)
    assert gold_review.review_golds(study)[0].flagged
    gold_review.keep_gold(items[0], "checked, the answer is right")
    assert not gold_review.review_golds(study)[0].flagged


def test_a_gold_can_be_flagged_when_the_study_has_no_more_golds_than_min_golds(researcher):
    """Three golds, a minimum of three: three careful workers all miss the first (its answer is wrong)
    and pass the other two, which drops them to 2 of 3 (excluded). Judged on the other golds they are
    trusted (both of the two there are to see, capped as grading caps ``min_golds``), so the wrong gold
    is flagged; a worker excluded for risk judges no gold."""
    study = crowd_study(researcher, n=6, gold_every=2, annotators_per_item=4)
    items = golds(study)
    assert len(items) == 3
    policy = policy_for(study)
    policy.min_golds, policy.gold_flag_min_trusted = 3, 2
    policy.save()
    careful = [make_worker(f"careful{i}") for i in range(3)]
    for worker in careful:
        answer(study, worker, items[0], correct=False)
        for gold in items[1:]:
            answer(study, worker, gold, correct=True)
    grading.refresh_trust(study)
    assert set(WorkerTrust.objects.filter(study=study).values_list("status", flat=True)) == {"excluded"}
    reviews = gold_review.review_golds(study)
    assert (reviews[0].trusted_seen, reviews[0].trusted_missed, reviews[0].flagged) == (3, 3, True)
    assert not reviews[1].flagged and reviews[1].trusted_seen == 0  # 1 of the 2 others: under 0.70

    exclusion.set_risk_exclusion(study, careful[0], exclude=True)
    exclusion.set_risk_exclusion(study, careful[1], exclude=True)
    reviews = gold_review.review_golds(study)
    assert (reviews[0].trusted_seen, reviews[0].flagged) == (1, False)
    exclusion.set_risk_exclusion(study, careful[1], exclude=False)  # kept in by the researcher
    assert gold_review.review_golds(study)[0].trusted_seen == 2


# --- aggregation ------------------------------------------------------------------------------------


def test_majority_dawid_skene_and_trust_weighted_confidence():
    frame = pd.DataFrame(
        {
            "task": [1, 1, 1, 2, 2, 2, 3, 3, 3],
            "worker": ["a", "b", "c"] * 3,
            "label": ["pos", "pos", "neg", "neg", "neg", "pos", "pos", "pos", "pos"],
        }
    )
    weights = pd.Series({"a": 0.9, "b": 0.6, "c": 0.8})
    table = aggregation.aggregate(frame, weights)
    assert list(table["majority"]) == ["pos", "neg", "pos"]
    assert list(table["responses"]) == [3, 3, 3]
    assert table.loc[1, "confidence"] == pytest.approx((0.9 + 0.6) / 2.3)
    assert table.loc[2, "confidence"] == pytest.approx((0.9 + 0.6) / 2.3)
    assert table.loc[3, "confidence"] == pytest.approx(1.0)
    assert list(table["ds_label"]) == ["pos", "neg", "pos"]
    assert ((table["ds_probability"] > 0.5) & (table["ds_probability"] <= 1)).all()
    assert aggregation.aggregate(frame.iloc[:0], weights).empty


def test_dawid_skene_outvotes_a_reliable_minority_less_than_majority():
    # Worker "e" always disagrees with four consistent workers: DS learns e is unreliable.
    rows = []
    for task in range(8):
        truth = "pos" if task % 2 else "neg"
        for worker in "abcd":
            rows.append((task, worker, truth))
        rows.append((task, "e", "neg" if truth == "pos" else "pos"))
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    table = aggregation.aggregate(frame, pd.Series(dict.fromkeys("abcde", 0.8)))
    assert list(table["ds_label"]) == list(table["majority"])
    assert (table["ds_probability"] > 0.99).all()


def test_aggregation_rows_of_a_study(study):
    workers = [make_worker(f"w{i}") for i in range(3)]
    item = ordinary(study)[0]
    answer(study, workers[0], item, correct=True)
    answer(study, workers[1], item, correct=True)
    answer(study, workers[2], item, correct=False)
    for i, worker in enumerate(workers):
        for gold in golds(study)[:4]:
            answer(study, worker, gold, correct=i < 2)
    grading.refresh_trust(study)
    rows = {r["item"]: r for r in aggregation.aggregation_rows(study)}
    assert set(rows) == {i.pk for i in ordinary(study)}
    row = rows[item.pk]
    assert row["majority"] == item.secret["label"] and row["responses"] == 2  # worker 2 is excluded
    assert row["confidence"] == 1.0
    assert rows[ordinary(study)[1].pk]["responses"] == 0


def test_pending_answers_wait_until_the_worker_qualifies(study):
    """Pappas & Popescu-Belis 2016 §3: only judges at >= 70 % on the golds count. A worker at 2 of 3
    golds right (67 %, but under min_golds 4) is pending: their answers wait, then count once a fourth
    gold makes them trusted at 3 of 4; a fourth gold missed (2 of 4) excludes them for good."""
    steady, newcomer = make_worker("steady"), make_worker("newcomer")
    # a negative review that the trusted worker calls "positive": a tie broken by label order alone
    # would go to "negative"
    item = next(i for i in ordinary(study) if i.secret["label"] == "negative")
    answer(study, steady, item, correct=False)
    answer(study, newcomer, item, correct=True)
    for gold in golds(study)[:4]:
        answer(study, steady, gold, correct=True)
    for i, gold in enumerate(golds(study)[:3]):
        answer(study, newcomer, gold, correct=i != 0)
    grading.refresh_trust(study)
    assert WorkerTrust.objects.get(study=study, worker=newcomer).status == "pending"
    assert newcomer.pk in exclusion.excluded_worker_ids(study)
    assert exclusion.answer_weights(study, [steady.pk, newcomer.pk]) == {steady.pk: 1.0, newcomer.pk: 0.0}
    row = next(r for r in aggregation.aggregation_rows(study) if r["item"] == item.pk)
    assert (row["responses"], row["majority"], row["confidence"]) == (1, "positive", 1.0)

    fourth = answer(study, newcomer, golds(study)[3], correct=True)
    grading.refresh_trust(study)
    assert exclusion.answer_weights(study, [newcomer.pk]) == {newcomer.pk: 0.75}
    row = next(r for r in aggregation.aggregation_rows(study) if r["item"] == item.pk)
    # one answer each way: a tie in answers goes to the label with more trust behind it (1.0 > 0.75)
    assert (row["responses"], row["majority"]) == (2, "positive")
    assert row["confidence"] == pytest.approx(1.0 / 1.75, abs=1e-4)

    Response.objects.filter(pk=fourth.pk).update(gold_passed=False)
    grading.refresh_trust(study)
    assert WorkerTrust.objects.get(study=study, worker=newcomer).status == "excluded"
    assert newcomer.pk in exclusion.excluded_worker_ids(study)


def test_a_study_without_golds_counts_everyone_at_weight_one(researcher):
    plain = crowd_study(researcher, n=4, gold_every=0, annotators_per_item=3)
    assert not golds(plain)
    a, b = make_worker("a"), make_worker("b")
    item = ordinary(plain)[0]
    answer(plain, a, item, correct=True)
    answer(plain, b, item, correct=False)
    grading.refresh_trust(plain)
    assert exclusion.excluded_worker_ids(plain) == set()
    assert exclusion.answer_weights(plain, [a.pk, b.pk]) == {a.pk: 1.0, b.pk: 1.0}
    row = next(r for r in aggregation.aggregation_rows(plain) if r["item"] == item.pk)
    assert row["responses"] == 2 and row["confidence"] == 0.5


def test_fewer_golds_than_min_golds_lets_workers_qualify_on_all_of_them(researcher):
    few = crowd_study(researcher, n=4, gold_every=2, annotators_per_item=3)
    assert len(golds(few)) == 2 < policy_for(few).min_golds
    worker = make_worker("thorough")
    for gold in golds(few):
        answer(few, worker, gold, correct=True)
    grading.refresh_trust(few)
    assert WorkerTrust.objects.get(study=few, worker=worker).status == "trusted"


# --- behaviour signals ------------------------------------------------------------------------------


def test_behaviour_signals(study):
    worker, rusher = make_worker("steady"), make_worker("rusher")
    for item in ordinary(study)[:4]:
        answer(study, worker, item, answer_ms=30000, signals={"blurs": 1, "hides": 2, "pastes": 0})
    fast = answer(study, rusher, ordinary(study)[0], answer_ms=10, signals={"pastes": 3})
    fast.read_ms = 10
    fast.save()
    rows = {r["response"]: r for r in signals.response_signals(study)}
    assert rows[fast.pk]["fast"] and rows[fast.pk]["pastes"] == 3 and rows[fast.pk]["time_ms"] == 20
    assert sum(r["fast"] for r in rows.values()) == 1
    summary = signals.worker_signals(study)
    assert summary[worker.pk]["focus_changes"] == 12 and summary[worker.pk]["median_time_ms"] == 35000
    assert summary[rusher.pk]["fast"] == 1
    mask, median = signals.fast_mask(np.array([10.0, np.nan, 100.0, 110.0]), 0.33)
    assert list(mask) == [True, False, False, False] and median == 100.0


# --- gold mixing ------------------------------------------------------------------------------------


def test_schedule_spreads_golds_at_the_rate():
    for rate in (0.1, 0.25, 0.5):
        for phase in (0.0, 0.37, 0.99):
            golds_taken = 0
            picks = []
            for taken in range(40):
                gold = gold_mixing.wants_gold(rate, taken, golds_taken, phase)
                picks.append(gold)
                golds_taken += gold
            assert abs(sum(picks) - rate * 40) <= 1
    assert not gold_mixing.wants_gold(0.0, 5, 0, 0.9) and gold_mixing.wants_gold(1.0, 5, 5, 0.0)


def test_golds_are_mixed_into_the_queue_and_look_ordinary(researcher):
    study = crowd_study(researcher, n=20, gold_every=4, annotators_per_item=2)
    assert gold_mixing.prepare_gold_items(study) == 5
    study.config["gold_rate"] = 0.25
    study.save(update_fields=["config"])
    worker = make_worker("w")
    timings = {"read_ms": 900, "answer_ms": 400, "label_at_ms": 900, "first_highlight_at_ms": 1000}
    kinds = []
    while (assignment := next_assignment(study, worker.pk)) is not None:
        item = Item.objects.select_related("study").get(pk=assignment.item_id)
        kinds.append(item.is_gold)
        assert set(assignment.item.payload) == {"words", "breaks"}  # nothing tells a gold apart
        submit(assignment.uid, {worker.pk}, uuid.uuid4(), answer_of(item), timings)
    assert len(kinds) == 20  # every ordinary item, and every gold once
    assert sum(kinds) == 5
    first_half = kinds[:8]
    assert 1 <= sum(first_half) <= 3  # golds are spread through the queue, not bunched at the end
    phases = {round(gold_mixing.worker_phase(study, w), 6) for w in range(1, 6)}
    assert len(phases) == 5


# --- the admin's dashboard and API ------------------------------------------------------------------


@pytest.fixture
def graded_study(study):
    """Two workers over the golds: one careful, one not; a gold everyone misses; an ordinary answer each."""
    careful, sloppy = make_worker("careful"), make_worker("sloppy")
    items = golds(study)
    for gold in items[1:]:
        answer(study, careful, gold, correct=True, signals={"blurs": 1})
        answer(study, sloppy, gold, correct=False, signals={"pastes": 2})
    answer(study, careful, items[0], correct=False)
    answer(study, sloppy, items[0], correct=False)
    answer(study, careful, ordinary(study)[0])
    answer(study, sloppy, ordinary(study)[0], correct=False)
    return study, careful, sloppy


def test_dashboard_is_for_the_owner_and_admins(
    graded_study, researcher, other_researcher, admin_user, client
):
    study, careful, sloppy = graded_study
    url = f"/studies/{study.uid}/quality/"
    assert client.get(url).status_code == 302  # to the sign-in page
    client.force_login(other_researcher)
    assert client.get(url).status_code == 404  # another researcher's study
    client.force_login(researcher)
    owned = client.get(url)
    assert owned.status_code == 200 and careful.pseudonym_for(study.owner_id) in owned.content.decode()
    assert client.get(f"/api/crowd/studies/{study.uid}/quality/").status_code == 403
    client.force_login(admin_user)
    html = client.get(url).content.decode()
    assert careful.pseudonym_for(study.owner_id) in html and sloppy.pseudonym_for(study.owner_id) in html
    assert "excluded" in html and "trusted" in html
    data = client.get(f"/api/crowd/studies/{study.uid}/quality/").json()
    rows = {w["worker"]: w for w in data["workers"]}
    assert (
        rows[careful.pseudonym_for(study.owner_id)]["golds_passed"] == 5
        and rows[careful.pseudonym_for(study.owner_id)]["golds_seen"] == 6
    )
    assert (
        rows[careful.pseudonym_for(study.owner_id)]["trust_low"]
        < rows[careful.pseudonym_for(study.owner_id)]["trust"]
        < rows[careful.pseudonym_for(study.owner_id)]["trust_high"]
    )
    assert (
        rows[sloppy.pseudonym_for(study.owner_id)]["status"] == "excluded"
        and rows[sloppy.pseudonym_for(study.owner_id)]["pastes"] == 10
    )
    assert rows[careful.pseudonym_for(study.owner_id)]["focus_changes"] == 5
    assert [g["seen"] for g in data["golds"]] == [2] * 6


def test_dashboard_actions(graded_study, admin_user, client):
    study, careful, sloppy = graded_study
    client.force_login(admin_user)
    base = f"/studies/{study.uid}/quality/"
    client.post(f"{base}workers/{sloppy.pk}/block/")
    assert exclusion.is_blocked(study, sloppy.pk)
    client.post(f"{base}workers/{sloppy.pk}/unblock/")
    assert not exclusion.is_blocked(study, sloppy.pk)
    gold = golds(study)[0]
    client.post(f"{base}golds/{gold.pk}/retire/", {"note": "ambiguous text"})
    assert Item.objects.get(pk=gold.pk).retired
    assert WorkerTrust.objects.get(study=study, worker=careful).golds_seen == 5
    second = golds(study)[1]
    reply = client.post(f"{base}golds/{second.pk}/fix/", {"gold": "not json"}, follow=True)
    assert "could not be read. Change it in the gold editor" in reply.content.decode()
    wrong = client.post(f"{base}golds/{second.pk}/fix/", {"gold": '{"label": "meh", "map": []}'}, follow=True)
    text = wrong.content.decode()
    assert "The label must be one of" in text and "ErrorDetail" not in text
    bad = client.post(f"{base}policy/", {"trust_threshold": "2", "gold_rate": "0.2", "min_golds": "4"})
    assert "gold_rate" not in type(study).objects.get(pk=study.pk).config  # nothing saved
    assert bad.status_code == 400 and "trust_threshold" in bad.content.decode()
    form = {
        "gold_rate": "0.3", "trust_threshold": "0.8", "min_golds": "2", "confidence": "0.9",
        "excluded_action": "approve", "block_mode": "none", "review": "auto", "rejection_feedback": "x",
        "fast_ratio": "0.3", "gold_flag_min_trusted": "3", "gold_flag_miss_rate": "0.5",
        "max_wpm": "500", "risk_threshold": "0.6", "risk_action": "review",
    }  # fmt: skip
    assert client.post(f"{base}policy/", form).status_code == 302
    assert policy_for(type(study).objects.get(pk=study.pk)).trust_threshold == 0.8
    assert policy_for(type(study).objects.get(pk=study.pk)).max_wpm == 500
    assert type(study).objects.get(pk=study.pk).config["gold_rate"] == 0.3  # where the hand-out reads it
    assert all(g.responses_needed == gold_mixing.GOLD_CAPACITY for g in golds(study))
    assert "Golds make up 0.30 of each" in client.get(base).content.decode()
    assert client.post(f"{base}regrade/").status_code == 302
    csv_text = client.get(f"{base}aggregated.csv").content.decode()
    header, *lines = csv_text.strip().splitlines()
    assert header.split(",")[:4] == ["item", "document", "responses", "majority"]
    first = next(line for line in lines if line.startswith(f"{ordinary(study)[0].pk},"))
    assert f",1,{ordinary(study)[0].secret['label']},1.0," in first  # the excluded worker does not count
    assert client.get(f"{base}regrade/").status_code == 405


def test_quality_rows_and_the_worker_api_say_excluded_or_pending_as_results_do(study, admin_user, client):
    """``excluded`` in the quality rows and in the answer to a researcher's decision is the results' own
    verdict (:func:`annotate.quality.exclusion.standing`): a pending worker's answers wait, they are not
    excluded; a worker under the threshold, or excluded for risk, is."""
    policy = policy_for(study)
    policy.min_golds = 2
    policy.save()
    steady, newcomer, failing, zero = (make_worker(n) for n in ("steady", "newcomer", "failing", "zero"))
    for gold in golds(study)[:2]:
        answer(study, steady, gold, correct=True)
        answer(study, failing, gold, correct=False)
    answer(study, newcomer, golds(study)[0], correct=True)
    for worker in (steady, newcomer, failing):
        answer(study, worker, ordinary(study)[0])
    grading.refresh_trust(study)
    client.force_login(admin_user)
    rows = {w["id"]: w for w in client.get(f"/api/crowd/studies/{study.uid}/quality/").json()["workers"]}
    assert {w: (r["status"], r["excluded"]) for w, r in rows.items()} == {
        steady.pk: ("trusted", False),
        newcomer.pk: ("pending", False),
        failing.pk: ("excluded", True),
    }
    assert exclusion.standing(study, rows).excluded == {failing.pk}

    def decide(worker, action: str) -> dict:
        return client.post(f"/api/crowd/studies/{study.uid}/quality/workers/{worker.pk}/{action}/").json()

    assert decide(newcomer, "include") == {"worker": newcomer.pk, "excluded": False, "pending": True}
    assert decide(failing, "include") == {"worker": failing.pk, "excluded": True, "pending": False}
    assert decide(steady, "include") == {"worker": steady.pk, "excluded": False, "pending": False}
    assert decide(newcomer, "exclude") == {"worker": newcomer.pk, "excluded": True, "pending": False}
    assert {r["id"]: r["excluded"] for r in report.worker_rows(study)}[newcomer.pk]

    # a trust of 0 meets a threshold of 0, but weighs nothing: the results leave the answers out
    policy.trust_threshold = 0.0
    policy.save()
    for gold in golds(study)[:2]:
        answer(study, zero, gold, correct=False)
    answer(study, zero, ordinary(study)[0])
    grading.refresh_trust(study)
    row = next(r for r in report.worker_rows(study) if r["id"] == zero.pk)
    assert (row["status"], row["trust"], row["excluded"]) == ("trusted", 0.0, True)
    assert zero.pk in exclusion.excluded_worker_ids(study)
