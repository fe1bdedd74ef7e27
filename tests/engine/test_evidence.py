"""Evidence and counter-evidence selection (Lertvittayakumjorn & Toni 2019 §4.3)."""

from __future__ import annotations

import numpy as np
import pytest

from explain_engine.evidence import (
    evidence_and_counter,
    ngram_scores,
    select_evidence,
    top_ngrams,
    top_words,
)
from explain_engine.explainers import explain
from tests.engine.test_explainers import linear_bundle


def test_top_words_and_counter_words():
    scores = [0.1, 3.0, -2.0, 0.5, -0.4, 3.0]
    assert top_words(scores, 3) == [1, 5, 3]  # ties keep text order
    assert top_words(scores, 2, counter=True) == [2, 4]
    assert top_words(scores, 10) == [1, 5, 3, 0, 4, 2]


def test_ngram_scores_are_window_sums():
    np.testing.assert_allclose(ngram_scores(np.array([1.0, 2.0, 3.0, 4.0]), 2), [3, 5, 7])
    np.testing.assert_allclose(ngram_scores(np.array([1.0, 2.0, 3.0]), 3), [6])


def test_top_ngrams_do_not_overlap_and_follow_the_sums():
    scores = np.array([0.0, 5.0, 5.0, 0.0, -1.0, 4.0, 0.0, 0.0, -3.0, -3.0])
    chosen = top_ngrams(scores, sizes=(2,), m=3)
    assert chosen[0] == (1, 3, 10.0)
    assert chosen[1] == (5, 7, 4.0)
    spans = [set(range(a, b)) for a, b, _ in chosen]
    assert all(not (x & y) for i, x in enumerate(spans) for y in spans[i + 1 :])
    counter = top_ngrams(scores, sizes=(2,), m=1, counter=True)
    assert counter == [(8, 10, -6.0)]
    # Several sizes compete on the sum of their words' relevance (Lertvittayakumjorn & Toni 2019 §4.3).
    mixed = top_ngrams(scores, sizes=(2, 3, 4), m=1)
    assert mixed[0][2] == pytest.approx(max(ngram_scores(scores, n).max() for n in (2, 3, 4)))


def test_short_texts_give_one_ngram():
    assert top_ngrams([1.0], sizes=(2, 3), m=3) == [(0, 1, 1.0)]
    assert top_ngrams([], sizes=(2,), m=3) == []


def test_evidence_is_returned_as_character_spans():
    text = "The  food was great,\nbut the service was slow."
    scores = [0.0, 0.2, 0.0, 2.0, 0.0, 0.0, 0.3, 0.0, -1.5]
    ev = select_evidence(text, scores, m=2)
    assert [e.text for e in ev] == ["great,", "service"]
    assert all(text[e.start : e.end] == e.text for e in ev)
    grams = select_evidence(text, scores, m=1, sizes=(2,))
    assert grams[0].text == "was great," and (grams[0].first_word, grams[0].end_word) == (2, 4)
    both = evidence_and_counter(text, scores, m=1, sizes=(3,))
    assert both["counter_evidence"][0].text == "service was slow."
    assert both["evidence"][0].to_dict()["score"] == pytest.approx(2.2)
    with pytest.raises(ValueError, match="scores for"):
        select_evidence(text, scores[:-1])


def test_evidence_of_a_linear_model_names_its_known_words():
    bundle = linear_bundle()
    text = "the food was tasty and great but the service slow and cold"
    scores = explain(bundle, [text], method="grad_dot_1s", target=1)[0]
    both = evidence_and_counter(text, scores, m=2)
    assert [e.text for e in both["evidence"]] == ["great", "tasty"]
    assert [e.text for e in both["counter_evidence"]] == ["cold", "slow"]


def test_random_ngram_evidence_is_made_of_whole_random_segments():
    bundle = linear_bundle()
    text = " ".join(["food"] * 30)
    seen = set()
    for seed in range(6):
        scores = explain(bundle, [text], method="random_ngram", seed=seed, sizes=(3,))[0]
        chosen = top_ngrams(scores, sizes=(3,), m=3)
        assert all(b - a == 3 for a, b, _ in chosen)
        seen.add(tuple(a for a, _, _ in chosen))
    assert len(seen) > 3
