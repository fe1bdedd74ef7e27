"""The stopping rules of adaptive redundancy (explain_engine.redundancy)."""

from __future__ import annotations

import math

import pytest

from explain_engine.api import CountedAnswer, StoppingPolicy, item_stopped
from explain_engine.redundancy import ci_width, label_posterior, label_share, map_agreement


def labels(*given, weight=1.0):
    return [CountedAnswer(label=g, weight=weight) for g in given]


def test_label_share_weighs_answers_and_skips_those_that_do_not_count():
    answers = [CountedAnswer("a", weight=0.9), CountedAnswer("b", weight=0.3), CountedAnswer("b", weight=0.0)]
    assert label_share(answers) == pytest.approx(0.75)
    assert label_share([]) == 0.0


def test_an_agreeing_item_stops_at_its_minimum_and_a_disagreeing_one_goes_on_to_its_maximum():
    policy = StoppingPolicy(minimum=3, maximum=5, rule="label_share", threshold=0.8)
    assert item_stopped(labels("a", "a"), policy) == (False, "2 of at least 3 answers")
    stopped, why = item_stopped(labels("a", "a", "a"), policy)
    assert stopped and why.startswith("label_share 1.000 >= 0.8 at 3")
    assert item_stopped(labels("a", "b", "a"), policy)[0] is False
    assert item_stopped(labels("a", "b", "a", "b"), policy)[0] is False
    stopped, why = item_stopped(labels("a", "b", "a", "b", "a"), policy)
    assert stopped and why.startswith("maximum of 5 answers")


def test_answers_that_do_not_count_neither_reach_the_minimum_nor_sway_the_rule():
    policy = StoppingPolicy(minimum=2, maximum=4, rule="label_share", threshold=0.9)
    excluded = [CountedAnswer("b", weight=0.0)] * 3
    assert item_stopped(excluded + labels("a"), policy)[0] is False
    assert item_stopped(excluded + labels("a", "a"), policy)[0] is True


def test_the_posterior_grows_with_agreement_and_with_the_annotators_accuracy():
    two = label_posterior(labels("a", "a"), categories=2, accuracy=0.75)
    assert two == pytest.approx(0.9)  # 0.75² / (0.75² + 0.25²)
    assert label_posterior(labels("a", "b"), categories=2, accuracy=0.75) == pytest.approx(0.5)
    sure = [CountedAnswer("a", accuracy=0.95), CountedAnswer("b", accuracy=0.6)]
    assert label_posterior(sure, categories=2) > 0.9
    # three categories, one never answered: it keeps its share of the mass
    assert label_posterior(labels("a"), categories=3, accuracy=0.5) == pytest.approx(0.5)


def test_map_agreement_is_the_mean_pairwise_f1():
    maps = [CountedAnswer(map=[1, 1, 0, 0]), CountedAnswer(map=[1, 0, 0, 0]), CountedAnswer(map=[1, 1, 0, 0])]
    # pairs: 2/3, 1, 2/3
    assert map_agreement(maps) == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    policy = StoppingPolicy(minimum=2, maximum=6, rule="map_agreement", threshold=0.8)
    assert item_stopped(maps[:2], policy)[0] is False
    assert item_stopped([maps[0], maps[2]], policy)[0] is True


def test_ci_width_of_ratings_narrows_with_agreement_and_of_labels_is_wilsons():
    assert ci_width([CountedAnswer(value=3)]) == math.inf
    assert ci_width([CountedAnswer(value=3), CountedAnswer(value=3)]) == 0.0
    wide = ci_width([CountedAnswer(value=v) for v in (1, 5, 3)])
    narrow = ci_width([CountedAnswer(value=v) for v in (3, 4, 3, 4, 3, 4)])
    assert wide > narrow > 0
    policy = StoppingPolicy(minimum=2, maximum=5, rule="ci_width", threshold=1.0)
    assert item_stopped([CountedAnswer(value=v) for v in (1, 5)], policy)[0] is False
    assert item_stopped([CountedAnswer(value=v) for v in (4, 4)], policy)[0] is True
    assert 0 < ci_width(labels("a", "a", "b")) < 1


def test_a_policy_refuses_an_unknown_rule_and_bounds_out_of_order():
    with pytest.raises(ValueError, match="unknown stopping rule"):
        StoppingPolicy(minimum=1, maximum=2, rule="vibes", threshold=0.5)
    with pytest.raises(ValueError, match="minimum <= maximum"):
        StoppingPolicy(minimum=3, maximum=2, rule="label_share", threshold=0.5)
