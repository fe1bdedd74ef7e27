"""Only verified answers count: a provisional answer (its platform has not confirmed the worker's
submission yet) and a set-aside one (never confirmed) change no result, dashboard, aggregation, trust
or exclusion decision, gold review, heatmap or export, unless an export asks for them.

The data: every item of a small highlight study answered by two verified workers who give the right
answer and by a provisional and a set-aside worker who both give the wrong one. Counting the latter two
would double each item's answers, tie or flip its label, break the maps' agreement and exclude a worker
whose only failing golds are provisional; each test also shows the figure that verifying them moves.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.crowd import blocks
from annotate.crowd.unconfirmed import unconfirmed_workers
from annotate.dashboards.cache import STUDY, fingerprint
from annotate.dashboards.gather import study_data
from annotate.dashboards.similarity import text_detail
from annotate.dashboards.study import study_dashboard
from annotate.exports.tables import include_unverified, item_rows, response_rows
from annotate.handout.hooks import on_response_stored, on_verification_changed
from annotate.kinds.forced_choice.results import evaluation_results
from annotate.kinds.nli_pair.results import pair_results
from annotate.machine.heatmap import human_rows
from annotate.models import QualityPolicy, Response, Study, Worker, WorkerTrust
from annotate.quality import aggregation, gold_review, grading, signals
from annotate.quality.exclusion import counted_responses, is_blocked
from annotate.studies.progress import study_progress
from tests.annotate.crowd_helpers import answer, answer_of, crowd_study, golds, ordinary
from tests.annotate.kinds.forced_choice.test_filters import mixed_study, owner, workers  # noqa: F401 (fixtures)
from tests.annotate.kinds.forced_choice.test_scoring import HAND, NEG, POS
from tests.annotate.kinds.forced_choice.test_scoring import answer as fc_answer
from tests.annotate.kinds.nli_pair.test_kind import answered_study, counted_study  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

VERIFIED, PROVISIONAL, SET_ASIDE = (
    Response.Verification.VERIFIED,
    Response.Verification.PROVISIONAL,
    Response.Verification.SET_ASIDE,
)


def mark(worker: Worker, state: str) -> None:
    Response.objects.filter(worker=worker).update(verification=state)


@pytest.fixture
def three_way(researcher):
    """Eight items (four gold), each answered right by ``v1`` and ``v2`` (verified), wrong by ``p``
    (provisional) and ``s`` (set aside)."""
    study = crowd_study(researcher, n=8, gold_every=2, annotators_per_item=4)
    names = ("v1", "v2", "p", "s")
    people = {name: Worker.objects.create(provider="local", external_id=name) for name in names}
    start = timezone.now() - timedelta(hours=2)
    for i, item in enumerate([*golds(study), *ordinary(study)]):
        for k, name in enumerate(names):
            answer(
                study,
                people[name],
                item,
                correct=name.startswith("v"),
                when=start + timedelta(minutes=4 * i + k),
            )
    mark(people["p"], PROVISIONAL)
    mark(people["s"], SET_ASIDE)
    grading.refresh_trust(study)  # v1 and v2 pass every gold: trusted; p and s have no verified gold
    return study, people


def drop_unverified(study) -> None:
    """The reference data set: the same study with the unverified answers gone."""
    Response.objects.filter(study=study).exclude(verification=VERIFIED).delete()


# ------------------------------------------------------------------------------ trust and exclusion


def test_failing_golds_that_are_only_provisional_neither_exclude_nor_block(three_way):
    study, people = three_way
    QualityPolicy.objects.filter(study=study).update(block_mode="qualification", min_golds=4)
    study = Study.objects.get(pk=study.pk)  # the fixture's trust refresh cached the default policy
    summary = blocks.apply_quality(study, mirror=False)
    assert summary.blocked == []
    trust = {t.worker_id: t for t in WorkerTrust.objects.filter(study=study)}
    assert set(trust) == {people["v1"].pk, people["v2"].pk}
    assert all((t.golds_seen, t.golds_passed, t.status) == (4, 4, "trusted") for t in trust.values())
    assert not is_blocked(study, people["p"].pk)
    assert aggregation.excluded_worker_ids(study) == set()
    # storing a provisional failing gold on the submission path changes nothing either
    failing = Response.objects.filter(worker=people["p"], item__is_gold=True).select_related("study").first()
    assert failing.gold_passed is False and on_response_stored(failing).blocked == []
    # once the platform confirms the worker, the same golds exclude and block them
    mark(people["p"], VERIFIED)
    assert on_verification_changed(study, [people["p"].pk]).blocked == [people["p"].pk]
    assert WorkerTrust.objects.get(study=study, worker=people["p"]).status == "excluded"
    assert is_blocked(study, people["p"].pk)


def test_answers_set_aside_after_trust_was_computed_leave_the_worker_with_no_golds(three_way):
    study, people = three_way
    grading.refresh_trust(study)
    mark(people["v2"], SET_ASIDE)
    changes = grading.refresh_trust(study, [people["v2"].pk])
    row = WorkerTrust.objects.get(study=study, worker=people["v2"])
    assert (row.golds_seen, row.golds_passed) == (0, 0)
    assert [c.worker_id for c in changes] == [people["v2"].pk]


def test_gold_review_counts_verified_answers_only(three_way):
    study, _ = three_way
    reviews = gold_review.review_golds(study)
    assert [(r.seen, r.missed) for r in reviews] == [(2, 0)] * 4
    assert not any(r.flagged for r in reviews)
    Response.objects.filter(study=study).update(verification=VERIFIED)
    assert [(r.seen, r.missed) for r in gold_review.review_golds(study)] == [(4, 2)] * 4


def test_behaviour_signals_cover_verified_answers_only(three_way):
    study, people = three_way
    assert set(signals.worker_signals(study)) == {people["v1"].pk, people["v2"].pk}
    assert {r["worker"] for r in signals.response_signals(study)} == {people["v1"].pk, people["v2"].pk}


# --------------------------------------------------------------------------------- aggregation, kinds


def test_aggregated_labels_count_verified_answers_only(three_way):
    study, people = three_way
    rows = list(aggregation.aggregation_rows(study))
    right = {item.pk: answer_of(item)["label"] for item in ordinary(study)}
    assert len(rows) == 4
    for row in rows:
        assert row["responses"] == 2
        assert row["labels"] == [right[row["item"]]] * 2
        assert row["majority"] == row["ds_label"] == right[row["item"]]
        assert row["confidence"] == 1.0
    Response.objects.filter(study=study).update(verification=VERIFIED)
    on_verification_changed(study, [people["p"].pk, people["s"].pk])
    # verified, they are judged by their golds: they failed every one and stay out
    assert {r["responses"] for r in aggregation.aggregation_rows(study)} == {2}
    excluded = WorkerTrust.objects.filter(study=study, status="excluded").values_list("worker_id", flat=True)
    assert set(excluded) == {people["p"].pk, people["s"].pk}


def test_kinds_count_verified_answers_only(three_way):
    study, people = three_way
    counted = set(counted_responses(study).values_list("worker_id", flat=True))
    assert counted == {people["v1"].pk, people["v2"].pk}
    assert counted_responses(study).count() == 8  # two verified answers to each of four ordinary items


def test_forced_choice_scores_leave_unverified_answers_out(mixed_study, workers):  # noqa: F811
    study, gold, _ = mixed_study
    before = evaluation_results(study, n_boot=0)
    items = sorted({a.item for a in before["scored"]})
    late = [Worker.objects.create(external_id=f"late{i}") for i in range(2)]
    for item_id, key in zip(items, HAND, strict=True):
        for worker, state in zip(late, (PROVISIONAL, SET_ASIDE), strict=True):
            against = {POS: NEG, NEG: POS}.get(HAND[key][0][0], POS)
            r = fc_answer(study, study.items.get(pk=item_id), worker, against, True)
            Response.objects.filter(pk=r.pk).update(verification=state)
    after = evaluation_results(study, n_boot=0)
    for key in ("answers", "questions", "workers", "scores", "distribution", "kappa"):
        assert after[key] == before[key], key
    Response.objects.filter(study=study).update(verification=VERIFIED)
    for worker in late:  # verified, they pass the gold like the others and so count
        passed = fc_answer(study, gold, worker, NEG, True)
        Response.objects.filter(pk=passed.pk).update(gold_passed=True)
    on_verification_changed(study, [w.pk for w in late])
    assert evaluation_results(study, n_boot=0)["answers"] == before["answers"] + 2 * len(items)


def test_nli_pair_figures_and_response_export_count_verified_answers_only(counted_study, researcher):  # noqa: F811
    """The second annotator marks one more premise word: as a provisional answer it is in no SAM."""
    study = counted_study
    generous = Response.objects.filter(study=study).order_by("-id").first().worker  # answered second
    mark(generous, PROVISIONAL)
    results = pair_results(study, n_boot=0)
    assert (results["answers"], results["workers"]) == (2, 1)
    assert results["pairs"][0]["premise_sam"] == results["pairs"][0]["premise_cam"] is None  # one map only
    client = Client()
    client.force_login(researcher)
    url = reverse("study-results-table", args=[study.uid, "responses", "csv"])
    plain = list(csv.DictReader(io.StringIO(client.get(url).content.decode())))
    assert len(plain) == 3 and "verification" not in plain[0]
    full = client.get(url + "?include_unverified=1")
    assert "with-unverified" in full["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(full.content.decode())))
    assert [r["verification"] for r in rows].count(PROVISIONAL) == 3 and len(rows) == 6
    pairs = client.get(
        reverse("study-results-table", args=[study.uid, "pairs", "csv"]) + "?include_unverified=1"
    )
    assert pairs.status_code == 400 and b"include_unverified" in pairs.content


# -------------------------------------------------------------------------------- dashboards, heatmap


def test_study_dashboard_is_the_same_without_the_unverified_answers(three_way):
    study, _ = three_way
    with_them = study_dashboard(study, n_boot=20)
    drop_unverified(study)
    assert study_dashboard(study, n_boot=20) == with_them


def test_dashboard_fingerprint_follows_verification_not_provisional_arrivals(three_way):
    study, people = three_way
    first = fingerprint(study, STUDY, {})
    late = answer(study, Worker.objects.create(external_id="late"), ordinary(study)[0], correct=False)
    Response.objects.filter(pk=late.pk).update(verification=PROVISIONAL)
    assert fingerprint(study, STUDY, {}) == first  # nothing that counts arrived
    Response.objects.filter(pk=late.pk).update(verification=VERIFIED)
    verified = fingerprint(study, STUDY, {})
    assert verified != first
    # one answer set aside and another verified at once: same count, still a new fingerprint
    # (two ungraded answers, neither the newest: only which answers count changes)
    kept = Response.objects.filter(worker=people["s"], item__is_gold=False).order_by("id").first()
    lost = Response.objects.filter(worker=people["v1"], item__is_gold=False).order_by("id").last()
    Response.objects.filter(pk=kept.pk).update(verification=VERIFIED)
    Response.objects.filter(pk=lost.pk).update(verification=SET_ASIDE)
    assert Response.objects.filter(study=study).counted().count() == 17
    assert fingerprint(study, STUDY, {}) not in (first, verified)


def test_heatmap_and_drill_down_show_verified_maps_only(three_way):
    study, people = three_way
    item = ordinary(study)[0]
    rows = human_rows(item.document)
    humans = [r for r in rows if r.kind == "human"]
    assert len(humans) == 2
    assert {r.label for r in rows if r.kind == "consensus"} == {""} and len(rows) == 4  # CAM and SAM of 2
    names = {people[n].pseudonym_for(study.owner_id) for n in ("v1", "v2")}
    assert {r.name.removeprefix("annotator ") for r in humans} == names
    detail = text_detail(study, item, [], "predicted")
    assert {h["annotator"] for h in detail["human"]} == names


# ------------------------------------------------------------------------------------------- exports


def test_exports_hold_verified_answers_unless_asked(three_way):
    study, people = three_way
    rows = list(response_rows(study))
    assert len(rows) == 16 and "verification" not in rows[0]
    assert {r["worker"] for r in rows} == {
        people["v1"].pseudonym_for(study.owner_id),
        people["v2"].pseudonym_for(study.owner_id),
    }
    everything = list(response_rows(study, unverified=True))
    assert len(everything) == 32
    by_worker = {r["worker"]: r["verification"] for r in everything}
    assert by_worker == {
        people["v1"].pseudonym_for(study.owner_id): VERIFIED,
        people["v2"].pseudonym_for(study.owner_id): VERIFIED,
        people["p"].pseudonym_for(study.owner_id): PROVISIONAL,
        people["s"].pseudonym_for(study.owner_id): SET_ASIDE,
    }
    items = {r["item"]: r for r in item_rows(study)}
    mixed = {r["item"]: r for r in item_rows(study, unverified=True)}
    first = ordinary(study)[0]
    right = answer_of(first)["label"]
    assert items[first.pk]["labels"] == [right] * 2 and "verifications" not in items[first.pk]
    assert mixed[first.pk]["labels"] == [right, right] + [answer_of(first, correct=False)["label"]] * 2
    assert mixed[first.pk]["verifications"] == [VERIFIED, VERIFIED, PROVISIONAL, SET_ASIDE]
    gold = golds(study)[0]
    assert items[gold.pk]["cam"] == items[gold.pk]["sam"] == gold.secret["gold"]["map"]
    assert not any(mixed[gold.pk]["cam"])  # the wrong maps select none of the gold's words


@pytest.mark.parametrize(
    ("value", "wanted"), [(None, False), ("0", False), ("false", False), ("1", True), ("TRUE", True)]
)
def test_include_unverified_values(value, wanted):
    assert include_unverified(value) is wanted


def test_export_page_and_api_take_include_unverified(three_way, researcher):
    study, people = three_way
    client = Client()
    client.force_login(researcher)
    page = reverse("study-export", args=[study.uid, "responses", "csv"])
    api = reverse("api-study-export", kwargs={"uid": study.uid, "what": "responses", "fmt": "csv"})
    for url in (page, api):
        plain = client.get(url)
        table = list(csv.DictReader(io.StringIO(b"".join(plain.streaming_content).decode())))
        assert len(table) == 16 and "verification" not in table[0]
        full = client.get(url + "?include_unverified=1")
        assert "with-unverified" in full["Content-Disposition"]
        table = list(csv.DictReader(io.StringIO(b"".join(full.streaming_content).decode())))
        assert sorted({r["verification"] for r in table}) == [PROVISIONAL, SET_ASIDE, VERIFIED]
        assert sum(r["verification"] == VERIFIED for r in table) == 16 and len(table) == 32
    bad = client.get(page + "?include_unverified=yes please")
    assert bad.status_code == 400 and b"include_unverified" in bad.content
    bad = client.get(api + "?include_unverified=2")
    assert bad.status_code == 400 and "include_unverified" in bad.json()
    schema = json.loads(client.get(reverse("api-schema") + "?format=json").content)
    operation = next(op["get"] for path, op in schema["paths"].items() if "/export/" in path)
    assert "include_unverified" in {p["name"] for p in operation.get("parameters", [])}


def test_study_page_offers_the_export_with_unverified_answers(three_way, researcher):
    study, _ = three_way
    client = Client()
    client.force_login(researcher)
    html = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    url = reverse("study-export", args=[study.uid, "responses", "csv"])
    assert f'href="{url}?include_unverified=1"' in html and f'href="{url}"' in html


# ---------------------------------------------------------------------------- study page, crowd page


def test_progress_tells_received_from_verified(three_way):
    study, _ = three_way
    items = [*golds(study), *ordinary(study)]
    type(items[0]).objects.filter(pk__in=[i.pk for i in items[:4]]).update(responses_needed=3)
    type(items[0]).objects.filter(pk__in=[i.pk for i in items[4:]]).update(responses_needed=2)
    p = study_progress(study)
    assert (p["responses"], p["verified"], p["provisional"], p["set_aside"]) == (32, 16, 8, 8)
    assert (p["items_verified"], p["items_total"], p["percent_verified"]) == (4, 8, 50.0)
    per = {a["worker"]: a for a in p["annotators"]}
    assert {(a["verified"], a["provisional"], a["set_aside"], a["golds"]) for a in per.values()} == {
        (8, 0, 0, 4),
        (0, 8, 0, 0),
        (0, 0, 8, 0),
    }


def test_study_page_shows_the_verification_counts(three_way, researcher):
    study, _ = three_way
    client = Client()
    client.force_login(researcher)
    html = client.get(reverse("study-detail", args=[study.uid])).content.decode()
    counts = html.split('id="verification-counts"', 1)[1].split("</dl>", 1)[0]
    assert "<dt>Verified</dt><dd>16</dd>" in counts
    assert "<dt>Awaiting confirmation</dt><dd>8</dd>" in counts
    assert "<dt>Set aside</dt><dd>8</dd>" in counts
    assert "<dt>Responses received</dt><dd>32 of 32</dd>" in counts
    api = client.get(reverse("api-study-progress", kwargs={"uid": study.uid})).json()
    assert (api["verified"], api["provisional"], api["set_aside"], api["responses"]) == (16, 8, 8, 32)


def test_crowd_page_lists_the_identities_never_confirmed(three_way, researcher):
    study, people = three_way
    # a worker with one verified answer among provisional ones is confirmed
    mixed = Worker.objects.create(provider="local", external_id="mixed")
    for k, item in enumerate(ordinary(study)[:2]):
        r = answer(study, mixed, item, correct=True)
        Response.objects.filter(pk=r.pk).update(verification=VERIFIED if k == 0 else PROVISIONAL)
    rows = unconfirmed_workers(study)
    assert [r["worker"] for r in rows] == [
        people["s"].pseudonym_for(study.owner_id),
        people["p"].pseudonym_for(study.owner_id),
    ]
    s, p = rows
    assert (p["provisional"], p["set_aside"], s["provisional"], s["set_aside"]) == (8, 0, 0, 8)
    first = Response.objects.filter(worker=people["p"]).order_by("created").first().created
    last = Response.objects.filter(worker=people["p"]).order_by("created").last().created
    assert (p["first_seen"], p["last_seen"]) == (first, last) and first < last
    client = Client()
    client.force_login(researcher)
    html = client.get(reverse("crowd-page", args=[study.uid])).content.decode()
    table = html.split('id="unconfirmed"', 1)[1].split("</table>", 1)[0]
    assert (
        people["p"].pseudonym_for(study.owner_id) in table
        and people["s"].pseudonym_for(study.owner_id) in table
    )
    assert (
        people["v1"].pseudonym_for(study.owner_id) not in table
        and mixed.pseudonym_for(study.owner_id) not in table
    )
    state = client.get(reverse("api-crowd-study", kwargs={"uid": study.uid})).json()
    assert [w["worker"] for w in state["unconfirmed"]] == [
        people["s"].pseudonym_for(study.owner_id),
        people["p"].pseudonym_for(study.owner_id),
    ]
    mark(people["p"], VERIFIED)
    assert [r["worker"] for r in unconfirmed_workers(study)] == [people["s"].pseudonym_for(study.owner_id)]


def test_a_worker_excluded_for_risk_leaves_the_dashboards_like_one_excluded_by_trust(three_way):
    """Verify the wrong-answering worker, then exclude them for risk: the dashboard data leaves them out
    and the cached dashboard goes stale; keeping them in brings them back."""
    study, people = three_way
    mark(people["p"], VERIFIED)
    with_p = fingerprint(study, STUDY, {})
    assert people["p"].pk not in gather_excluded(study)
    WorkerTrust.objects.update_or_create(
        study=study,
        worker=people["p"],
        defaults={"risk_exclusion": WorkerTrust.RiskExclusion.RESEARCHER},
    )
    assert people["p"].pk in gather_excluded(study)
    assert fingerprint(study, STUDY, {}) != with_p
    WorkerTrust.objects.filter(study=study, worker=people["p"]).update(
        risk_exclusion=WorkerTrust.RiskExclusion.KEPT
    )
    assert people["p"].pk not in gather_excluded(study)


def gather_excluded(study) -> set[int]:
    return study_data(study).excluded
