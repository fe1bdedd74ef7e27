"""The sentence_rating kind (Pappas & Popescu-Belis 2016): config, items, answers, gold grading; the
results page and CSV against hand-worked answers; no gold answer reaches an annotator. The scoring
functions themselves are the engine's (tests/engine/test_metrics_crowd.py)."""

from __future__ import annotations

import csv
import io
import json
import uuid

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from annotate.crowd.providers.local.adapter import invite_path, make_invite
from annotate.kinds.sentence_rating.results import rating_results
from annotate.models import (
    Assignment,
    Dataset,
    Document,
    Item,
    ModelRun,
    Prediction,
    Response,
    Study,
    Worker,
    WorkerTrust,
)
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.annotate.conftest import PASSWORD

KIND = get_kind("sentence_rating")
TEXT_A = "The narrator was superb. The plot dragged in the middle. I listened twice."
TEXT_B = "Great story! The voice acting was flat."
ASPECTS = [{"name": "overall"}, {"name": "performance", "title": "Performance", "rating_field": "perf"}]


def make_rating_study(
    owner, *, gold: bool = False, start: bool = True, aspects=ASPECTS, judges: int = 3
) -> Study:
    dataset = Dataset.objects.create(owner=owner, name=f"audiobooks-{uuid.uuid4().hex[:6]}")
    meta_a = {"overall": 4, "perf": 5}
    if gold:
        meta_a["gold_ratings"] = {"overall": [None, 4, None]}
    Document.from_text(dataset, "a", TEXT_A, metadata=meta_a).save()
    Document.from_text(dataset, "b", TEXT_B, metadata={"overall": 2, "perf": 1.0}).save()
    study = Study.objects.create(
        name="HATDOC",
        owner=owner,
        dataset=dataset,
        kind="sentence_rating",
        config=KIND.validate_config({"aspects": aspects}),
        annotators_per_item=judges,
        provider_config={"open_enrollment": True},
    )
    if start:
        start_study(study)
    return study


def give(item: Item, worker: Worker, rating: int) -> Response:
    """Store ``worker``'s answer to ``item`` as the submission path would."""
    slot = item.assignments.count()
    assignment = Assignment.objects.create(
        study=item.study, item=item, worker=worker, slot=slot, status=Assignment.Status.SUBMITTED,
        expires_at=timezone.now(), submitted_at=timezone.now(),
    )  # fmt: skip
    return Response.objects.create(
        assignment=assignment, study=item.study, item=item, worker=worker,
        submission_key=uuid.uuid4(), answer={"rating": rating},
    )  # fmt: skip


# ---------------------------------------------------------------------------------------- config


def test_config_defaults_and_aspect_defaults():
    config = KIND.validate_config({"aspects": [{"name": "story_line"}]})
    assert config["aspects"] == [
        {"name": "story_line", "rating_field": "story_line", "title": "Story line", "description": ""}
    ]
    assert config["rating_max"] == 5 and config["gold_tolerance"] == 0 and config["min_judges"] == 4
    assert KIND.validate_config({})["aspects"][0]["name"] == "overall"


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"aspects": []}, "aspects"),
        ({"aspects": [{"name": "a"}, {"name": "a"}]}, "aspects"),
        ({"aspects": [{"name": "bad name!"}]}, "aspects"),
        ({"rating_max": 1}, "rating_max"),
        ({"gold_tolerance": 9}, "gold_tolerance"),
    ],
)
def test_bad_config_names_the_field(config, field):
    with pytest.raises(ValidationError) as exc:
        KIND.validate_config(config)
    assert field in exc.value.detail


# ----------------------------------------------------------------------------------------- items


