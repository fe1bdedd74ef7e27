"""The page token, the page's evidence stored with each answer, and the per-worker risk score: its pure
parts on hand-made arrays, then over stored answers, the policy that excludes, and the quality page."""

from __future__ import annotations

import uuid
from datetime import timedelta

import numpy as np
import pytest
from django.core import signing
from django.urls import reverse
from django.utils import timezone

from annotate.handout.assignment import next_assignment
from annotate.handout.page_tokens import SLACK_S, page_token, page_token_valid
from annotate.handout.submission import submit
from annotate.models import Item, Response, Worker, WorkerTrust
from annotate.quality import exclusion, risk
from annotate.quality.policy import policy_for
from annotate.tasks import get_kind
from tests.annotate.conftest import good_answer, make_worker
from tests.annotate.crowd_helpers import answer, crowd_study, golds, ordinary
from tests.annotate.test_api import Annotator, body_for

pytestmark = pytest.mark.django_db

HUMAN = {"page": True, "interaction": {"pointer": 4, "keys": 1, "touches": 0, "moves": 80}}
SCRIPT = {"page": True, "interaction": {"pointer": 0, "keys": 0, "touches": 0, "moves": 0}}
NO_PAGE: dict = {"page": False}


# --- the page token ---------------------------------------------------------------------------------


def test_page_token_holds_only_for_its_item_study_worker_and_time():
    study, other, item, other_item = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    served = 1_000_000.0
    token = page_token(study, 7, item, served_at=served)

    def valid(t, s=study, w=7, a=item, now=served + 5):
        return page_token_valid(t, s, w, a, 600, now=now)

    assert valid(token) and valid(token, s=str(study), a=str(item))
    assert not valid(token, s=other)
    assert not valid(token, w=8)
    assert not valid(token, w=None)
    assert not valid(token, a=other_item)  # a token served with one item opens no other
    assert valid(token, now=served + 600 + SLACK_S)
    assert not valid(token, now=served + 600 + SLACK_S + 1)  # stale: served longer ago than an item takes
    assert not valid(token[:-2] + ("AA" if token[-2:] != "AA" else "BB"))
    # signed for the same values with another salt (another of the site's signed values): refused
    assert not valid(signing.dumps([str(study), 7, str(item), served], salt="hatlab.workers"))
    # the study-and-worker token the entry page used to embed holds no more
    assert not valid(signing.dumps([str(study), 7], salt="hatlab.page"))
    for junk in (None, "", 12, True, {"page": True}):
        assert not valid(junk)
    # signed with this very salt but not of a page token's shape (three values, a mapping, a time that
    # is no number): refused, never an error
    salt = "hatlab.page.item"
    assert not valid(signing.dumps([str(study), 7, str(item)], salt=salt))
    assert not valid(signing.dumps({"study": str(study), "worker": 7}, salt=salt))
    assert not valid(signing.dumps([str(study), 7, str(item), "1000005"], salt=salt))
    assert not valid(signing.dumps([str(study), 7, str(item), served, "extra"], salt=salt))


@pytest.mark.parametrize("native", [True, False])
def test_submission_stores_the_servers_verdict_not_the_clients(researcher, monkeypatch, native):
    study = crowd_study(researcher, n=8, gold_every=0)
    if not native:
        monkeypatch.setattr("annotate.infra.sql.native", lambda: False)
    worker, someone = make_worker("w-page"), make_worker("w-else")
    verdicts: list[bool] = []
    served: list[str] = []
    long_ago = timezone.now().timestamp() - study.time_limit_s - SLACK_S - 60
    for make in (
        lambda a: {"page_token": page_token(study.uid, worker.pk, a.uid), "blurs": 1},
        lambda a: {"page": True},  # a claim, no token
        lambda a: {"page_token": page_token(study.uid, someone.pk, a.uid), "page": True},  # another worker's
        lambda a: {"page_token": page_token(uuid.uuid4(), worker.pk, a.uid)},  # another study's
        lambda a: {"page_token": served[-1]},  # the token served with the previous item
        lambda a: {"page_token": page_token(study.uid, worker.pk, a.uid, served_at=long_ago)},  # stale
        lambda a: {"page_token": page_token(study.uid, worker.pk, a.uid), "recovered": True},  # a claim
    ):
        a = next_assignment(study, worker)
        ans, timings = good_answer(a.item)
        signals = make(a)
        stored = submit(a.uid, {worker.pk}, uuid.uuid4(), ans, timings, signals)
        kept = Response.objects.get(pk=stored.response_id).signals
        assert "page_token" not in kept and "recovered" not in kept  # neither is stored from the client
        verdicts.append(kept["page"])
        served.append(page_token(study.uid, worker.pk, a.uid))
    assert verdicts == [True, False, False, False, False, False, True]


