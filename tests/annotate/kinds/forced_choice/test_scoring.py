"""Answers, scores and agreement of the forced-choice tasks checked against hand-worked values
(Lertvittayakumjorn & Toni 2019, Table 1 scores, Table 4 means per split, Fleiss κ with and without confidence levels)."""

from __future__ import annotations

import csv
import io
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.exceptions import ValidationError
from scipy.stats import wilcoxon

from annotate.kinds.forced_choice.results import csv_text, evaluation_results
from annotate.models import Assignment, Item, Response, Study, Worker, WorkerTrust
from annotate.tasks import get_kind
from tests.annotate.conftest import make_user
from tests.annotate.kinds.forced_choice.test_generation import make_run, make_texts

pytestmark = pytest.mark.django_db

NEG, POS, NONE = "negative", "positive", "no preference"


def study_with_items(
    owner, kind: str, questions: list[tuple[int, str, str, str]], n_docs: int, name: str = "texts"
) -> tuple[Study, list]:
    """A running study of ``kind`` whose items are ``(text index, method, split, correct answer)``."""
    dataset, docs = make_texts(owner, n_docs, name=name)
    run = make_run(owner, dataset)
    run_field = (
        {"better_run": run.pk, "worse_run": make_run(owner, dataset, "poor").pk}
        if kind == "reveal_model"
        else {"model_run": run.pk}
    )
    methods = list(dict.fromkeys(q[1] for q in questions))
    config = get_kind(kind).validate_config({**run_field, "methods": methods, "split": "all"})
    study = Study.objects.create(
        name="scored", owner=owner, dataset=dataset, kind=kind, config=config, status=Study.Status.RUNNING
    )
    items = Item.objects.bulk_create(
        [
            Item(
                study=study,
                document=docs[t],
                position=i,
                payload={"evidence": ["x"]},
                secret={
                    "method": m,
                    "method_label": f"{m} (W)",
                    "split": split,
                    "answer": answer,
                    "document": docs[t].pk,
                    "external_id": docs[t].external_id,
                },  # fmt: skip
            )
            for i, (t, m, split, answer) in enumerate(questions)
        ]
    )
    return study, items


