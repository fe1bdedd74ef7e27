"""A study's plan before it starts (:mod:`annotate.studies.plan`): answers and workers needed under each
kind's share rules, time from measured answers, cost per platform with its fee rule, the warnings, and
the worker's "item i of q" and the study's "answers received of needed" that agree with it. Every number
here is worked out by hand in the comment beside it."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client

from annotate.crowd.completion import share_done
from annotate.crowd.publishing import crowd_state
from annotate.handout.assignment import next_with_progress, worker_progress
from annotate.kinds.highlight.demo import seed_demo as highlight_demo
from annotate.kinds.nli_pair.demo import seed_demo as nli_demo
from annotate.kinds.sentence_rating.demo import seed_demo as seed_rating_demo
from annotate.kinds.token_marking.demo import seed_demo as token_demo
from annotate.models import Assignment, Dataset, Document, Item, Response, Study
from annotate.quality.gold_mixing import GOLD_CAPACITY, prepare_gold_items
from annotate.studies.plan import Shape, plan_numbers, study_plan
from annotate.studies.progress import study_progress
from annotate.tasks import get_kind
from tests.annotate.conftest import make_dataset, make_study, make_worker
from tests.annotate.crowd_helpers import MTURK_CONFIG, answer
from tests.annotate.kinds.forced_choice.test_generation import make_run, other, predict
from tests.annotate.kinds.forced_choice.test_generation import make_study as fc_make_study
from tests.annotate.kinds.forced_choice.test_scoring import POS, study_with_items
from tests.annotate.kinds.forced_choice.test_scoring import answer as fc_answer
from tests.annotate.test_study_management import rating_dataset

METHODS = ("occ_1", "lrp", "gradcam", "deeplift")


def text_of(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


# --- the numbers, by hand ------------------------------------------------------------------------------


def test_forced_choice_four_texts_four_methods_three_answers_needs_twelve_workers():
    # 16 questions × 3 = 48 answers; one method per text: a worker answers at most 4 questions;
    # 48 / 4 = 12 workers. At 30 s an answer: 2 minutes a worker, 48 × 30 s = 24 minutes in all.
    plan = plan_numbers(Shape(items=16, golds=0, per_item=3, share=4), 30.0)
    assert (plan.answers, plan.per_worker, plan.workers) == (48, 4, 12)
    assert (plan.worker_minutes, plan.total_s) == (2.0, 1440.0)
    assert plan.warnings == ()


def test_golds_count_at_the_workers_per_item():
    # 6 items + 2 golds, 3 workers each: 24 answers, 6 of them to golds; a worker may answer all 8
    # items, so the 3 workers an item needs hold the 24 answers.
    plan = plan_numbers(Shape(items=6, golds=2, per_item=3, share=8), 60.0)
    assert (plan.answers, plan.gold_answers, plan.per_worker, plan.workers) == (24, 6, 8, 3)


def test_golds_open_to_every_worker_take_room_in_every_share():
    # 4 items a worker (the cap); both golds are in every share, so 2 ordinary items a worker:
    # 6 × 3 = 18 ordinary answers / 2 = 9 workers; they give 18 + 9 × 2 = 36 answers, 36 × 10 s.
    plan = plan_numbers(Shape(items=6, golds=2, per_item=3, share=8, cap=4, golds_to_all=True), 10.0)
    assert (plan.answers, plan.per_worker, plan.workers, plan.total_s) == (24, 4, 9, 360.0)


def test_the_cap_on_items_per_worker_raises_the_workers_needed():
    # 10 items × 3 = 30 answers, 2 a worker: 15 workers.
    plan = plan_numbers(Shape(items=10, golds=0, per_item=3, share=10, cap=2), 60.0)
    assert (plan.per_worker, plan.workers) == (2, 15)


def test_shares_full_of_golds_leave_no_room_and_say_so():
    plan = plan_numbers(Shape(items=6, golds=3, per_item=3, share=9, cap=3, golds_to_all=True), 10.0)
    assert plan.workers is None
    assert any("no share has room for an ordinary item" in w for w in plan.warnings)


def test_too_few_invites_and_places_are_warnings():
    # 8 items × 3 = 24 answers, all 8 to one worker: 3 workers; 2 invites and 2 places are too few.
    plan = plan_numbers(Shape(items=8, golds=0, per_item=3, share=8, invites=2), 60.0)
    assert plan.warnings == (
        "The plan needs 3 workers but only 2 invite links are made (not revoked): create 1 more in Access below, "
        "or turn on open enrollment.",
    )
    placed = plan_numbers(Shape(items=8, golds=0, per_item=3, share=8, places=2), 60.0)
    assert "publish 2 places but the plan needs 3 workers" in placed.warnings[0]


# --- per kind, from a study ------------------------------------------------------------------------------


def fc_study(owner, kind: str = "justify", texts: int = 4):
    questions = [(t, m, "correct", POS) for t in range(texts) for m in METHODS]
    study, items = study_with_items(owner, kind, questions, n_docs=texts)
    study.annotators_per_item = 3
    study.provider_config = {"open_enrollment": True}
    study.save()
    Item.objects.filter(study=study).update(responses_needed=3)
    return study, items


@pytest.mark.parametrize("kind", ["justify", "investigate", "reveal_model"])
def test_forced_choice_plan_follows_the_share_rule(researcher, kind):
    study, _ = fc_study(researcher, kind)
    plan = study_plan(study)
    assert (plan.answers, plan.per_worker, plan.workers) == (48, 4, 12)
    assert plan.shape.share_rule == "a worker answers one method per text"
    # 30 s an answer (the family's default: no stored answers), 4 answers a worker: 2 minutes.
    assert (plan.answer_s, plan.worker_minutes) == (30.0, 2.0)
    assert "default" in plan.answer_source
    study.config = {**study.config, "one_method_per_text_per_worker": False}
    study.save()
    assert (study_plan(study).per_worker, study_plan(study).workers) == (16, 3)


def test_highlight_plan_of_a_draft_builds_nothing(researcher):
    dataset = make_dataset(researcher, n=8, gold_every=2)  # documents 0, 2, 4, 6 carry golds
    study = make_study(researcher, dataset, start=False, annotators_per_item=3)
    plan = study_plan(study)
    # 4 items + 4 golds, × 3: 24 answers, 12 to golds; one worker may answer all 8: 3 workers.
    assert (plan.shape.items, plan.shape.golds, plan.answers, plan.gold_answers) == (4, 4, 24, 12)
    assert (plan.per_worker, plan.workers) == (8, 3)
    assert not Item.objects.filter(study=study).exists()  # the plan saved nothing
    assert plan.answer_s == get_kind("highlight").default_answer_s == 60.0
    # invite-only on the local crowd: 3 workers need 3 invites, none made yet
    assert any("only 0 invite links are made (not revoked): create 3 more" in w for w in plan.warnings)


def test_sentence_rating_threshold_above_the_workers_is_a_warning(researcher):
    (study,) = seed_rating_demo(researcher, 10)
    assert study.config["min_judges"] == 4 and study.annotators_per_item == 4
    assert get_kind("sentence_rating").plan_warnings(study) == []
    study.annotators_per_item = 3
    (warning,) = get_kind("sentence_rating").plan_warnings(study)
    assert "Minimum judges is 4 but each sentence gets 3 workers per item" in warning
    plan = study_plan(study)
    items = Item.objects.filter(study=study, retired=False)
    golds = items.filter(is_gold=True).count()
    assert plan.answers == sum(i.responses_needed for i in items.filter(is_gold=False)) + golds * 3
    assert warning in plan.warnings


def test_the_median_answer_time_is_measured_from_stored_answers(researcher):
    dataset = make_dataset(researcher, n=6)
    study = make_study(researcher, dataset, annotators_per_item=1)
    items = list(Item.objects.filter(study=study).order_by("position"))
    for i, item in enumerate(items[:5]):  # handed out 10, 20, 30, 40, 50 s before the answer came: 30 s
        response = answer(study, make_worker(f"w{i}"), item, answer_ms=1000)
        handed = response.created - timedelta(seconds=(i + 1) * 10)
        Assignment.objects.filter(pk=response.assignment_id).update(assigned_at=handed)
    plan = study_plan(study)
    assert plan.answer_s == 30.0 and plan.answer_source == "the median of 5 answers in this study"
    later = make_study(researcher, dataset, annotators_per_item=1, name="later")
    assert study_plan(later).answer_source == "the median of 5 answers in your earlier studies of this kind"


def test_costs_use_each_platforms_fee_rule(researcher):
    dataset = make_dataset(researcher, n=4)
    study = make_study(researcher, dataset, annotators_per_item=3, provider="mturk",
                       provider_config=dict(MTURK_CONFIG))  # fmt: skip
    plan = study_plan(study)
    costs = {c.platform: c for c in plan.costs}
    # 3 workers: MTurk at the study's reward 0.50, 20 % fee on HITs of 3: 1.50 + 0.30
    mturk = costs["mturk"].estimate
    assert (mturk.places, mturk.reward, mturk.rewards, mturk.fees, mturk.total) == (
        3, Decimal("0.50"), Decimal("1.50"), Decimal("0.30"), Decimal("1.80"))  # fmt: skip
    assert costs["mturk"].reward_source == "the reward in the study's crowd settings"
    # Prolific has no reward set: 12.00 an hour for 4 items × 60 s = 4 minutes: 0.80 a place,
    # 2.40 in rewards, 33.33 % fee: 0.80.
    prolific = costs["prolific"].estimate
    assert (prolific.reward, prolific.rewards, prolific.fees, prolific.currency) == (
        Decimal("0.80"), Decimal("2.40"), Decimal("0.80"), "GBP")  # fmt: skip
    assert "per hour of expected work" in costs["prolific"].reward_source


@pytest.mark.parametrize(
    ("kind", "seed", "expected"),
    [
        # 40 reviews, every 10th a gold: 36 + 4 golds × 3 = 120 answers; a worker may answer all 40:
        # 3 workers; 60 s (the default) × 40 = 40 minutes a worker, 120 × 60 s = 2 hours in all.
        ("highlight", highlight_demo, (36, 4, 3, 120, 40, 3, 40.0, 2.0)),
        # 8 pairs, the first a gold, 2 workers each: 16 answers; 8 a worker: 2 workers; 30 s × 8 = 4 min.
        ("nli_pair", nli_demo, (7, 1, 2, 16, 8, 2, 4.0, 0.1)),
        # 8 reviews, 2 of them golds (every 5th with marks), 3 each: 24 answers; 3 workers; 40 s × 8 = 5.3 min.
        ("token_marking", token_demo, (6, 2, 3, 24, 8, 3, 5.3, 0.3)),
    ],
)
def test_the_demo_studies_plans(researcher, kind, seed, expected):
    (study,) = seed(researcher, 40)
    plan = study_plan(study)
    assert study.kind == kind
    assert (plan.shape.items, plan.shape.golds, plan.shape.per_item, plan.answers, plan.per_worker,
            plan.workers, plan.worker_minutes, plan.total_hours) == expected  # fmt: skip
    assert plan.warnings == ()  # open to anyone with the link: no invites to count


# --- counts that add up --------------------------------------------------------------------------------


def test_answers_needed_on_a_platform_leave_the_gold_capacity_out(researcher):
    dataset = make_dataset(researcher, n=8, gold_every=4)  # 2 golds
    study = make_study(researcher, dataset, annotators_per_item=3, provider="mturk",
                       provider_config=dict(MTURK_CONFIG))  # fmt: skip
    prepare_gold_items(study)  # what publishing does: golds open to every worker
    assert Item.objects.filter(study=study, is_gold=True, responses_needed=GOLD_CAPACITY).count() == 2
    progress = study_progress(study)
    assert progress["responses_needed"] == 8 * 3 == study_plan(study).answers
    gold = Item.objects.filter(study=study, is_gold=True).first()
    for name in ("a", "b", "c"):
        answer(study, make_worker(name), gold)
    Item.objects.filter(pk=gold.pk).update(responses_done=3)
    assert study_progress(study)["items_done"] == 1  # a gold with its 3 answers is done


# --- the worker's q ------------------------------------------------------------------------------------


def test_a_forced_choice_worker_is_told_the_questions_they_will_get(researcher):
    study, _ = fc_study(researcher)
    worker = make_worker("fc")
    assignment, progress = next_with_progress(study, worker.pk)
    assert assignment is not None and progress == {"done": 0, "total": 4}
    assert worker_progress(study, worker.pk) == {"done": 0, "total": 4}


def test_a_forced_choice_worker_who_answered_one_question_per_text_has_done_their_share(researcher):
    study, items = fc_study(researcher)
    worker = make_worker("fc-all")
    by_text = {}
    for item in items:
        by_text.setdefault(item.document_id, item)
    for item in by_text.values():  # the 4 questions the share rule lets one worker have
        fc_answer(study, item, worker, POS, True)
    progress = worker_progress(study, worker.pk)
    assert progress == {"done": 4, "total": 4} and share_done(progress)
    assert next_with_progress(study, worker.pk)[0] is None  # and nothing more is handed out


# --- the pages -----------------------------------------------------------------------------------------


def test_study_page_shows_the_plan_before_start(researcher):
    study, _ = fc_study(researcher)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.DRAFT)
    client = Client()
    client.force_login(researcher)
    shown = text_of(client.get(f"/studies/{study.uid}/"))
    assert "Answers needed 48" in shown and "Workers needed 12" in shown and "Items per worker 4" in shown
    assert "a worker answers one method per text" in shown
    assert "30.0 s per answer, hatlab's default for this kind" in shown
    assert "Amazon Mechanical Turk" in shown and "Prolific" in shown  # a cost per platform
    crowd = text_of(client.get(f"/studies/{study.uid}/crowd/"))
    assert "Workers needed 12" in crowd
    assert Response.objects.count() == 0


def test_crowd_state_lists_the_preconditions(researcher, settings):
    settings.HATLAB_PUBLIC_URL = "http://127.0.0.1:8000"
    dataset = make_dataset(researcher, n=4)
    study = make_study(researcher, dataset, start=False, provider="mturk", provider_config=dict(MTURK_CONFIG))
    checks = {c["name"]: c for c in crowd_state(study)["preconditions"]}
    assert checks["Settings"]["ok"] is True
    assert checks["HTTPS task address"]["ok"] is False
    assert "set HATLAB_PUBLIC_URL" in checks["HTTPS task address"]["sentence"]
    assert checks["Balance"]["ok"] is None


def test_a_threshold_the_workers_cannot_meet_is_a_warning_on_the_form(researcher):
    client = Client()
    client.force_login(researcher)
    dataset = rating_dataset(researcher)
    url = "/studies/new/?kind=sentence_rating"
    form = {"kind": "sentence_rating", "name": "ratings", "dataset": dataset.pk, "aspects": "overall",
            "rating_max": 5, "gold_tolerance": 0, "min_judges": 4, "annotators_per_item": 3,
            "time_limit_min": 10, "provider": "local"}  # fmt: skip
    warned = client.post(url, form)
    assert warned.status_code == 200 and not Study.objects.exists()  # shown before anything is saved
    shown = text_of(warned)
    assert "Minimum judges is 4 but each sentence gets 3 workers per item" in shown
    assert "Create with these warnings" in shown
    assert client.post(url, {**form, "annotators_per_item": 4}).status_code == 302  # met: no warning
    assert client.post(url, {**form, "name": "as is", "accept_warnings": "yes"}).status_code == 302
    study = Study.objects.get(name="as is")
    assert "Minimum judges is 4" in text_of(client.get(f"/studies/{study.uid}/"))  # still said before Start


def test_the_study_api_gives_the_plan_to_its_owner_only(researcher, other_researcher):
    study, _ = fc_study(researcher)
    client = Client()
    client.force_login(researcher)
    body = client.get(f"/api/studies/{study.uid}/plan/").json()
    assert (body["answers"], body["workers"], body["items_per_worker"], body["items"]) == (48, 12, 4, 16)
    assert {c["platform"] for c in body["costs"]} == {"mturk", "prolific"}
    assert client.get(f"/api/studies/{study.uid}/progress/").json()["responses_needed"] == 48
    other = Client()
    other.force_login(other_researcher)
    assert other.get(f"/api/studies/{study.uid}/plan/").status_code == 404


def test_a_draft_whose_items_cannot_be_built_says_why(researcher):
    dataset = Dataset.objects.create(owner=researcher, name="four", labels=["negative", "positive"])
    texts = ["good food here", "bad cold soup", "not good at all", "not bad really"]
    Document.objects.bulk_create(
        [
            Document.from_text(dataset, f"d{i}", t, label=["positive", "negative"][i % 2])
            for i, t in enumerate(texts)
        ]
    )
    run = make_run(researcher, dataset)
    for i, doc in enumerate(dataset.documents.order_by("id")):
        predict(run, doc, doc.label if i < 2 else other(doc.label), 0.9)
    study = fc_make_study(researcher, dataset, "justify", {"model_run": run.pk, "n_texts": 10}, annotators=3)
    plan = study_plan(study)
    assert plan.answers == 0 and plan.workers is None
    assert (
        "the study needs 5 correctly predicted and 5 misclassified texts" in plan.problem
    )  # the kind's words
    assert "The study has no items for a worker: check its dataset and settings." in plan.warnings
    client = Client()
    client.force_login(researcher)
    assert "The items cannot be built from these settings yet" in text_of(
        client.get(f"/studies/{study.uid}/")
    )


def test_the_protocol_adds_its_time_to_each_participant_and_to_the_cost(researcher):
    dataset = make_dataset(researcher, n=8, gold_every=2)
    study = make_study(researcher, dataset, start=False, annotators_per_item=3)
    bare = study_plan(study)
    # 400 words of consent at 200 a minute (120 s) plus 10 s to decide; two choices (8 s each) and a
    # free-text question (30 s) after the items: 176 s more for every participant
    study.protocol = {
        "consent": " ".join(["word"] * 400),
        "pre_survey": [{"id": "q1", "type": "single"}],
        "post_survey": [{"id": "q2", "type": "likert"}, {"id": "q3", "type": "text"}],
    }
    plan = study_plan(study)
    assert plan.protocol_s == 120 + 10 + 8 + 8 + 30 == 176
    assert plan.worker_s == bare.worker_s + 176
    assert plan.total_s == bare.total_s + 176 * plan.workers  # once per participant, not per item
    # a share's fair pay follows its time: the protocol's minutes are paid too
    assert plan.costs and all(
        after.estimate.total > before.estimate.total
        for after, before in zip(plan.costs, bare.costs, strict=True)
    )
    assert plan.as_dict()["protocol_s"] == 176


def test_the_invite_warning_counts_one_worker_and_one_link_in_the_singular():
    one = plan_numbers(Shape(items=8, golds=0, per_item=1, share=8, invites=0), 60.0)
    assert one.warnings[0].startswith("The plan needs 1 worker but only 0 invite links are made")
    few = plan_numbers(Shape(items=8, golds=0, per_item=2, share=8, invites=1), 60.0)
    assert few.warnings[0].startswith("The plan needs 2 workers but only 1 invite link is made")