def test_each_item_comes_with_its_own_token(study):
    annotator = Annotator(study, "ann-9")
    assert "page_token" not in annotator.task  # the entry page embeds none: it names no item
    worker = Worker.objects.get()  # the invite's worker, the only one
    first = annotator.next().json()
    assert page_token_valid(
        first["page_token"], study.uid, worker.pk, first["assignment"], study.time_limit_s
    )
    again = annotator.next().json()  # the held item handed back: a token served now
    assert again["assignment"] == first["assignment"]
    assert page_token_valid(
        again["page_token"], study.uid, worker.pk, first["assignment"], study.time_limit_s
    )
    stored = annotator.submit(
        first["assignment"], {**body_for(first["item"]["payload"]), "next": True}
    ).json()
    following = stored["next"]
    assert following["assignment"] != first["assignment"]
    assert page_token_valid(following["page_token"], study.uid, worker.pk, following["assignment"], 600)
    assert not page_token_valid(first["page_token"], study.uid, worker.pk, following["assignment"], 600)


# --- pure parts ---------------------------------------------------------------------------------------


def test_words_per_minute_leaves_untimed_and_wordless_answers_out():
    wpm = risk.words_per_minute(np.array([100, 100, 0, 50, 10]), np.array([60_000, np.nan, 1_000, 0, -5]))
    assert wpm[0] == pytest.approx(100.0)
    assert np.isnan(wpm[1]) and np.isnan(wpm[2]) and np.isnan(wpm[4])
    assert np.isinf(wpm[3])  # a zero time with words is infinitely fast


def test_noisy_or_combination():
    assert risk.combine(np.array([]), np.array([])) == 0.0
    assert risk.combine(np.array([0.8]), np.array([0.5])) == pytest.approx(0.4)
    assert risk.combine(np.array([0.8, 0.7]), np.array([1.0, 1.0])) == pytest.approx(1 - 0.2 * 0.3)
    assert risk.combine(np.array([0.7]), np.array([3.0])) == pytest.approx(0.7)  # strengths clipped


def test_answer_entropy_is_relative_to_the_categories():
    assert risk.answer_entropy(np.array([0, 0, 0, 0]), 3) == 0.0
    assert risk.answer_entropy(np.array([0, 1, 2, 0, 1, 2]), 3) == pytest.approx(1.0)
    assert risk.answer_entropy(np.array([0, 1]), 4) == pytest.approx(0.5)  # 1 bit of 2
    assert np.isnan(risk.answer_entropy(np.array([0, 0]), 1))


def test_interaction_events_counts_real_input_only():
    assert risk.interaction_events({"interaction": {"pointer": 2, "keys": 3, "touches": 1, "moves": 50}}) == 6
    assert risk.interaction_events({"interaction": {"pointer": True, "keys": "9"}}) == 0
    assert risk.interaction_events({"pointer": 5}) == 0  # only the page's interaction block counts
    assert risk.interaction_events(None) == 0