@pytest.mark.django_db
def test_items_one_per_aspect_document_sentence(researcher):
    study = make_rating_study(researcher, gold=True)
    items = list(study.items.order_by("position"))
    # 3 + 2 sentences, two aspects; aspect by aspect, then document order
    assert len(items) == 10
    assert [i.payload["aspect"] for i in items] == ["overall"] * 5 + ["performance"] * 5
    first = items[0].payload
    assert first["words"][:3] == ["The", "narrator", "was"]
    assert [i.payload["sentence"] for i in items[:5]] == [[0, 4], [4, 10], [10, 13], [0, 2], [2, 7]]
    assert [i.payload["rating"] for i in items] == [4, 4, 4, 2, 2, 5, 5, 5, 1, 1]
    assert items[5].payload["aspect_title"] == "Performance" and first["aspect_title"] == "Overall"
    # the gold level of sentence 1 of document a (overall) is secret
    golds = [i for i in items if i.is_gold]
    assert (
        len(golds) == 1
        and golds[0].secret == {"gold": {"rating": 4}}
        and golds[0].payload["sentence_index"] == 1
    )
    assert all("gold" not in json.dumps(KIND.public_payload(i)) for i in items)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"overall": 6, "perf": 1}, "metadata.overall must be a star rating from 1 to 5"),
        ({"perf": 1}, "metadata.overall must be a star rating"),
        ({"overall": True, "perf": 1}, "metadata.overall"),
        ({"overall": 3, "perf": 2.5}, "metadata.perf"),
        (
            {"overall": 3, "perf": 2, "gold_ratings": {"overall": [1]}},
            "metadata.gold_ratings.overall must list 2",
        ),
        ({"overall": 3, "perf": 2, "gold_ratings": {"overall": [1, 7]}}, "each a level 1–5 or null"),
    ],
)
def test_bad_documents_name_the_document_and_field(researcher, metadata, message):
    study = make_rating_study(researcher, start=False)
    Document.from_text(study.dataset, "c", "One. Two.", metadata=metadata).save()
    with pytest.raises(ValidationError) as exc:
        KIND.build_items(study)
    text = str(exc.value.detail["dataset"][0])
    assert "'c'" in text and message in text


def test_answers_are_validated():
    item = Item(payload={"words": ["a"]}, study=Study(kind="sentence_rating", config={}))
    assert KIND.validate_answer(item, {"rating": 3, "extra": 1}, {}) == {"rating": 3}
    for bad in ({"rating": 0}, {"rating": 6}, {"rating": "3"}, {"rating": True}, {"rating": 2.0}, {}):
        with pytest.raises(ValidationError) as exc:
            KIND.validate_answer(item, bad, {})
        assert "rating" in exc.value.detail["answer"]
    with pytest.raises(ValidationError):
        KIND.validate_answer(item, [3], {})


def test_gold_grading_with_tolerance():
    study = Study(kind="sentence_rating", config={"gold_tolerance": 0})
    item = Item(study=study, secret={"gold": {"rating": 4}})
    assert KIND.grade_gold(item, {"rating": 4}) is True
    assert KIND.grade_gold(item, {"rating": 5}) is False
    study.config = {"gold_tolerance": 1}
    assert KIND.grade_gold(item, {"rating": 5}) is True and KIND.grade_gold(item, {"rating": 2}) is False
    assert KIND.grade_gold(Item(study=study, secret={}), {"rating": 1}) is None
    assert KIND.categories(study) == [1, 2, 3, 4, 5]
    assert KIND.agreement_value({"rating": 2}) == 2 and KIND.agreement_value({}) is None


# -------------------------------------------------------------------------- results from the DB


def trust_row(study: Study, worker: Worker, passed: int, seen: int, status: str) -> WorkerTrust:
    return WorkerTrust.objects.create(
        study=study, worker=worker, golds_seen=seen, golds_passed=passed, trust=passed / seen, status=status
    )


@pytest.fixture
def answered(researcher):
    """Document a, aspect overall, with a gold question: w1, w2 trusted at 4/4, w3 trusted at 3/4;
    w4 excluded (0/4) and w5 pending (2 of 3 golds right): neither counts."""
    study = make_rating_study(researcher, aspects=[{"name": "overall"}])
    s0, s1, s2, b0, _ = study.items.order_by("position")
    Item.objects.create(
        study=study, document=s0.document, position=99, payload=s0.payload,
        secret={"gold": {"rating": 5}}, is_gold=True, responses_needed=3,
    )  # fmt: skip
    w1, w2, w3, w4, w5 = (Worker.objects.create(external_id=f"w{i}") for i in range(1, 6))
    for worker in (w1, w2):
        trust_row(study, worker, 4, 4, "trusted")
    trust_row(study, w3, 3, 4, "trusted")
    trust_row(study, w4, 0, 4, "excluded")
    trust_row(study, w5, 2, 3, "pending")
    for item, levels in ((s0, (5, 5, 4)), (s1, (1, 2, 2)), (s2, (1, 1, 1)), (b0, (3, 4, 4))):
        for worker, level in zip((w1, w2, w3), levels, strict=True):
            give(item, worker, level)
        give(item, w4, 5)  # excluded: never counted
        give(item, w5, 1)  # pending: waits until w5 qualifies
    return study


