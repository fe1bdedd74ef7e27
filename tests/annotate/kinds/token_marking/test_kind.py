"""The token_marking kind (Prasad et al. 2021's expert oracle): config, items, answers, gold grading;
the results page's expert oracle, agreement and importance alignment against hand-worked answers, and
its CSV; no gold marking reaches an annotator. The alignment arithmetic itself is the engine's
(tests/engine/test_metrics_crowd.py)."""

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
from annotate.kinds.token_marking.results import explanation_methods, marking_results
from annotate.models import (
    Assignment,
    Dataset,
    Document,
    Explanation,
    Item,
    ModelRun,
    Response,
    Study,
    Worker,
    WorkerTrust,
)
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.annotate.conftest import PASSWORD

KIND = get_kind("token_marking")
INPUTS = [
    ("p1", "A man plays a guitar on stage .", "entailment", "A guitar is played by a man on a stage."),
    ("p2", "Two dogs run through the snow .", "contradiction", "Dogs cannot run and sleep at once."),
    ("p3", "A woman reads a book in the park .", "neutral", "The park is not said to be sunny."),
]
GOLD_P3 = [0, 1, 0, 0, 0, 0, 0, 1, 0]


def make_marking_study(
    owner, *, judges: int = 3, gold: bool = False, start: bool = True, controls: bool = False
) -> Study:
    dataset = Dataset.objects.create(owner=owner, name=f"nli-{uuid.uuid4().hex[:6]}")
    for external, text, label, explanation in INPUTS:
        metadata = {"explanation": explanation}
        if gold and external == "p3":
            metadata["gold_marks"] = GOLD_P3
        Document.from_text(dataset, external, text, label=label, metadata=metadata).save()
    study = Study.objects.create(
        name="expert oracle",
        owner=owner,
        dataset=dataset,
        kind="token_marking",
        config=KIND.validate_config({"random_controls": controls}),
        annotators_per_item=judges,
        provider_config={"open_enrollment": True},
    )
    if start:
        start_study(study)
    return study


def give(item: Item, worker: Worker, word_map: list[int]) -> Response:
    assignment = Assignment.objects.create(
        study=item.study, item=item, worker=worker, slot=item.assignments.count(),
        status=Assignment.Status.SUBMITTED, expires_at=timezone.now(), submitted_at=timezone.now(),
    )  # fmt: skip
    return Response.objects.create(
        assignment=assignment, study=item.study, item=item, worker=worker,
        submission_key=uuid.uuid4(), answer={"map": word_map},
    )  # fmt: skip


def test_config_defaults_and_bad_fields():
    assert KIND.validate_config({}) == {
        "max_items_per_worker": None,
        "require_mark": True,
        "gold_overlap": 0.5,
        "overlap_measure": "f1",
        "random_controls": False,
    }
    for config, field in (
        ({"gold_overlap": 2}, "gold_overlap"),
        ({"overlap_measure": "x"}, "overlap_measure"),
    ):
        with pytest.raises(ValidationError) as exc:
            KIND.validate_config(config)
        assert field in exc.value.detail


@pytest.mark.django_db
def test_items_show_input_label_and_explanation(researcher):
    study = make_marking_study(researcher, gold=True)
    items = list(study.items.order_by("position"))
    assert len(items) == 3
    assert items[0].payload == {
        "words": ["A", "man", "plays", "a", "guitar", "on", "stage", "."],
        "breaks": [],
        "label": "entailment",
        "explanation": "A guitar is played by a man on a stage.",
    }
    assert [i.is_gold for i in items] == [False, False, True]
    assert items[2].secret == {"gold": {"map": GOLD_P3}}
    assert "gold" not in json.dumps(KIND.public_payload(items[2]))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({}, "metadata.explanation must be a text"),
        ({"explanation": "  "}, "metadata.explanation must be a text"),
        ({"explanation": "ok", "gold_marks": [1]}, "metadata.gold_marks must be 2 values"),
    ],
)
def test_bad_documents_name_the_document_and_field(researcher, metadata, message):
    study = make_marking_study(researcher, start=False)
    Document.from_text(study.dataset, "bad", "two words", label="neutral", metadata=metadata).save()
    with pytest.raises(ValidationError) as exc:
        KIND.build_items(study)
    text = str(exc.value.detail["dataset"][0])
    assert "'bad'" in text and message in text