def test_answer_time_is_the_servers_interval_and_the_clients_claim_only_without_it():
    """The server's interval from hand-out to answer wins, even a zero one (the fastest script) over a
    client claiming seconds; a negative one (clocks out of step) is unknown, and then the client's read
    plus answer time counts, one of them missing counting as zero; with neither, the time is unknown."""
    handed = timezone.now()
    assert risk.time_taken_ms(handed, handed + timedelta(seconds=3), 9000, 9000) == 3000.0
    assert risk.time_taken_ms(handed, handed, 5000, 4000) == 0.0
    assert risk.time_taken_ms(handed, handed - timedelta(seconds=1), 5000, 4000) == 9000
    assert risk.time_taken_ms(None, handed, 5000, 4000) == 9000
    assert risk.time_taken_ms(handed, None, 5000, None) == 5000
    assert risk.time_taken_ms(None, None, None, 4000) == 4000
    assert risk.time_taken_ms(None, None, None, None) is None


def reasons_for(n: int = 12, **arrays) -> list[risk.Reason]:
    given = {
        "wpm": np.full(n, 200.0),
        "max_wpm": 714.0,
        "events": np.full(n, 5),
        "page": np.ones(n, dtype=bool),
        "from_page": np.ones(n, dtype=bool),
        "categories": ["positive", "negative"] * (n // 2),
        "n_categories": 2,
        "strategies": [[] for _ in range(n)],
        "gold": np.full(n, np.nan),
        "trust_threshold": 0.7,
    }
    given.update(arrays)
    return risk.worker_reasons(**given)


def test_a_careful_worker_shows_no_reason():
    assert reasons_for() == []


def test_each_reason_with_its_evidence():
    by = {r.code: r for r in reasons_for(wpm=np.array([5_000.0] * 11 + [100.0]))}
    assert list(by) == ["speed"]
    assert by["speed"].strength == pytest.approx(11 / 12)
    assert by["speed"].evidence.startswith("11 of 12 answers faster than 714 words per minute (under 8.4 s")

    quiet = reasons_for(events=np.array([0] * 6 + [3] * 6), page=np.array([False] * 3 + [True] * 9))
    assert [(r.code, r.evidence) for r in quiet] == [
        ("no_interaction", "6 of 12 answers with no pointer, key or touch event"),
        ("no_page", "3 of 12 answers sent without the task page's token"),
    ]
    # Answers without a recorded verdict (older, or recovered) are neither.
    assert reasons_for(events=np.zeros(12), page=np.zeros(12, bool), from_page=np.zeros(12, bool)) == []

    same = reasons_for(categories=["positive"] * 12)
    assert [r.code for r in same] == ["same_answer"] and same[0].strength == pytest.approx(1.0)
    assert same[0].evidence.startswith("12 of 12 answers are 'positive'")
    assert reasons_for(categories=["positive"] * 10 + ["negative"] * 2) == []  # 0.65 bits: not low enough
    assert reasons_for(n=4, categories=["positive"] * 4) == []  # too few answers to call a pattern

    fixed = reasons_for(strategies=[["every word highlighted"]] * 11 + [[]])
    assert [(r.code, r.evidence) for r in fixed] == [
        ("fixed_strategy", "11 of 12 answers agree with 'every word highlighted'")
    ]
    assert reasons_for(strategies=[["every word highlighted"]] * 10 + [[], []]) == []  # under 90 %

    gold = np.full(12, np.nan)
    gold[:4] = [0, 0, 0, 1]
    assert [(r.code, r.evidence) for r in reasons_for(gold=gold)] == [("gold", "3 of 4 gold items failed")]
    gold[:4] = [0, 1, 1, 1]  # passes 75 % >= 70 %: no reason
    assert reasons_for(gold=gold) == []


def test_score_flags_a_script_but_not_a_pattern_alone():
    script = risk.risk_of(1, 12, reasons_for(wpm=np.full(12, 9_000.0), events=np.zeros(12)), 0.5)
    assert script.flagged and script.score == pytest.approx(1 - 0.2 * 0.3)
    pattern = risk.risk_of(2, 12, reasons_for(categories=["positive"] * 12), 0.5)
    assert not pattern.flagged and pattern.score == pytest.approx(0.4)
    assert risk.risk_of(3, 12, [], 0.5).score == 0.0


# --- the kinds' hooks ---------------------------------------------------------------------------------


def test_kinds_name_their_fixed_strategies(study):
    highlight = get_kind("highlight")
    labels = highlight.categories(study)
    assert highlight.fixed_strategies(study, {"label": labels[0], "map": [1, 1, 1]}) == [
        f"always the first answer ({labels[0]})",
        "every word highlighted",
    ]
    assert highlight.fixed_strategies(study, {"label": labels[1], "map": [0, 1, 0]}) == []
    assert get_kind("token_marking").fixed_strategies(study, {"map": [0, 0]}) == ["no word highlighted"]
    nli = get_kind("nli_pair")
    nli_study = type(study)(kind="nli_pair", config={"labels": ["entailment", "neutral", "contradiction"]})
    assert nli.fixed_strategies(
        nli_study, {"label": "neutral", "premise_map": [1, 1], "hypothesis_map": [1]}
    ) == ["every word highlighted"]
    assert nli.reading_words({"premise": {"words": ["a", "b", "c"]}, "hypothesis": {"words": ["d"]}}) == 4
    justify = get_kind("justify")
    fc_study = type(study)(kind="justify", config={"labels": ["A", "B"]})
    first, *_, last = justify.answer_choices(fc_study)
    assert justify.fixed_strategies(fc_study, dict(first)) == ["always the first button"]
    assert justify.fixed_strategies(fc_study, dict(last)) == ["always the last button"]


# --- over stored answers ------------------------------------------------------------------------------


def answered(study, worker, item, *, seconds: float, signals: dict, verification=None) -> Response:
    """An answer that arrived ``seconds`` after its item was handed out."""
    response = answer(study, worker, item, signals=signals)
    assigned = response.created - timedelta(seconds=seconds)
    type(response.assignment).objects.filter(pk=response.assignment_id).update(assigned_at=assigned)
    if verification:
        Response.objects.filter(pk=response.pk).update(verification=verification)
    return response


@pytest.fixture
def rated(researcher):
    study = crowd_study(researcher, n=8, gold_every=0, annotators_per_item=3)
    bot, person, claimed = make_worker("bot"), make_worker("person"), make_worker("claimed")
    for item in ordinary(study):
        words = len(item.payload["words"])
        answered(study, bot, item, seconds=0.2, signals=SCRIPT)
        answered(study, person, item, seconds=words * 60 / 200, signals=HUMAN)  # 200 wpm
        # the client claims long reading times; the server saw 0.3 s and no page
        answered(study, claimed, item, seconds=0.3, signals=NO_PAGE)
    return study, bot, person, claimed


def test_study_risks_flag_scripts_with_reasons(rated):
    study, bot, person, claimed = rated
    risks = risk.study_risks(study)
    assert not risks[person.pk].flagged and risks[person.pk].reasons == []
    assert risks[bot.pk].flagged
    assert {r.code for r in risks[bot.pk].reasons} == {"speed", "no_interaction"}
    assert risks[bot.pk].reasons[0].evidence.startswith("8 of 8 answers faster than 714 words per minute")
    assert risks[claimed.pk].flagged
    assert {r.code for r in risks[claimed.pk].reasons} == {"speed", "no_interaction", "no_page"}


def test_a_lower_reading_floor_moves_the_line(rated):
    study, bot, person, _ = rated
    policy = policy_for(study)
    policy.max_wpm = 150  # the person reads at 200 wpm
    policy.save()
    study.refresh_from_db()
    assert "speed" in {r.code for r in risk.study_risks(study)[person.pk].reasons}


def test_only_counted_answers_are_scored(rated):
    study, bot, person, _ = rated
    Response.objects.filter(worker=bot).update(verification=Response.Verification.PROVISIONAL)
    assert bot.pk not in risk.study_risks(study)


def test_policy_excludes_flagged_workers_and_a_researcher_decides_over_it(rated):
    study, bot, person, claimed = rated
    assert exclusion.apply_risk(study, risk.study_risks(study)) == []  # review: nobody excluded
    assert exclusion.excluded_worker_ids(study) == set()
    policy = policy_for(study)
    policy.risk_action = "exclude"
    policy.save()
    assert sorted(exclusion.apply_risk(study, risk.study_risks(study))) == sorted([bot.pk, claimed.pk])
    assert exclusion.excluded_worker_ids(study) == {bot.pk, claimed.pk}
    exclusion.set_risk_exclusion(study, bot, exclude=False)  # the researcher keeps the bot in
    exclusion.set_risk_exclusion(study, person, exclude=True)
    assert exclusion.apply_risk(study, risk.study_risks(study)) == []
    assert exclusion.excluded_worker_ids(study) == {claimed.pk, person.pk}
    # once no longer flagged, an automatic exclusion is lifted
    policy.risk_threshold = 1.0
    policy.save()
    assert exclusion.apply_risk(study, risk.study_risks(study)) == [claimed.pk]
    assert WorkerTrust.objects.get(study=study, worker=claimed).risk_exclusion == ""


def test_quality_page_and_api_show_the_reasons_and_exclude(client, admin_user, rated):
    study, bot, person, _ = rated
    client.force_login(admin_user)
    page = client.get(reverse("quality-dashboard", args=[study.uid])).content.decode()
    assert "8 of 8 answers with no pointer, key or touch event" in page
    assert 'data-reason="speed"' in page and "flagged" in page
    # the help says what the score cannot catch, not only what it can
    assert "What the risk score can and cannot catch" in page
    assert "It cannot catch a careful script" in page and "nothing a client sends can switch one off" in page
    data = client.get(reverse("api-crowd-quality", args=[study.uid])).json()
    rows = {w["id"]: w for w in data["workers"]}
    assert rows[bot.pk]["risk_flagged"] and not rows[person.pk]["risk_flagged"]
    assert {r["code"] for r in rows[bot.pk]["risk_reasons"]} == {"speed", "no_interaction"}
    assert data["policy"]["max_wpm"] == 714.0
    url = reverse("quality-worker", args=[study.uid, bot.pk, "exclude"])
    assert client.post(url).status_code == 302
    assert exclusion.excluded_worker_ids(study) == {bot.pk}
    api = reverse("api-crowd-quality-worker", args=[study.uid, bot.pk, "include"])
    assert client.post(api).json() == {"worker": bot.pk, "excluded": False, "pending": False}
    assert client.get(reverse("api-crowd-quality", args=[study.uid])).json()["workers"][0]["risk_exclusion"]


def test_gold_failures_are_a_reason(researcher):
    study = crowd_study(researcher, n=8, gold_every=2, annotators_per_item=3)
    sloppy = make_worker("sloppy")
    for i, item in enumerate(golds(study)):
        answered(study, sloppy, item, seconds=60, signals=HUMAN)
        if i:
            Response.objects.filter(worker=sloppy, item=item).update(gold_passed=False)
    reasons = {r.code: r for r in risk.study_risks(study)[sloppy.pk].reasons}
    assert reasons["gold"].evidence == "3 of 4 gold items failed"


def test_a_retired_gold_item_is_no_evidence_and_neither_is_an_ordinary_one(researcher):
    """Only golds still in use judge a worker: failures on gold items since retired are left out of the
    gold reason, and an ordinary item's answer is never a gold pass or failure."""
    study = crowd_study(researcher, n=8, gold_every=2, annotators_per_item=3)
    sloppy = make_worker("sloppy")
    for item in golds(study):
        answered(study, sloppy, item, seconds=60, signals=HUMAN)
    for item in ordinary(study):
        answered(study, sloppy, item, seconds=60, signals=HUMAN)
    Response.objects.filter(worker=sloppy, item__is_gold=True).update(gold_passed=False)
    Response.objects.filter(worker=sloppy, item__is_gold=False).update(gold_passed=True)
    reasons = {r.code: r for r in risk.study_risks(study)[sloppy.pk].reasons}
    assert reasons["gold"].evidence == "4 of 4 gold items failed"
    Item.objects.filter(pk__in=[g.pk for g in golds(study)[:3]]).update(retired=True)
    reasons = {r.code: r for r in risk.study_risks(study)[sloppy.pk].reasons}
    assert reasons["gold"].evidence == "1 of 1 gold items failed"
