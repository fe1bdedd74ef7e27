"""The crowd-worker risk score and speed signals (explain_engine.metrics.risk) on hand-made answers."""

from __future__ import annotations

import numpy as np
import pytest

from explain_engine import api
from explain_engine.metrics import risk


def test_words_per_minute_leaves_untimed_and_wordless_answers_out():
    wpm = risk.words_per_minute(np.array([100, 100, 0, 50, 10]), np.array([60_000, np.nan, 1_000, 0, -5]))
    assert wpm[0] == pytest.approx(100.0)
    assert np.isnan(wpm[1]) and np.isnan(wpm[2]) and np.isnan(wpm[4])
    assert np.isinf(wpm[3])


def test_noisy_or_and_entropy():
    assert risk.combine(np.array([]), np.array([])) == 0.0
    assert risk.combine(np.array([0.8, 0.7]), np.array([1.0, 1.0])) == pytest.approx(1 - 0.2 * 0.3)
    assert risk.combine(np.array([0.7]), np.array([3.0])) == pytest.approx(0.7)
    assert risk.answer_entropy(np.array([0, 1]), 4) == pytest.approx(0.5)
    assert np.isnan(risk.answer_entropy(np.array([0, 0]), 1))


def answers(n: int = 12, **given) -> dict:
    data = {
        "workers": [7] * n,
        "words": [100] * n,
        "time_ms": [30_000.0] * n,  # 200 wpm
        "events": [5] * n,
        "page": [True] * n,
        "from_page": [True] * n,
        "categories": ["positive", "negative"] * (n // 2),
        "n_categories": 2,
        "strategies": [[] for _ in range(n)],
        "gold": [None] * n,
        "max_wpm": 714.0,
        "trust_threshold": 0.7,
        "risk_threshold": 0.5,
    }
    data.update(given)
    return data


def test_risk_report_scores_each_worker_from_plain_lists():
    assert api.risk_report(**answers()) == {7: api.WorkerRisk(7, 12, 0.0, False, [])}
    script = api.risk_report(**answers(time_ms=[1_000.0] * 11 + [None], events=[0] * 12))[7]
    assert [r.code for r in script.reasons] == ["speed", "no_interaction"]
    assert script.reasons[0].strength == pytest.approx(1.0)  # 11 of 11 timed answers
    assert script.reasons[0].evidence.startswith("11 of 11 answers faster than 714 words per minute")
    assert script.score == pytest.approx(1 - 0.2 * 0.3) and script.flagged
    gold = [False, False, False, True] + [None] * 8
    mixed = api.risk_report(**answers(workers=[1] * 6 + [2] * 6, gold=gold, categories=["a"] * 12))
    assert {w: [r.code for r in r_.reasons] for w, r_ in mixed.items()} == {
        1: ["same_answer", "gold"],
        2: ["same_answer"],
    }
    assert mixed[1].score == pytest.approx(1 - (1 - 0.4) * (1 - 0.6 * 0.75))
    assert not mixed[2].flagged and mixed[2].as_dict()["score"] == 0.4


def test_signal_report_times_per_word_against_the_median():
    report = api.signal_report(
        workers=[1, 1, 2, 2],
        read_ms=[1000, None, 10_000, None],
        answer_ms=[0, None, 1_000, 12_000],
        words=[10, 10, 10, 10],
        fast_ratio=0.33,
    )
    assert report["answers"] == [
        {"time_ms": 1000, "ms_per_word": 100.0, "fast": True},  # under a third of the median 1100
        {"time_ms": None, "ms_per_word": None, "fast": False},
        {"time_ms": 11_000, "ms_per_word": 1100.0, "fast": False},
        {"time_ms": 12_000, "ms_per_word": 1200.0, "fast": False},
    ]
    assert report["workers"] == {
        1: {"responses": 2, "median_time_ms": 1000, "fast": 1},
        2: {"responses": 2, "median_time_ms": 11_500, "fast": 0},
    }
    mask, median = api.fast_mask(np.array([np.nan]), 0.5)
    assert mask.tolist() == [False] and np.isnan(median)
    assert api.signal_report(workers=[], read_ms=[], answer_ms=[], words=[], fast_ratio=0.3) == {
        "answers": [],
        "workers": {},
    }
