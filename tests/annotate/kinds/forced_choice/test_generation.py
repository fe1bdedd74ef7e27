"""Question generation of Lertvittayakumjorn & Toni 2019's three tasks from hand-made prediction and explanation rows:
thresholds (strict), the half/half split, the same-class rule, explanation coverage, the test split,
the randomised A/B sides and the too-few-texts error. (Row builders here are shared with the other
forced-choice tests.)"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from rest_framework.exceptions import ValidationError

from annotate.kinds.forced_choice.generation import (
    TooFewTexts,
    WordScores,
    build_items,
    evidence_of,
    explanation_scores,
    half_counts,
)
from annotate.machine.explaining import DETECTED_NGRAMS
from annotate.models import Dataset, Document, Explanation, Item, ModelRun, Prediction, Study
from annotate.tasks import get_kind
from explain_engine.api import select_evidence
from tests.annotate.conftest import make_user

pytestmark = pytest.mark.django_db

LABELS = ["negative", "positive"]
METHODS = ["grad_l2_1s", "occ_1"]


def other(label: str) -> str:
    return LABELS[1 - LABELS.index(label)]


def make_texts(owner, n: int, name: str = "texts") -> tuple[Dataset, list[Document]]:
    """``n`` labelled documents (alternating labels) of eight plain words each."""
    dataset = Dataset.objects.create(owner=owner, name=name, labels=LABELS)
    docs = Document.objects.bulk_create(
        [
            Document.from_text(
                dataset, f"t{i:03d}", f"w{i}a w{i}b w{i}c w{i}d w{i}e w{i}f w{i}g w{i}h", label=LABELS[i % 2]
            )
            for i in range(n)
        ]
    )
    return dataset, docs


def make_run(owner, dataset, name: str = "run", accuracy: float | None = None) -> ModelRun:
    metrics = {"labels": LABELS}
    if accuracy is not None:
        metrics["test"] = {"accuracy": accuracy}
    return ModelRun.objects.create(
        name=name,
        owner=owner,
        dataset=dataset,
        architecture="cnn",
        status=ModelRun.Status.DONE,
        metrics=metrics,
    )


def word_scores(doc: Document, run: ModelRun, method: str) -> list[float]:
    """Distinct, reproducible scores per (document, run, method)."""
    rng = np.random.default_rng([doc.pk, run.pk, len(method)])
    return rng.normal(size=len(doc.words)).round(4).tolist()


def predict(run, doc, label: str, p: float, methods=METHODS, target: str | None = None) -> Prediction:
    """A prediction of ``label`` with max probability ``p`` and, for every method, an explanation for
    ``target`` (default: the predicted class)."""
    for method in methods:
        Explanation.objects.create(
            model_run=run,
            document=doc,
            method=method,
            target=target or label,
            scores=word_scores(doc, run, method),
        )
    return Prediction.objects.create(
        model_run=run, document=doc, label=label, probabilities={label: p, other(label): round(1 - p, 6)}
    )


def make_study(owner, dataset, kind: str, config: dict, annotators: int = 1) -> Study:
    config = {"methods": METHODS, "split": "all", **config}
    return Study.objects.create(
        name=f"{kind} study",
        owner=owner,
        dataset=dataset,
        kind=kind,
        config=get_kind(kind).validate_config(config),
        annotators_per_item=annotators,
    )


def chosen(items) -> dict[int, str]:
    """``{document id: split}`` of the generated items."""
    return {item.document_id: item.secret["split"] for item in items}


@pytest.fixture
def owner(db):
    return make_user("rhea", "researcher")


# ------------------------------------------------------------------------------------------- justify


def justify_rows(owner):
    """Ten texts: three right with p > 0.9, one right at exactly 0.9 (not above), three wrong with
    p > 0.9, and three below the threshold."""
    dataset, docs = make_texts(owner, 10)
    run = make_run(owner, dataset)
    plan = [(0.95, True), (0.99, True), (0.93, True), (0.9, True), (0.91, False), (0.97, False),
            (0.92, False), (0.6, True), (0.55, False), (0.89, False)]  # fmt: skip
    for doc, (p, right) in zip(docs, plan, strict=True):
        predict(run, doc, doc.label if right else other(doc.label), p)
    qualified = {CORRECT: {docs[i].pk for i in (0, 1, 2)}, MISCLASSIFIED: {docs[i].pk for i in (4, 5, 6)}}
    return dataset, docs, run, qualified


CORRECT, MISCLASSIFIED = "correct", "misclassified"


def test_justify_takes_texts_above_tau_h_half_right_half_wrong(owner):
    dataset, docs, run, qualified = justify_rows(owner)
    study = make_study(owner, dataset, "justify", {"model_run": run.pk, "n_texts": 6, "m": 2})
    items = build_items(study, get_kind("justify"))
    picked = chosen(items)
    # Exactly the texts above 0.9 (0.9 itself is not above), three of each split.
    assert {d for d, s in picked.items() if s == CORRECT} == qualified[CORRECT]
    assert {d for d, s in picked.items() if s == MISCLASSIFIED} == qualified[MISCLASSIFIED]
    assert len(items) == 6 * len(METHODS)
    assert Counter((i.document_id, i.secret["method"]) for i in items) == Counter(
        {(d, m): 1 for d in picked for m in METHODS}
    )
    by_pk = {d.pk: d for d in docs}
    predictions = dict(Prediction.objects.filter(model_run=run).values_list("document_id", "label"))
    for item in items:
        doc = by_pk[item.document_id]
        assert set(item.payload) == {"evidence"}
        assert item.secret["answer"] == predictions[doc.pk]  # the model's class, even when wrong
        assert item.secret["split"] == (CORRECT if predictions[doc.pk] == doc.label else MISCLASSIFIED)
        assert item.secret["probability"] > 0.9
        expected = select_evidence(
            doc.text, word_scores(doc, run, item.secret["method"]), 2, None, spans=doc.words
        )
        assert item.payload["evidence"] == [e.text for e in expected]


def test_justify_draws_half_and_half_from_more_texts(owner):
    dataset, docs, run, qualified = justify_rows(owner)
    study = make_study(owner, dataset, "justify", {"model_run": run.pk, "n_texts": 4})
    picked = chosen(build_items(study, get_kind("justify")))
    assert Counter(picked.values()) == {CORRECT: 2, MISCLASSIFIED: 2}
    assert set(picked) <= qualified[CORRECT] | qualified[MISCLASSIFIED]
    # The same seed draws the same texts; another seed may not, but always from the qualified ones.
    assert chosen(build_items(study, get_kind("justify"))) == picked


def test_justify_too_few_texts_says_how_many_qualified(owner):
    dataset, _, run, _ = justify_rows(owner)
    study = make_study(owner, dataset, "justify", {"model_run": run.pk, "n_texts": 8})
    with pytest.raises(TooFewTexts) as caught:
        build_items(study, get_kind("justify"))
    assert caught.value.found == {CORRECT: 3, MISCLASSIFIED: 3}
    assert caught.value.needed == {CORRECT: 4, MISCLASSIFIED: 4}
    message = str(caught.value.detail["config"]["n_texts"][0])
    assert "needs 4 correctly predicted and 4 misclassified" in message
    assert "only 3 correctly predicted and 3 misclassified texts qualify" in message
    # A higher threshold leaves fewer.
    study.config["tau_h"] = 0.95
    with pytest.raises(TooFewTexts) as caught:
        build_items(study, get_kind("justify"))
    assert caught.value.found == {CORRECT: 1, MISCLASSIFIED: 1}


def test_texts_without_every_explanation_do_not_qualify_and_are_counted(owner):
    dataset, docs = make_texts(owner, 4)
    run = make_run(owner, dataset)
    predict(run, docs[0], docs[0].label, 0.95)
    predict(run, docs[1], other(docs[1].label), 0.95)
    predict(run, docs[2], other(docs[2].label), 0.95, methods=METHODS[:1])  # one method missing
    # An explanation for the other class does not explain the prediction.
    predict(run, docs[3], other(docs[3].label), 0.95, target=docs[3].label)
    study = make_study(owner, dataset, "justify", {"model_run": run.pk, "n_texts": 4})
    with pytest.raises(TooFewTexts) as caught:
        build_items(study, get_kind("justify"))
    assert caught.value.found == {CORRECT: 1, MISCLASSIFIED: 1}
    assert "2 more meet the rule but lack an explanation" in caught.value.message
    study.config["n_texts"] = 2
    assert set(chosen(build_items(study, get_kind("justify")))) == {docs[0].pk, docs[1].pk}


# --------------------------------------------------------------------------------------- investigate


def test_investigate_takes_texts_below_tau_l_with_evidence_and_counter_evidence(owner):
    dataset, docs = make_texts(owner, 8)
    run = make_run(owner, dataset)
    plan = [(0.69, True), (0.55, True), (0.7, True), (0.6, False), (0.51, False), (0.7, False),
            (0.95, True), (0.99, False)]  # fmt: skip
    for doc, (p, right) in zip(docs, plan, strict=True):
        predict(run, doc, doc.label if right else other(doc.label), p)
    study = make_study(owner, dataset, "investigate", {"model_run": run.pk, "n_texts": 4, "m": 3})
    items = build_items(study, get_kind("investigate"))
    picked = chosen(items)
    assert picked == {
        docs[0].pk: CORRECT,
        docs[1].pk: CORRECT,
        docs[3].pk: MISCLASSIFIED,
        docs[4].pk: MISCLASSIFIED,
    }
    by_pk = {d.pk: d for d in docs}
    for item in items:
        doc = by_pk[item.document_id]
        payload = item.payload
        assert set(payload) == {"predicted", "probability", "evidence", "counter_evidence", "counter_labels"}
        assert payload["probability"] < 0.7
        assert payload["counter_labels"] == [other(payload["predicted"])]
        assert item.secret["answer"] == doc.label  # the true class
        scores = word_scores(doc, run, item.secret["method"])
        assert payload["evidence"] == [e.text for e in select_evidence(doc.text, scores, 3, spans=doc.words)]
        bottom = select_evidence(doc.text, scores, 3, counter=True, spans=doc.words)
        assert payload["counter_evidence"] == [e.text for e in bottom]
    with pytest.raises(TooFewTexts) as caught:
        build_items(make_study(owner, dataset, "investigate", {"model_run": run.pk, "n_texts": 6}),
                    get_kind("investigate"))  # fmt: skip
    assert caught.value.found == {CORRECT: 2, MISCLASSIFIED: 2}


def test_ngram_evidence_variant_uses_the_same_scores(owner):
    dataset, docs = make_texts(owner, 2)
    run = make_run(owner, dataset)
    predict(run, docs[0], docs[0].label, 0.95)
    predict(run, docs[1], other(docs[1].label), 0.95)
    config = {
        "model_run": run.pk,
        "n_texts": 2,
        "methods": ["occ_1", {"method": "occ_1", "ngram_sizes": [2, 3]}],
    }
    study = make_study(owner, dataset, "justify", config)
    assert [m["label"] for m in study.config["methods"]] == ["occ_1 (W)", "occ_1 (N)"]
    items = build_items(study, get_kind("justify"))
    assert len(items) == 4
    for item in items:
        doc = next(d for d in docs if d.pk == item.document_id)
        sizes = item.secret["ngram_sizes"]
        expected = select_evidence(doc.text, word_scores(doc, run, "occ_1"), 3, sizes, spans=doc.words)
        assert item.payload["evidence"] == [e.text for e in expected]
        assert all(len(t.split()) >= 2 for t in item.payload["evidence"]) == (sizes is not None)


# -------------------------------------------------------------------------------------- reveal_model


def reveal_rows(owner):
    """Twelve texts. Both runs agree on 0–7 (0–3 right, 4–7 wrong), disagree on 8–11; the better
    run is right on 0–3 and 8–11, the poorer one on 0–3 only."""
    dataset, docs = make_texts(owner, 12)
    good, poor = make_run(owner, dataset, "good"), make_run(owner, dataset, "poor")
    for i, doc in enumerate(docs):
        good_label = doc.label if i < 4 or i >= 8 else other(doc.label)
        poor_label = doc.label if i < 4 else other(doc.label)
        predict(good, doc, good_label, 0.8)
        predict(poor, doc, poor_label, 0.6)
    return dataset, docs, good, poor


def test_reveal_model_same_class_half_and_half_with_random_recorded_sides(owner):
    dataset, docs, good, poor = reveal_rows(owner)
    config = {"better_run": good.pk, "worse_run": poor.pk, "n_texts": 8, "m": 2}
    study = make_study(owner, dataset, "reveal_model", config)
    items = build_items(study, get_kind("reveal_model"))
    picked = chosen(items)
    assert picked == {
        **{docs[i].pk: CORRECT for i in range(4)},
        **{docs[i].pk: MISCLASSIFIED for i in range(4, 8)},
    }
    predictions = {
        run.pk: dict(Prediction.objects.filter(model_run=run).values_list("document_id", "label"))
        for run in (good, poor)
    }
    sides = Counter()
    by_pk = {d.pk: d for d in docs}
    for item in items:
        doc, secret, payload = by_pk[item.document_id], item.secret, item.payload
        assert set(payload) == {"words", "breaks", "predicted", "evidence"}
        assert payload["words"] == doc.text.split()
        assert payload["predicted"] == predictions[good.pk][doc.pk] == predictions[poor.pk][doc.pk]
        assert set(secret["sides"].values()) == {good.pk, poor.pk}
        assert secret["answer"] == ("A" if secret["sides"]["A"] == good.pk else "B")
        sides[secret["answer"]] += 1
        for side in "AB":
            run = ModelRun.objects.get(pk=secret["sides"][side])
            expected = select_evidence(doc.text, word_scores(doc, run, secret["method"]), 2, spans=doc.words)
            assert payload["evidence"][side] == [[e.first_word, e.end_word] for e in expected]
    assert sides["A"] > 0 and sides["B"] > 0  # 16 questions: both sides occur


def test_reveal_model_needs_same_class_texts_and_a_quality_gap(owner):
    dataset, docs, good, poor = reveal_rows(owner)
    study = make_study(
        owner, dataset, "reveal_model", {"better_run": good.pk, "worse_run": poor.pk, "n_texts": 10}
    )
    with pytest.raises(TooFewTexts) as caught:
        build_items(study, get_kind("reveal_model"))
    assert caught.value.found == {CORRECT: 4, MISCLASSIFIED: 4}  # the disagreements (8–11) never count
    assert "both models predict as the same class" in caught.value.message
    swapped = make_study(
        owner, dataset, "reveal_model", {"better_run": poor.pk, "worse_run": good.pk, "n_texts": 2}
    )
    with pytest.raises(ValidationError, match="differ clearly in quality") as err:
        build_items(swapped, get_kind("reveal_model"))
    assert "accuracy 0.333" in str(err.value) and "against 0.667" in str(err.value)


def test_test_split_comes_from_the_runs_artifact(owner, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    dataset, docs, run, _ = justify_rows(owner)
    study = make_study(owner, dataset, "justify", {"model_run": run.pk, "n_texts": 2, "split": "test"})
    with pytest.raises(ValidationError, match="has no record of its test split"):
        build_items(study, get_kind("justify"))
    folder = tmp_path / "models" / "run-x"
    folder.mkdir(parents=True)
    test_ids = [docs[i].external_id for i in (1, 5, 7)]
    (folder / "splits.json").write_text(json.dumps({"train": [], "validation": [], "test": test_ids}))
    ModelRun.objects.filter(pk=run.pk).update(artifact="models/run-x")
    picked = chosen(build_items(study, get_kind("justify")))
    assert picked == {docs[1].pk: CORRECT, docs[5].pk: MISCLASSIFIED}
    study.config["n_texts"] = 4
    with pytest.raises(TooFewTexts) as caught:
        build_items(study, get_kind("justify"))
    assert caught.value.found == {CORRECT: 1, MISCLASSIFIED: 1}


# ---------------------------------------------------------------------------------- items and config


def test_items_are_shuffled_and_keep_secrets_out_of_the_payload(owner):
    dataset, docs, run, _ = justify_rows(owner)
    study = make_study(owner, dataset, "justify", {"model_run": run.pk, "n_texts": 6}, annotators=3)
    items = build_items(study, get_kind("justify"))
    Item.objects.bulk_create(items)
    stored = list(Item.objects.filter(study=study).order_by("position"))
    assert [i.position for i in stored] == list(range(12))
    assert all(i.responses_needed == 3 for i in stored)
    methods_in_order = [i.secret["method"] for i in stored]
    assert methods_in_order != sorted(methods_in_order)  # not grouped by method
    kind = get_kind("justify")
    for item in stored:
        public = json.dumps(kind.public_payload(item))
        for secret_value in (item.secret["method"], item.secret["method_label"], '"split"', "true_label"):
            assert secret_value not in public
    assert half_counts(5) == {CORRECT: 3, MISCLASSIFIED: 2}


def test_config_validation_names_the_field(owner):
    dataset, docs, run, _ = justify_rows(owner)
    kind = get_kind("justify")
    config = kind.validate_config({"model_run": run.pk, "methods": ["occ_1"]})
    assert config["m"] == 3 and config["n_texts"] == 100 and config["tau_h"] == 0.9
    assert config["split"] == "test" and config["one_method_per_text_per_worker"] is True
    assert config["labels"] == LABELS
    assert config["methods"] == [{"method": "occ_1", "ngram_sizes": None, "label": "occ_1 (W)"}]
    assert (
        get_kind("investigate").validate_config({"model_run": run.pk, "methods": ["occ_1"]})["tau_l"] == 0.7
    )
    bad = [
        ({"model_run": run.pk, "methods": ["no_such_method"]}, "methods"),
        ({"model_run": run.pk, "methods": []}, "methods"),
        ({"model_run": run.pk, "methods": ["occ_1", "occ_1"]}, "methods"),
        ({"model_run": 999999, "methods": ["occ_1"]}, "model_run"),
        ({"model_run": run.pk, "methods": ["occ_1"], "tau_h": 1.5}, "tau_h"),
        ({"model_run": run.pk, "methods": ["occ_1"], "m": 0}, "m"),
        ({"model_run": run.pk, "methods": ["occ_1"], "labels": ["a", "b"]}, "labels"),
        ({"model_run": run.pk, "methods": [{"method": "occ_1", "ngram_sizes": [0]}]}, "methods"),
    ]
    for config, field in bad:
        with pytest.raises(ValidationError) as caught:
            kind.validate_config(config)
        assert field in caught.value.detail, (config, caught.value.detail)
    reveal = get_kind("reveal_model")
    with pytest.raises(ValidationError) as caught:
        reveal.validate_config({"better_run": run.pk, "worse_run": run.pk, "methods": ["occ_1"]})
    assert "worse_run" in caught.value.detail
    unfinished = ModelRun.objects.create(name="q", owner=owner, dataset=dataset, architecture="cnn")
    with pytest.raises(ValidationError, match="has not finished training"):
        kind.validate_config({"model_run": unfinished.pk, "methods": ["occ_1"]})


def test_a_run_of_another_dataset_or_researcher_is_refused(owner):
    dataset, docs, run, _ = justify_rows(owner)
    other_dataset, _ = make_texts(owner, 2, name="other")
    study = make_study(owner, other_dataset, "justify", {"model_run": run.pk, "n_texts": 2})
    with pytest.raises(ValidationError, match="the study's dataset must be the one"):
        build_items(study, get_kind("justify"))
    stranger = make_user("sam", "researcher")
    theirs = make_study(stranger, dataset, "justify", {"model_run": run.pk, "n_texts": 2})
    with pytest.raises(ValidationError, match="belongs to another researcher"):
        build_items(theirs, get_kind("justify"))


def test_counter_evidence_comes_from_a_methods_own_counter_scores(owner):
    """Grad-CAM-Text stores its evidence part as the scores and its min part as ``counter_scores``
    (Lertvittayakumjorn & Toni 2019 eq. 1); the investigate task ranks counter-evidence by the latter."""
    dataset, docs = make_texts(owner, 4)
    run = make_run(owner, dataset)
    for doc, (p, right) in zip(docs, [(0.6, True), (0.65, True), (0.6, False), (0.55, False)], strict=True):
        predict(run, doc, doc.label if right else other(doc.label), p)
    counter = {}
    for doc in docs:
        values = [0.0] * len(doc.words)
        values[(doc.pk % 5) + 1] = -2.0  # the one counter-evidence word, never the bottom of the scores
        counter[doc.pk] = values
        Explanation.objects.filter(document=doc, method="occ_1").update(counter_scores=values)
    study = make_study(owner, dataset, "investigate", {"model_run": run.pk, "n_texts": 4, "m": 1})
    items = build_items(study, get_kind("investigate"))
    by_pk = {d.pk: d for d in docs}
    seen = set()
    for item in items:
        doc = by_pk[item.document_id]
        method = item.secret["method"]
        scores = word_scores(doc, run, method)
        evidence = select_evidence(doc.text, scores, 1, spans=doc.words)
        assert item.payload["evidence"] == [e.text for e in evidence]  # evidence: the top of the scores
        if method == "occ_1":
            expected = select_evidence(doc.text, counter[doc.pk], 1, counter=True, spans=doc.words)
            assert item.payload["counter_evidence"] == [e.text for e in expected]
            own_bottom = select_evidence(doc.text, scores, 1, counter=True, spans=doc.words)
            assert expected[0].text != own_bottom[0].text or int(np.argmin(scores)) == (doc.pk % 5) + 1
        else:
            bottom = select_evidence(doc.text, scores, 1, counter=True, spans=doc.words)
            assert item.payload["counter_evidence"] == [e.text for e in bottom]
        seen.add(method)
    assert seen == set(METHODS)


def test_evidence_of_a_method_that_detected_its_ngrams_is_chosen_among_them(owner):
    """Grad-CAM-Text's evidence is an n-gram its filters detected (Lertvittayakumjorn & Toni 2019 §4.3.1),
    when questions are made from stored explanations too: the detected ranges are stored with the scores."""
    dataset, (doc,) = make_texts(owner, 1)
    run = make_run(owner, dataset)
    scores = [
        0.1,
        0.2,
        5.0,
        4.0,
        0.3,
        0.2,
        3.0,
        0.1,
    ]  # the best pair of words (2, 4) was detected by no filter
    Explanation.objects.create(
        model_run=run,
        document=doc,
        method="gradcam",
        target=doc.label,
        scores=scores,
        diagnostics={DETECTED_NGRAMS: [[0, 2], [5, 7], [6, 8]]},
    )
    stored = explanation_scores(run, {doc.pk: doc.label}, ["gradcam"])[(doc.pk, "gradcam")]
    assert stored.candidates == [(0, 2), (5, 7), (6, 8)]
    chosen = evidence_of(doc, stored, 1, [2])
    assert [(e.first_word, e.end_word) for e in chosen] == [(5, 7)]
    anywhere = evidence_of(doc, WordScores(scores), 1, [2])  # without the detected ranges: any bigram
    assert [(e.first_word, e.end_word) for e in anywhere] == [(2, 4)]