def test_answers_and_gold_grading():
    study = Study(kind="token_marking", config=KIND.validate_config({}))
    item = Item(study=study, payload={"words": ["a", "b", "c", "d"]}, secret={"gold": {"map": [1, 1, 0, 0]}})
    assert KIND.validate_answer(item, {"map": [0, 1, 0, 0]}, {}) == {"map": [0, 1, 0, 0]}
    for bad in ({"map": [0, 0, 0, 0]}, {"map": [1, 0]}, {"map": [1, 0, 0, 2]}, {"map": [True, 0, 0, 0]}, {}):
        with pytest.raises(ValidationError) as exc:
            KIND.validate_answer(item, bad, {})
        assert "map" in exc.value.detail["answer"]
    study.config = KIND.validate_config({"require_mark": False})
    assert KIND.validate_answer(item, {"map": [0, 0, 0, 0]}, {}) == {"map": [0, 0, 0, 0]}
    # F1 with the gold map: {b} vs {a, b} = 2/3 passes 0.5; {c, d} = 0 fails
    assert KIND.grade_gold(item, {"map": [0, 1, 0, 0]}) is True
    assert KIND.grade_gold(item, {"map": [0, 0, 1, 1]}) is False
    assert KIND.grade_gold(Item(study=study, secret={}), {"map": [1, 0, 0, 0]}) is None
    assert KIND.categories(study) == [0, 1] and KIND.agreement_value({"map": [1]}) is None


@pytest.fixture
def marked(researcher):
    """p1 marked by three workers, p2 by two, p3 by none; an excluded worker's marks never count."""
    study = make_marking_study(researcher)
    w1, w2, w3, w4 = (Worker.objects.create(external_id=f"m{i}") for i in range(1, 5))
    WorkerTrust.objects.create(
        study=study, worker=w4, golds_seen=4, golds_passed=0, trust=0.0, status="excluded"
    )
    p1, p2, _ = study.items.order_by("position")
    give(p1, w1, [0, 1, 1, 0, 1, 0, 0, 0])
    give(p1, w2, [0, 1, 0, 0, 1, 0, 1, 0])
    give(p1, w3, [0, 0, 1, 0, 1, 0, 0, 0])
    give(p1, w4, [1, 1, 1, 1, 1, 1, 1, 1])
    give(p2, w1, [0, 1, 1, 1, 0, 0, 0])
    give(p2, w2, [0, 0, 1, 1, 0, 0, 0])
    return study


@pytest.mark.django_db
def test_marking_results_oracle_agreement_and_alignment(marked, researcher):
    results = marking_results(marked, n_boot=50)
    assert (results["answers"], results["workers"], results["marked_items"]) == (5, 3, 2)
    p1, p2, p3 = results["examples"]
    assert p1["oracle"] == pytest.approx([0, 2 / 3, 2 / 3, 0, 1, 0, 1 / 3, 0], abs=1e-6)
    assert p1["top_words"][0] == {"word": "guitar", "share": 1.0}
    assert p3["oracle"] is None and p3["annotators"] == 0
    # Fleiss κ over the 15 words of p1 and p2 (marked / not marked)
    assert results["agreement"]["fleiss_kappa"]["n"] == 15 and results["agreement"]["items"] == 2
    assert results["alignment"] is None

    run = ModelRun.objects.create(name="bert", owner=researcher, dataset=marked.dataset, architecture="cnn")
    docs = {d.external_id: d for d in marked.dataset.documents.all()}
    ig_p1 = [0.0, 0.5, 0.4, 0.0, 0.9, 0.0, -0.3, 0.0]
    ig_p2 = [0.1, 0.2, 0.8, -0.6, 0.0, 0.0, 0.1]
    Explanation.objects.create(
        model_run=run, document=docs["p1"], method="grad_dot_int_s", target="entailment", scores=ig_p1
    )
    Explanation.objects.create(
        model_run=run, document=docs["p1"], method="grad_dot_int_s", target="neutral", scores=[9] * 8
    )
    Explanation.objects.create(
        model_run=run, document=docs["p2"], method="grad_dot_int_s", target="contradiction", scores=ig_p2
    )
    Explanation.objects.create(
        model_run=run, document=docs["p1"], method="attention", target="entailment", scores=[1] * 8
    )
    assert explanation_methods(run) == ["grad_dot_int_s", "attention"]
    results = marking_results(marked, run, "grad_dot_int_s", n_boot=50)
    alignment = results["alignment"]
    assert alignment["examples"] == 2 and alignment["skipped"] == 0
    # no control items: the expert oracle has no C_R of its own, and none is borrowed from the hard oracle
    assert (
        alignment["expert"] is None
        and "C_R for the expert oracle is unavailable" in alignment["expert_unavailable"]
    )
    assert alignment["per_example"][0]["c_expert"] is None and alignment["hard"] is not None
    hard_p1 = [0, 1, 0, 0, 1, 0, 1, 0]  # "man", "guitar", "stage" (NLTK stop words left out)
    expected_c = np.arctanh(np.corrcoef(np.abs(ig_p1), hard_p1)[0, 1])  # the gold label's target
    assert alignment["per_example"][0]["c_hard"] == pytest.approx(expected_c, rel=1e-5)
    assert alignment["per_example"][0]["random_partner"] == "p2"
    assert results["examples"][0]["attribution"] == pytest.approx(ig_p1)
    too_few = marking_results(marked, run, "attention", n_boot=50)["alignment"]
    assert too_few["examples"] == 1 and "at least two" in too_few["error"]
    # p2's attributions are for "neutral" only, not its gold "contradiction": an error naming p2, no ΔA
    Explanation.objects.create(
        model_run=run, document=docs["p1"], method="grad_l2_int_s", target="entailment", scores=ig_p1
    )
    Explanation.objects.create(
        model_run=run, document=docs["p2"], method="grad_l2_int_s", target="neutral", scores=ig_p2
    )
    wrong = marking_results(marked, run, "grad_l2_int_s", n_boot=0)["alignment"]
    assert "document 'p2'" in wrong["error"] and "gold label" in wrong["error"] and "expert" not in wrong


