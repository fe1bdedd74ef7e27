"""Figures the web app's dashboards and quality pages ask the engine for, on hand-made data: map overlap,
observed agreement, agreement with the leave-one-out majority, word tables of human maps and the gold
review's counts."""

from __future__ import annotations

import numpy as np
import pytest

from explain_engine import api


def test_map_overlap_f1_and_jaccard():
    a, b = [1, 1, 0, 0], [1, 0, 1, 0]
    assert api.map_overlap(a, b, "f1") == pytest.approx(0.5)
    assert api.map_overlap(a, b, "jaccard") == pytest.approx(1 / 3)
    assert api.map_overlap([0, 0], [0, 0]) == 1.0
    with pytest.raises(ValueError, match="unknown overlap measure"):
        api.map_overlap(a, b, "cosine")


def test_observed_agreement_is_fleiss_p_bar():
    assert api.observed_agreement(np.array([[3, 0], [2, 1], [1, 0]])) == pytest.approx((1 + 1 / 3) / 2)
    assert api.observed_agreement([[1, 0]]) is None


def test_majority_agreement_leaves_the_answer_out_of_its_majority():
    counts = np.array([[2, 1], [1, 1]])  # item 0: two votes a, one b; item 1: a tie
    # worker 7 voted a on item 0 (counted): the others are 1 a / 1 b, a tie: no majority
    # worker 8 voted b on item 0 (counted): the others are 2 a: disagrees
    # worker 9 voted a on item 0 but is not counted: the majority is 2 a: agrees
    # worker 7 voted a on item 1 (counted): the others are 0 a / 1 b: disagrees
    agreement = api.majority_agreement(
        [0, 0, 0, 1], [0, 1, 0, 0], [7, 8, 9, 7], [True, True, False, True], counts
    )
    assert agreement == {7: (0, 1), 8: (0, 1), 9: (1, 1)}
    assert api.majority_agreement([], [], [], [], counts) == {}


def test_word_table_counts_selections_of_texts_with_two_maps():
    humans = api.HumanMaps.from_records(
        [
            {"id": "a", "words": ["x", "y"], "annotations": [{"map": [1, 0]}, {"map": [1, 1]}]},
            {"id": "b", "words": ["z"], "annotations": [{"map": [1]}]},
        ],
        min_maps=1,
    )
    assert humans.word_table().tolist() == [[0, 2], [1, 1]]


def test_gold_review_counts_trust_judges_on_the_other_golds():
    # two golds (1, 2); worker 5 passes both, worker 6 misses gold 1 and passes gold 2, worker 7 is excluded
    tallies = api.gold_review_counts(
        items=[1, 2, 1, 2, 1],
        workers=[5, 5, 6, 6, 7],
        passed=[True, True, False, True, True],
        passed_total=[2, 2, 1, 1, 1],
        seen_total=[2, 2, 2, 2, 1],
        in_totals=[True] * 5,
        counted_golds=2,
        min_golds=1,
        threshold=0.7,
        excluded=[7],
    )
    # gold 1: judged by 5 (trust on gold 2: 1.0) and 6 (trust on gold 2: 1.0); 7 is excluded
    # gold 2: judged by 5 (trust on gold 1: 1.0) and 6 (trust on gold 1: 0.0, not trusted)
    assert tallies == {1: (3, 1, 2, 1), 2: (2, 0, 1, 0)}
    assert api.gold_review_counts(
        items=[], workers=[], passed=[], passed_total=[], seen_total=[], in_totals=[],
        counted_golds=0, min_golds=1, threshold=0.7, excluded=[],
    ) == {}  # fmt: skip