@pytest.mark.django_db
def test_rating_results_labels_agreement_and_model(answered, researcher):
    results = rating_results(answered, n_boot=50)
    assert results["answers"] == 12 and results["workers"] == 3
    by_sentence = {(r["document"], r["sentence"]): r for r in results["labels"]}
    s0, s1, s2 = (by_sentence[("a", i)] for i in range(3))
    assert (s0["majority"], s0["majority_text"]) == (5, "very well")
    assert s0["confidence"] == pytest.approx(2 / 2.75)  # w1, w2 (trust 1) against w3 (0.75)
    assert (s1["majority"], s1["confidence"]) == (2, pytest.approx(1.75 / 2.75))
    assert s2["confidence"] == pytest.approx(1.0) and s2["counts"] == [3, 0, 0, 0, 0]
    assert s0["text"] == "The narrator was superb." and s0["enough_judges"] is False
    assert by_sentence[("b", 1)]["responses"] == 0 and by_sentence[("b", 1)]["majority"] is None
    overall = results["summary"][0]
    assert (overall["sentences"], overall["labelled"], overall["judgments"]) == (5, 4, 12)
    assert overall["distribution"] == [1, 1, 0, 1, 1]
    # w1 and w2 agree except on s1: 5 1 1 3 vs 5 2 1 4
    pair = next(p for p in results["agreement"]["pairs"] if p["aspect"] == "overall" and p["n"] == 4
                and {p["a"], p["b"]} == {Worker.objects.get(external_id=w).pseudonym_for(answered.owner_id) for w in ("w1", "w2")})  # fmt: skip
    assert pair["r"] == pytest.approx(np.corrcoef([5, 1, 1, 3], [5, 2, 1, 4])[0, 1])
    assert "machine" not in results and results["model_run"] is None

    # a model whose attention puts most weight on sentence 0 of document a
    run = ModelRun.objects.create(
        name="attn", owner=researcher, dataset=answered.dataset, architecture="lstm_attention"
    )
    doc_a, doc_b = answered.dataset.documents.order_by("id")
    Prediction.objects.create(model_run=run, document=doc_a, label="positive",
                              attention=[0.2, 0.2, 0.2, 0.2] + [0.02] * 6 + [0.04, 0.04, 0.0])  # fmt: skip
    Prediction.objects.create(
        model_run=run, document=doc_b, label="negative", attention=[0.5, 0.5, 0, 0, 0, 0, 0]
    )
    machine = rating_results(answered, run, n_boot=50)["machine"]
    # sentence scores a: 0.8, 0.12, 0.08 -> levels 5, 1, 1; b: 1.0, 0 -> 5, 1
    assert machine["compared"] == 4 and machine["skipped"] == 0
    levels = {(r["document"], r["sentence"]): r["machine_level"] for r in machine["sentences"]}
    assert levels == {("a", 0): 5, ("a", 1): 1, ("a", 2): 1, ("b", 0): 5}
    first = next(p for p in machine["curve"] if p["aspect"] == "overall" and p["threshold"] == 0.0)
    # crowd 5, 2, 1, 4 vs machine 5, 1, 1, 5: exact 2 of 4, within one level 4 of 4
    assert (first["n"], first["accuracy"], first["accuracy_within_1"]) == (4, 0.5, 1.0)
    high = next(p for p in machine["curve"] if p["aspect"] == "overall" and p["threshold"] == 0.7)
    assert (high["n"], high["accuracy"]) == (2, 1.0)  # s0 (0.727) and s2 (1.0); s1, b0 at 0.636


@pytest.mark.django_db
def test_a_pending_judge_counts_once_qualified_with_one_weight_and_tie_rule_everywhere(answered):
    """w5 (pending at 2 of 3 golds) is left out; once trusted at 3/4 their answers count. Sentence s1 then
    has two answers for level 1 (w1 1.0 + w5 0.75) and two for level 2 (w2 1.0 + w3 0.75): tied in
    answers and in trust, so the lower level wins — in the ratings results and in the study-wide
    aggregation alike, with the same confidence (one weighting rule)."""
    from annotate.quality.aggregation import aggregation_rows

    def s1_of(results):
        return next(r for r in results["labels"] if (r["document"], r["sentence"]) == ("a", 1))

    before = rating_results(answered, n_boot=0)
    assert (before["answers"], before["workers"]) == (12, 3)
    w5 = Worker.objects.get(external_id="w5")
    WorkerTrust.objects.filter(study=answered, worker=w5).update(
        golds_seen=4, golds_passed=3, trust=0.75, status="trusted"
    )
    after = rating_results(answered, n_boot=0)
    assert (after["answers"], after["workers"]) == (16, 4)
    s1 = s1_of(after)
    assert (s1["majority"], s1["counts"][:2]) == (1, [2, 2])
    assert s1["confidence"] == pytest.approx(1.75 / 3.5)
    exported = {r["item"]: r for r in aggregation_rows(answered)}[s1["item"]]
    assert (exported["majority"], exported["confidence"]) == (1, pytest.approx(0.5, abs=1e-4))
    s0 = next(r for r in after["labels"] if (r["document"], r["sentence"]) == ("a", 0))
    assert exported_confidence(answered, s0["item"]) == pytest.approx(s0["confidence"], abs=1e-4)