@pytest.mark.django_db
def test_results_page_and_csv(marked, researcher, other_researcher):
    run = ModelRun.objects.create(name="bert", owner=researcher, dataset=marked.dataset, architecture="cnn")
    for doc in marked.dataset.documents.all():
        scores = [float((i * 7) % 5) - 1.5 for i in range(len(doc.words))]
        Explanation.objects.create(
            model_run=run, document=doc, method="grad_dot_int_s", target=doc.label, scores=scores
        )
    client = Client()
    client.login(username=researcher.username, password=PASSWORD)
    url = reverse("study-results", args=[marked.uid])
    html = client.get(url).content.decode()
    assert "Importance alignment" in html and "grad_dot_int_s" in html and 'id="alignment-chart"' in html
    assert "A guitar is played by a man on a stage." in html
    assert "C_R for the expert oracle is unavailable" in html  # no control items in this study
    oracle = client.get(reverse("study-results-table", args=[marked.uid, "oracle", "csv"])).content.decode()
    rows = list(csv.DictReader(io.StringIO(oracle)))
    assert len(rows) == 15 and rows[4]["word"] == "guitar" and float(rows[4]["share"]) == 1.0
    assert rows[4]["attribution"] != ""
    examples = client.get(
        reverse("study-results-table", args=[marked.uid, "examples", "csv"])
    ).content.decode()
    assert examples.splitlines()[0] == (
        "item,document,random_partner,c_expert,c_random_expert,c_hard,c_random_hard"
    )
    assert len(examples.splitlines()) == 3
    none = client.get(url + "?run=none").content.decode()
    assert "Importance alignment" in none and 'id="alignment-chart"' not in none
    no_method = client.get(url + f"?run={run.pk}&method=lime")
    assert no_method.status_code == 400 and no_method.content.decode().startswith("method")
    assert client.get(f"/studies/{marked.uid}/results/labels.csv").status_code == 404
    other = Client()
    other.login(username=other_researcher.username, password=PASSWORD)
    assert other.get(url).status_code == 404


@pytest.mark.django_db
def test_annotator_never_sees_a_gold_marking(researcher):
    study = make_marking_study(researcher, judges=1, gold=True)
    client = Client(enforce_csrf_checks=True)
    html = client.post(invite_path(study, make_invite(study, "ann")), follow=True).content.decode()
    assert "hatlab/kinds/token_marking.js" in html and "gold" not in html and "secret" not in html
    token = json.loads(
        html.split('<script id="hatlab-task" type="application/json">')[1].split("</script>")[0]
    )
    headers = {"HTTP_X_CSRFTOKEN": token["csrf_token"]}
    answered = 0
    while True:
        raw = client.post(token["next_url"], "{}", content_type="application/json", **headers)
        text = raw.content.decode()
        assert "gold" not in text and "secret" not in text and str(GOLD_P3) not in text.replace('", "', '","')
        body = raw.json()
        if body.get("done"):
            break
        payload = body["item"]["payload"]
        assert set(payload) == {"words", "breaks", "label", "explanation"}
        submit = token["submit_url_template"].replace("ASSIGNMENT", body["assignment"])
        word_map = [1] + [0] * (len(payload["words"]) - 1)
        answer = {"submission_key": str(uuid.uuid4()), "answer": {"map": word_map}}
        saved = client.post(submit, json.dumps(answer), content_type="application/json", **headers)
        assert saved.status_code == 201 and "gold" not in saved.content.decode()
        again = client.post(submit, json.dumps(answer), content_type="application/json", **headers)
        assert again.status_code == 200 and again.json() == saved.json()  # stored once
        answered += 1
    assert answered == 3 and Response.objects.filter(study=study).count() == 3
    assert Response.objects.get(item__is_gold=True).gold_passed is False