def answer(study: Study, item: Item, worker: Worker, choice: str, confident: bool | None) -> Response:
    slot = Assignment.objects.filter(item=item).count()
    assignment = Assignment.objects.create(
        study=study, item=item, worker=worker, slot=slot, status=Assignment.Status.SUBMITTED,
        expires_at=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    return Response.objects.create(
        assignment=assignment, study=study, item=item, worker=worker, submission_key=uuid.uuid4(),
        answer={"choice": choice, "confident": confident},
    )  # fmt: skip


@pytest.fixture
def owner(db):
    return make_user("rhea", "researcher")


@pytest.fixture
def workers(db):
    return [Worker.objects.create(external_id=f"w{i}") for i in range(3)]


# Two texts (t1 predicted correctly, t2 misclassified), two methods, three workers. The correct
# answer in justify is the predicted class: positive for t1, negative for t2.
HAND = {
    (0, "occ_1"): [(POS, True), (POS, False), (NEG, True)],  # +1, +0.5, −1  → 1/6
    (0, "lrp"): [(NONE, None), (NEG, False), (POS, True)],  # 0, −0.5, +1  → 1/6
    (1, "occ_1"): [(NEG, True), (NEG, True), (NEG, False)],  # +1, +1, +0.5  → 5/6
    (1, "lrp"): [(POS, True), (POS, False), (NONE, None)],  # −1, −0.5, 0  → −1/2
}


@pytest.fixture
def hand_study(owner, workers):
    questions = [(t, m, "correct" if t == 0 else "misclassified", POS if t == 0 else NEG) for t, m in HAND]
    study, items = study_with_items(owner, "justify", questions, n_docs=2)
    for item, key in zip(items, HAND, strict=True):
        for worker, (choice, confident) in zip(workers, HAND[key], strict=True):
            answer(study, item, worker, choice, confident)
    return study


def cell(results, method: str, split: str) -> dict:
    return next(r for r in results["scores"] if r["method"] == f"{method} (W)" and r["split"] == split)


def test_scores_per_method_and_split_match_the_hand_worked_table(hand_study):
    results = evaluation_results(hand_study, n_boot=200)
    assert results["answers"] == 12 and results["questions"] == 4 and results["texts"] == 2
    assert results["workers"] == 3
    expected = {
        ("occ_1", "all"): (1 / 6 + 5 / 6) / 2,
        ("lrp", "all"): (1 / 6 - 1 / 2) / 2,
        ("occ_1", "correct"): 1 / 6,
        ("lrp", "correct"): 1 / 6,
        ("occ_1", "misclassified"): 5 / 6,
        ("lrp", "misclassified"): -1 / 2,
    }
    for (method, split), mean in expected.items():
        row = cell(results, method, split)
        assert row["mean"] == pytest.approx(mean)
        assert row["ci_low"] <= row["mean"] <= row["ci_high"]
    assert cell(results, "occ_1", "all")["best"] and cell(results, "occ_1", "misclassified")["best"]
    assert cell(results, "lrp", "all")["test"] == "wilcoxon"
    assert [r["method"] for r in results["table"]] == ["occ_1 (W)", "lrp (W)"]
    assert [c["split"] for c in results["table"][0]["cells"]] == ["all", "correct", "misclassified"]
    # Figure 3: counts of −1, −0.5, 0, +0.5, +1 per method.
    dist = {d["method"]: d["counts"] for d in results["distribution"]}
    assert dist == {"occ_1 (W)": [1, 0, 0, 2, 3], "lrp (W)": [1, 2, 2, 0, 1]}


def test_fleiss_kappa_with_and_without_confidence_matches_the_hand_value(hand_study):
    kappa = evaluation_results(hand_study, n_boot=0)["kappa"]
    # With confidence (5 categories): P̄ = 1/12, P_e = 30/144 → κ = −3/19.
    assert kappa["with_confidence"]["value"] == pytest.approx(-3 / 19)
    assert kappa["with_confidence"]["categories"] == 5
    # Without (3 categories): P̄ = 5/12, P_e = 54/144 → κ = 1/15.
    assert kappa["without_confidence"]["value"] == pytest.approx(1 / 15)
    assert kappa["without_confidence"]["categories"] == 3


def test_significance_against_the_best_method(owner, workers):
    """Ten texts on which m1 always scores +1 and m2 −1 or −0.5: m2 differs significantly."""
    questions = [(t, m, "correct", POS if t % 2 else NEG) for t in range(10) for m in ("occ_1", "lrp")]
    study, items = study_with_items(owner, "justify", questions, n_docs=10)
    m2_scores = []
    for item, (t, m, _, right) in zip(items, questions, strict=True):
        wrong = NEG if right == POS else POS
        confident = t % 3 != 0
        choice, sure = (right, True) if m == "occ_1" else (wrong, confident)
        answer(study, item, workers[0], choice, sure)
        if m == "lrp":
            m2_scores.append(-1.0 if confident else -0.5)
    results = evaluation_results(study, n_boot=100)
    row = cell(results, "lrp", "all")
    assert row["p_value"] == pytest.approx(wilcoxon([1.0] * 10, m2_scores).pvalue)
    assert row["p_value"] < 0.05 and row["different_from_best"]
    ttest = cell(evaluation_results(study, test="ttest", n_boot=0), "lrp", "all")
    assert ttest["test"] == "ttest" and ttest["different_from_best"]


def test_excluded_workers_and_gold_items_are_left_out(hand_study, workers):
    WorkerTrust.objects.create(
        study=hand_study, worker=workers[2], status="excluded", trust=0.2, golds_seen=5
    )
    results = evaluation_results(hand_study, n_boot=0)
    assert results["answers"] == 8
    # m1 on t1 without the third worker: (+1 + 0.5) / 2 = 0.75.
    assert cell(results, "occ_1", "correct")["mean"] == pytest.approx(0.75)


def test_csv_tables(hand_study):
    results = evaluation_results(hand_study, n_boot=100)
    scores = list(csv.DictReader(io.StringIO(csv_text(results, "scores"))))
    assert len(scores) == 6
    first = next(r for r in scores if r["method"] == "lrp (W)" and r["split"] == "misclassified")
    assert float(first["mean"]) == pytest.approx(-0.5)
    dist = list(csv.DictReader(io.StringIO(csv_text(results, "distribution"))))
    assert [(r["score"], r["count"]) for r in dist if r["method"] == "occ_1 (W)"] == [
        ("-1.0", "1"), ("-0.5", "0"), ("0.0", "0"), ("0.5", "2"), ("1.0", "3"),
    ]  # fmt: skip
    kappa = {r["measure"]: r for r in csv.DictReader(io.StringIO(csv_text(results, "kappa")))}
    assert float(kappa["with_confidence"]["kappa"]) == pytest.approx(-3 / 19, abs=1e-6)
    answers = list(csv.DictReader(io.StringIO(csv_text(results, "answers"))))
    assert len(answers) == 12 and {a["worker"][:1] for a in answers} == {"w"}
    assert sorted(float(a["score"]) for a in answers if a["method"] == "occ_1 (W)") == [-1, 0.5, 0.5, 1, 1, 1]
    with pytest.raises(ValueError, match="unknown table"):
        csv_text(results, "nope")


def test_a_study_without_answers_has_empty_tables(owner):
    study, _ = study_with_items(owner, "investigate", [(0, "occ_1", "correct", POS)], n_docs=1)
    results = evaluation_results(study, n_boot=0)
    assert results["answers"] == 0 and results["scores"] == []
    assert results["table"] == [{"method": "occ_1 (W)", "cells": [None, None, None]}]
    assert results["distribution"][0]["counts"] == [0, 0, 0, 0, 0]


# ------------------------------------------------------------------------------- answers of each kind


@pytest.mark.parametrize(
    ("kind", "right", "wrong"), [("reveal_model", "A", "B"), ("justify", POS, NEG), ("investigate", POS, NEG)]
)
def test_table1_scores_of_each_kind(owner, kind, right, wrong):
    study, items = study_with_items(owner, kind, [(0, "occ_1", "correct", right)], n_docs=1)
    item = items[0]
    item.study = study
    k = get_kind(kind)
    cases = [((right, True), 1.0), ((right, False), 0.5), ((wrong, False), -0.5), ((wrong, True), -1.0)]
    if kind != "investigate":
        cases.append(((NONE, None), 0.0))
    for (choice, confident), score in cases:
        cleaned = k.validate_answer(item, {"choice": choice, "confident": confident}, {})
        assert k.score(item.secret, cleaned) == score
    if kind == "investigate":
        with pytest.raises(ValidationError) as caught:
            k.validate_answer(item, {"choice": NONE, "confident": None}, {})
        assert "choice" in caught.value.detail["answer"]


def test_answer_validation_and_agreement_categories(owner):
    study, items = study_with_items(owner, "reveal_model", [(0, "occ_1", "correct", "A")], n_docs=1)
    item = items[0]
    item.study = study
    kind = get_kind("reveal_model")
    bad = [
        ("not an object", "non_field_errors"),
        ({"choice": "C", "confident": True}, "choice"),
        ({"choice": "A"}, "confident"),
        ({"choice": "A", "confident": "yes"}, "confident"),
        ({"choice": NONE, "confident": True}, "confident"),
        ({"choice": "A", "confident": True, "method": "x"}, "method"),
    ]
    for value, field in bad:
        with pytest.raises(ValidationError) as caught:
            kind.validate_answer(item, value, {})
        assert field in caught.value.detail["answer"], value
    assert kind.validate_answer(item, {"choice": NONE, "confident": False}, {}) == {
        "choice": NONE,
        "confident": None,
    }
    assert kind.categories(study) == ["A confident", "A unconfident", NONE, "B confident", "B unconfident"]
    assert kind.agreement_value({"choice": "B", "confident": False}) == "B unconfident"
    assert kind.agreement_value({"choice": NONE, "confident": None}) == NONE
    choices = kind.public_config(study)["choices"]
    assert [(c["choice"], c["confident"]) for c in choices] == [
        ("A", True), ("A", False), (NONE, None), ("B", False), ("B", True),
    ]  # fmt: skip
    investigate = get_kind("investigate")
    study3, _ = study_with_items(owner, "investigate", [(0, "occ_1", "correct", POS)], n_docs=1, name="other")
    assert len(investigate.categories(study3)) == 4 and NONE not in investigate.categories(study3)
