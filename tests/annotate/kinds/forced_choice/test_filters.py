"""Forced-choice results leave out answers to gold and to retired items (Lertvittayakumjorn & Toni
2019 score only the evaluation questions): the data here holds both, answered unanimously and against
the method, so counting either would move the means, the Figure 3 counts and Fleiss κ. The expected
values are worked by hand over the counted answers only."""

from __future__ import annotations

import csv
import io

import pytest

from annotate.kinds.forced_choice.results import csv_text, evaluation_results
from annotate.models import Item, Response, Worker
from annotate.quality.grading import refresh_trust
from tests.annotate.conftest import make_user
from tests.annotate.kinds.forced_choice.test_scoring import HAND, NEG, POS, answer, study_with_items

pytestmark = pytest.mark.django_db

# (text, method, split, correct answer) of the hand table, then a gold question on text 2 and a retired
# question on text 3: three confident wrong answers each (score −1, full agreement).
GOLD = (2, "occ_1", "correct", POS)
RETIRED = (3, "lrp", "misclassified", NEG)


@pytest.fixture
def owner(db):
    return make_user("rhea", "researcher")


@pytest.fixture
def workers(db):
    return [Worker.objects.create(external_id=f"w{i}") for i in range(3)]


@pytest.fixture
def mixed_study(owner, workers):
    questions = [(t, m, "correct" if t == 0 else "misclassified", POS if t == 0 else NEG) for t, m in HAND]
    study, items = study_with_items(owner, "justify", [*questions, GOLD, RETIRED], n_docs=4)
    for item, key in zip(items[: len(HAND)], HAND, strict=True):
        for worker, (choice, confident) in zip(workers, HAND[key], strict=True):
            answer(study, item, worker, choice, confident)
    gold, retired = items[-2], items[-1]
    for worker in workers:
        answer(study, gold, worker, NEG, True)
        answer(study, retired, worker, POS, True)
    Item.objects.filter(pk=gold.pk).update(is_gold=True)
    Item.objects.filter(pk=retired.pk).update(retired=True)
    # every worker passed the gold, so all are trusted: in a study with golds only trusted workers count
    Response.objects.filter(item=gold).update(gold_passed=True)
    refresh_trust(study)
    return study, gold, retired


def mean(results, method: str, split: str) -> float:
    row = next(r for r in results["scores"] if r["method"] == f"{method} (W)" and r["split"] == split)
    return row["mean"], row["n"], row["answers"]


def test_gold_and_retired_answers_do_not_count(mixed_study):
    study, gold, retired = mixed_study
    results = evaluation_results(study, n_boot=0)
    # Counted: the twelve answers of the hand table (four questions on texts 0 and 1).
    assert (results["answers"], results["questions"], results["texts"], results["workers"]) == (12, 4, 2, 3)
    # Question scores: occ_1 t0 = (1 + .5 − 1)/3 = 1/6, lrp t0 = (0 − .5 + 1)/3 = 1/6,
    # occ_1 t1 = (1 + 1 + .5)/3 = 5/6, lrp t1 = (−1 − .5 + 0)/3 = −1/2; each (method, split) mean
    # over its questions, with its number of questions and answers.
    expected = {
        ("occ_1", "all"): ((1 / 6 + 5 / 6) / 2, 2, 6),
        ("lrp", "all"): ((1 / 6 - 1 / 2) / 2, 2, 6),
        ("occ_1", "correct"): (1 / 6, 1, 3),
        ("lrp", "correct"): (1 / 6, 1, 3),
        ("occ_1", "misclassified"): (5 / 6, 1, 3),
        ("lrp", "misclassified"): (-1 / 2, 1, 3),
    }
    for (method, split), (value, n, answers) in expected.items():
        got = mean(results, method, split)
        assert got[0] == pytest.approx(value), (method, split)
        assert got[1:] == (n, answers), (method, split)
    # Figure 3 counts of −1, −0.5, 0, +0.5, +1 (the excluded questions would add three −1 each).
    assert {d["method"]: d["counts"] for d in results["distribution"]} == {
        "occ_1 (W)": [1, 0, 0, 2, 3],
        "lrp (W)": [1, 2, 2, 0, 1],
    }
    # Fleiss κ over the four counted questions, three answers each.
    # With confidence: P̄ = (0 + 0 + 1/3 + 0)/4 = 1/12; category shares (+ conf 3, + unconf 2,
    # none 2, − unconf 2, − conf 3)/12 → P_e = 30/144; κ = (1/12 − 30/144)/(1 − 30/144) = −3/19.
    # Without: P̄ = (1/3 + 0 + 1 + 1/3)/4 = 5/12; shares (5, 2, 5)/12 → P_e = 54/144; κ = 1/15.
    kappa = results["kappa"]
    assert kappa["with_confidence"]["value"] == pytest.approx(-3 / 19)
    assert kappa["without_confidence"]["value"] == pytest.approx(1 / 15)
    assert kappa["with_confidence"]["n"] == kappa["without_confidence"]["n"] == 4
    # and the answers table lists none of them
    rows = list(csv.DictReader(io.StringIO(csv_text(results, "answers"))))
    assert len(rows) == 12
    assert not {int(r["item"]) for r in rows} & {gold.pk, retired.pk}


def test_each_filter_on_its_own(mixed_study):
    """Gold-only and retired-only: each filter is needed (the other one does not cover it)."""
    study, gold, retired = mixed_study
    Item.objects.filter(pk=retired.pk).update(retired=False)
    with_retired = evaluation_results(study, n_boot=0)
    assert with_retired["answers"] == 15
    assert mean(with_retired, "lrp", "misclassified")[0] == pytest.approx((-1 / 2 - 1) / 2)
    Item.objects.filter(pk=retired.pk).update(retired=True)
    Item.objects.filter(pk=gold.pk).update(is_gold=False)
    with_gold = evaluation_results(study, n_boot=0)
    assert with_gold["answers"] == 15
    assert mean(with_gold, "occ_1", "correct")[0] == pytest.approx((1 / 6 - 1) / 2)