@pytest.mark.django_db
def test_control_items_pair_each_input_with_another_explanation_unlabelled(researcher):
    study = make_marking_study(researcher, controls=True, gold=True)
    items = list(study.items.order_by("position"))
    own, controls = items[:3], items[3:]
    assert len(controls) == 2  # the gold input p3 gets no control
    explanations = {i.document.external_id: i.payload["explanation"] for i in own}
    for control in controls:
        doc = control.document.external_id
        partner = control.secret["control"]["explanation_of"]
        assert partner != doc and control.payload["explanation"] == explanations[partner]
        mine = next(i for i in own if i.document_id == control.document_id)
        assert control.payload["words"] == mine.payload["words"] and not control.is_gold
        public = KIND.public_payload(control)
        assert set(public) == set(KIND.public_payload(mine))
        assert "control" not in json.dumps(public) and "explanation_of" not in json.dumps(public)
    lone = make_marking_study(researcher, controls=True, start=False)
    Document.objects.filter(dataset=lone.dataset).exclude(external_id="p1").delete()
    with pytest.raises(ValidationError) as exc:
        KIND.build_items(lone)
    assert "random_controls" in exc.value.detail["config"]


@pytest.mark.django_db
def test_expert_c_r_comes_from_the_marks_of_the_control_items(researcher):
    study = make_marking_study(researcher, controls=True)
    by_doc: dict = {}
    for item in study.items.order_by("position"):
        by_doc.setdefault(item.document.external_id, []).append(item)
    (p1, c1), (p2, c2), (p3, _) = by_doc["p1"], by_doc["p2"], by_doc["p3"]
    w1, w2 = (Worker.objects.create(external_id=f"c{i}") for i in (1, 2))
    give(p1, w1, [0, 1, 0, 0, 1, 0, 1, 0])
    give(p1, w2, [0, 0, 1, 0, 1, 0, 0, 0])
    give(p2, w1, [0, 1, 1, 1, 0, 0, 0])
    give(p3, w1, [0, 1, 1, 0, 1, 0, 0, 1, 0])
    # marks against the random explanation: on p1 the attributed words, on p2 the unattributed ones
    give(c1, w1, [1, 0, 0, 0, 1, 0, 0, 0])
    give(c1, w2, [1, 1, 0, 0, 1, 0, 0, 0])
    give(c2, w2, [1, 0, 0, 0, 1, 1, 1])  # p3's control has no marks: p3 is left out
    run = ModelRun.objects.create(name="cnn", owner=researcher, dataset=study.dataset, architecture="cnn")
    ig = {"p1": [0.9, 0.1, 0.0, 0.0, 0.8, 0.0, -0.3, 0.0], "p2": [0.1, 0.2, 0.8, -0.6, 0.0, 0.0, 0.1]}
    ig["p3"] = [0.2] * 9
    for item in (p1, p2, p3):
        Explanation.objects.create(
            model_run=run, document=item.document, method="grad_dot_int_s",
            target=item.document.label, scores=ig[item.document.external_id],
        )  # fmt: skip
    results = marking_results(study, run, "grad_dot_int_s", n_boot=0)
    assert results["items"] == 3 and results["controls"] == 3 and len(results["examples"]) == 3
    alignment = results["alignment"]
    assert alignment["examples"] == 2 and alignment["without_control_marks"] == 1
    rows = {row["document"]: row for row in alignment["per_example"]}

    def c(attr, oracle):
        return np.arctanh(np.corrcoef(np.abs(attr), oracle)[0, 1])

    assert rows["p1"]["random_partner"] == c1.secret["control"]["explanation_of"]
    assert rows["p1"]["c_expert"] == pytest.approx(c(ig["p1"], [0, 0.5, 0.5, 0, 1, 0, 0.5, 0]), rel=1e-5)
    assert rows["p1"]["c_random_expert"] == pytest.approx(c(ig["p1"], [1, 0.5, 0, 0, 1, 0, 0, 0]), rel=1e-5)
    assert rows["p2"]["c_random_expert"] == pytest.approx(c(ig["p2"], [1, 0, 0, 0, 1, 1, 1]), rel=1e-5)
    # the hard oracle's C_R reads the control's explanation, which shares no word with p2: constant, no C_R
    assert rows["p2"]["c_random_hard"] is None and rows["p2"]["c_hard"] is not None
    expert = alignment["expert"]
    diffs = [rows[d]["c_expert"] - rows[d]["c_random_expert"] for d in ("p1", "p2")]
    assert expert["delta_a"]["value"] == pytest.approx(np.tanh(np.mean(diffs)), rel=1e-6)
    assert expert["delta_a"]["n"] == 2 and "expert_unavailable" not in alignment