def exported_confidence(study: Study, item_id: int) -> float:
    from annotate.quality.aggregation import aggregation_rows

    return {r["item"]: r for r in aggregation_rows(study)}[item_id]["confidence"]


@pytest.mark.django_db
def test_results_page_csv_and_access(answered, researcher, other_researcher, annotator_user):
    url = reverse("study-results", args=[answered.uid])
    client = Client()
    client.login(username=researcher.username, password=PASSWORD)
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Table 1" in html and "Figure 4" in html and "The narrator was superb." in html
    assert "No model run on this dataset has stored attention yet." in html
    labels = client.get(reverse("study-results-table", args=[answered.uid, "labels", "csv"]))
    assert labels.status_code == 200 and labels["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(labels.content.decode())))
    assert len(rows) == 5 and rows[0]["majority_text"] == "very well" and rows[0]["n_5"] == "2"
    agreement = client.get(
        reverse("study-results-table", args=[answered.uid, "agreement", "csv"])
    ).content.decode()
    assert agreement.splitlines()[0] == "aspect,a,b,n,r,r_low,r_high,kappa,kappa_low,kappa_high"
    assert client.get(f"/studies/{answered.uid}/results/oracle.csv").status_code == 404
    assert client.get(f"/studies/{answered.uid}/results/labels.jsonl").status_code == 404
    # the κ by name: the paper's distance agreement of w1 and w2 (5 1 1 3 vs 5 2 1 4) is 1 - 2 / 16
    named = client.get(
        reverse("study-results-table", args=[answered.uid, "agreement", "csv"]) + "?kappa=distance_agreement"
    )
    pair = next(r for r in csv.DictReader(io.StringIO(named.content.decode())) if r["n"] == "4"
                and {r["a"], r["b"]} == {Worker.objects.get(external_id=w).pseudonym_for(answered.owner_id) for w in ("w1", "w2")})  # fmt: skip
    assert float(pair["kappa"]) == pytest.approx(1 - 2 / 16)
    assert (
        'value="distance_agreement" selected'
        in client.get(url + "?kappa=distance_agreement").content.decode()
    )
    bad = client.get(url + "?kappa=fleiss")
    assert bad.status_code == 400 and "kappa must be one of" in bad.content.decode()
    bad_run = client.get(url + "?run=abc")
    assert bad_run.status_code == 400 and "run must be a model run id" in bad_run.content.decode()
    assert client.get(url + "?run=999999").status_code == 400
    other = Client()
    other.login(username=other_researcher.username, password=PASSWORD)
    assert other.get(url).status_code == 404
    plain = Client()
    plain.login(username=annotator_user.username, password=PASSWORD)
    assert plain.get(url).status_code == 403
    assert Client().get(url).status_code == 302


@pytest.mark.django_db
def test_results_page_with_model_chart(answered, researcher):
    run = ModelRun.objects.create(
        name="attn", owner=researcher, dataset=answered.dataset, architecture="lstm_attention"
    )
    for doc in answered.dataset.documents.all():
        Prediction.objects.create(
            model_run=run, document=doc, label="x", attention=[1.0 / len(doc.words)] * len(doc.words)
        )
    client = Client()
    client.login(username=researcher.username, password=PASSWORD)
    html = client.get(reverse("study-results", args=[answered.uid])).content.decode()
    assert 'id="machine-chart"' in html and "charts.js" in html
    machine = client.get(
        reverse("study-results-table", args=[answered.uid, "machine", "csv"]) + f"?run={run.pk}"
    ).content.decode()
    assert machine.splitlines()[0] == "aspect,threshold,n,accuracy,accuracy_within_1,pearson_r,random"
    assert len(machine.splitlines()) == 1 + 2 * 9  # overall and all, nine thresholds


# ------------------------------------------------------------------------------ annotator side


@pytest.mark.django_db
def test_annotator_never_sees_a_gold_answer(researcher):
    study = make_rating_study(researcher, gold=True, judges=1)
    client = Client(enforce_csrf_checks=True)
    page = client.post(invite_path(study, make_invite(study, "ann")), follow=True)
    html = page.content.decode()
    assert page.status_code == 200 and "hatlab/kinds/sentence_rating.js" in html
    assert "gold" not in html and "secret" not in html
    token = json.loads(
        html.split('<script id="hatlab-task" type="application/json">')[1].split("</script>")[0]
    )
    assert token["config"]["labels"][0] == {"value": 1, "text": "not at all"}
    seen = 0
    while True:
        raw = client.post(
            token["next_url"], "{}", content_type="application/json", HTTP_X_CSRFTOKEN=token["csrf_token"]
        )
        body = raw.json()
        assert "gold" not in raw.content.decode() and "secret" not in raw.content.decode()
        if body.get("done"):
            break
        payload = body["item"]["payload"]
        assert set(payload) == {"words", "breaks", "sentence", "sentence_index", "aspect", "aspect_title",
                                "aspect_description", "rating", "rating_max"}  # fmt: skip
        submit = token["submit_url_template"].replace("ASSIGNMENT", body["assignment"])
        answer = {
            "submission_key": str(uuid.uuid4()),
            "answer": {"rating": 3},
            "timings": {"read_ms": 10, "answer_ms": 5},
        }
        saved = client.post(
            submit, json.dumps(answer), content_type="application/json", HTTP_X_CSRFTOKEN=token["csrf_token"]
        )
        assert saved.status_code == 201, saved.content
        assert "gold" not in saved.content.decode()
        seen += 1
    assert seen == 10
    gold_response = Response.objects.get(item__is_gold=True)
    assert gold_response.gold_passed is False  # 3 against the gold level 4
    bad = client.post(
        token["next_url"], "{}", content_type="application/json", HTTP_X_CSRFTOKEN=token["csrf_token"]
    )
    assert bad.json()["done"] is True


@pytest.mark.django_db
def test_bad_rating_submission_is_a_400_naming_the_field(researcher):
    study = make_rating_study(researcher, judges=1)
    client = Client(enforce_csrf_checks=True)
    html = client.post(invite_path(study, make_invite(study, "ann")), follow=True).content.decode()
    token = json.loads(
        html.split('<script id="hatlab-task" type="application/json">')[1].split("</script>")[0]
    )
    headers = {"HTTP_X_CSRFTOKEN": token["csrf_token"]}
    body = client.post(token["next_url"], "{}", content_type="application/json", **headers).json()
    submit = token["submit_url_template"].replace("ASSIGNMENT", body["assignment"])
    answer = {"submission_key": str(uuid.uuid4()), "answer": {"rating": 9}}
    bad = client.post(submit, json.dumps(answer), content_type="application/json", **headers)
    assert bad.status_code == 400 and "answer.rating" in bad.json()["errors"]


# ------------------------------------------------------------------------------------------ demo


def test_demo_gold_levels_and_explanations():
    from annotate.kinds.sentence_rating.demo import sentence_gold
    from annotate.kinds.token_marking.demo import explanation_for

    text = "The pasta was bland. We sat near the window. What a rude waiter!"
    word_map = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0]
    assert sentence_gold(text, word_map) == [5, 1, 5]
    assert explanation_for(text, "negative", word_map) == (
        "The reviewer calls things bland and rude, which is why the review is negative."
    )


@pytest.mark.django_db
def test_seed_rating_demos_builds_running_studies_once(researcher):
    from annotate.kinds.sentence_rating.demo import seed_demo as seed_rating_demo
    from annotate.kinds.token_marking.demo import seed_demo as seed_marking_demo

    def seed_rating_demos(owner, reviews):
        return seed_rating_demo(owner, reviews) + seed_marking_demo(owner, reviews)

    rating, marking = seed_rating_demos(researcher, reviews=6)
    assert rating.kind == "sentence_rating" and marking.kind == "token_marking"
    assert rating.status == marking.status == Study.Status.RUNNING
    sentences = sum(len(d.sentences) for d in rating.dataset.documents.all())
    assert rating.items.count() == 2 * sentences and rating.items.filter(is_gold=True).exists()
    assert marking.items.count() == 6 and marking.items.filter(is_gold=True).count() == 2
    assert all(
        "because" in i.payload["explanation"] or "why" in i.payload["explanation"]
        for i in marking.items.all()
    )
    again = seed_rating_demos(researcher, reviews=6)
    assert [s.pk for s in again] == [rating.pk, marking.pk] and Study.objects.count() == 2
