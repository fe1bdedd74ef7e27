"""The reports a results page asks for in one call, on hand-made answers: sentence ratings (Pappas &
Popescu-Belis 2016), token marking and importance alignment (Prasad et al. 2021) and forced choice
(Lertvittayakumjorn & Toni 2019), each checked by hand or against the engine's parts it combines."""

from __future__ import annotations

import numpy as np
import pytest

from explain_engine import api


def test_rating_report_labels_summary_agreement_and_machine():
    sentences = [
        {"item": 10, "aspect": "food", "document": 1, "sentence": 0},
        {"item": 11, "aspect": "food", "document": 1, "sentence": 1},
        {"item": 12, "aspect": "staff", "document": 2, "sentence": 0},
    ]
    # three workers rate items 10 and 11; item 12 has no answer
    items = [10, 10, 10, 11, 11, 11]
    workers = [1, 2, 3, 1, 2, 3]
    ratings = [5, 5, 1, 2, 2, 2]
    weights = [1.0, 1.0, 0.5, 1.0, 1.0, 1.0]
    attention = {1: ([0.1, 0.1, 0.5, 0.3], [(0, 2), (2, 4)])}
    report = api.rating_report(
        sentences=sentences,
        items=items,
        workers=workers,
        ratings=ratings,
        weights=weights,
        worker_names={1: "A", 2: "B", 3: "C"},
        aspects=["food", "staff"],
        min_judges=3,
        n_boot=0,
        attention=attention,
    )
    first, second, unrated = report["labels"]
    assert first == {
        "item": 10,
        "responses": 3,
        "majority": 5,
        "confidence": pytest.approx(2 / 2.5),
        "mean": pytest.approx(11 / 3),
        "counts": [1, 0, 0, 0, 2],
        "enough_judges": True,
    }
    assert second["majority"] == 2 and second["confidence"] == 1.0
    assert unrated == {
        "item": 12,
        "responses": 0,
        "majority": None,
        "confidence": None,
        "mean": None,
        "counts": [0] * 5,
        "enough_judges": False,
    }
    food, staff, every = report["summary"]
    assert (food["aspect"], food["sentences"], food["labelled"], food["judgments"]) == ("food", 2, 2, 6)
    assert food["mean_confidence"] == pytest.approx((0.8 + 1.0) / 2) and food["distribution"] == [
        0,
        1,
        0,
        0,
        1,
    ]
    assert (staff["labelled"], staff["mean_confidence"], every["aspect"], every["sentences"]) == (
        0,
        None,
        "all",
        3,
    )
    matrix, _, _ = api.rating_matrix(items, workers, ratings)
    pairs = api.pairwise_agreement(matrix, ["A", "B", "C"], n_boot=0)
    assert [p for p in report["agreement"]["pairs"] if p["aspect"] == "all"] == [
        {"aspect": "all", **p} for p in pairs
    ]
    assert report["agreement"]["averages"][1] == {"aspect": "staff", "pairs": 0, "r": None, "kappa": None}
    machine = report["machine"]
    assert machine["skipped"] == 0 and [c["item"] for c in machine["compared"]] == [10, 11]
    assert [c["machine_score"] for c in machine["compared"]] == pytest.approx([0.2, 0.8])
    levels = api.attention_levels(api.sentence_scores([0.1, 0.1, 0.5, 0.3], [(0, 2), (2, 4)]))
    assert [c["machine_level"] for c in machine["compared"]] == levels.tolist()
    assert {p["aspect"] for p in machine["curve"]} == {"food", "staff", "all"}


def test_marking_report_oracles_top_words_and_agreement():
    words = [["the", "cat", "sat"], ["a", "dog"], ["no", "marks"]]
    markings = [[[0, 1, 1], [0, 1, 0]], [[1, 0]], []]
    report = api.marking_report(words, markings, n_boot=0, top=2)
    assert report["examples"] == [
        {
            "oracle": [0.0, 1.0, 0.5],
            "top_words": [{"word": "cat", "share": 1.0}, {"word": "sat", "share": 0.5}],
        },
        {"oracle": [1.0, 0.0], "top_words": [{"word": "a", "share": 1.0}]},
        {"oracle": None, "top_words": []},
    ]
    assert report["agreement"]["items"] == 1
    assert report["agreement"]["fleiss_kappa"] == api.marking_agreement(markings[:2], n_boot=0).to_dict()
    assert api.marking_report([["x"]], [[[1]]])["agreement"] is None


def test_alignment_report_reads_missing_scores_as_zero():
    words = [["a", "good", "film"], ["bad", "plot", "here"], ["fine", "acting", "too"]]
    explanations = ["good film", "bad plot", "fine acting"]
    markings = [[[0, 1, 1]], [[1, 1, 0]], [[1, 1, 0]]]
    stored = [[None, 0.9, 0.4], [0.8, float("nan"), 0.1], [0.7, 0.6, 0.0]]
    report = api.alignment_report(words, explanations, markings, stored, n_boot=0)
    clean = [[0.0, 0.9, 0.4], [0.8, 0.0, 0.1], [0.7, 0.6, 0.0]]
    expected = api.marking_alignment(words, explanations, markings, [np.array(a) for a in clean], n_boot=0)
    assert report["attributions"] == clean
    assert report["examples"] == expected["examples"] and report["hard"] == expected["hard"]


def test_forced_choice_report_scores_distribution_and_kappa():
    # two methods on two texts, two workers each; scores as Table 1 gives them
    answers = {
        "questions": [1, 1, 2, 2, 3, 3, 4, 4],
        "texts": [100, 100, 200, 200, 100, 100, 200, 200],
        "methods": ["lrp", "lrp", "lrp", "lrp", "lime", "lime", "lime", "lime"],
        "splits": ["correct"] * 8,
        "scores": [1.0, 0.5, 1.0, -0.5, 0.0, -1.0, 0.5, 0.0],
        "picked": ["a", "a", "a", "b", None, "b", "a", None],
        "confident": [True, False, True, False, False, True, False, False],
    }
    report = api.forced_choice_report(
        **answers, options=["a", "b"], method_order=["lrp", "lime", "unused"], n_boot=0
    )
    means = {(r["split"], r["method"]): r["mean"] for r in report["scores"]}
    assert means[("all", "lrp")] == pytest.approx((0.75 + 0.25) / 2)
    assert means[("all", "lime")] == pytest.approx((-0.5 + 0.25) / 2)
    assert report["distribution"] == [
        {"method": "lrp", "answers": 4, "counts": [0, 1, 0, 1, 2], "shares": [0.0, 0.25, 0.0, 0.25, 0.5]},
        {"method": "lime", "answers": 4, "counts": [1, 0, 2, 1, 0], "shares": [0.25, 0.0, 0.5, 0.25, 0.0]},
        {"method": "unused", "answers": 0, "counts": [0] * 5, "shares": [None] * 5},
    ]
    kappa = api.forced_choice_kappa(
        answers["questions"], answers["picked"], answers["confident"], ["a", "b"], n_boot=0
    )
    assert report["kappa"] == {key: est.to_dict() for key, est in kappa.items()}
    empty = {key: [] for key in answers}
    assert (
        api.forced_choice_report(**empty, options=["a", "b"], method_order=["lrp"], n_boot=0)["scores"] == []
    )
