"""The task-kind registry and the highlight kind: config schema, payload, answers, gold grading."""

from __future__ import annotations

import pytest
from rest_framework.exceptions import ValidationError

from annotate.corpus.demo_reviews import NEGATIVE, POSITIVE, generate_reviews, sentiment_map
from annotate.models import Item, Study
from annotate.tasks import TASK_KINDS, get_kind
from annotate.tasks.base import TaskKind
from annotate.tasks.page_words import is_binary_map, map_overlap, word_breaks
from annotate.tasks.page_words import word_payload as highlight_payload
from explain_engine.api import word_spans

KIND = get_kind("highlight")


def test_registry_holds_the_highlight_kind():
    assert isinstance(TASK_KINDS["highlight"], TaskKind)
    assert (
        KIND.template == "annotate/work/_task_base.html" and KIND.page_script == "hatlab/kinds/highlight.js"
    )
    with pytest.raises(KeyError, match="unknown task kind 'nope'"):
        get_kind("nope")


def test_config_defaults():
    config = KIND.validate_config({})
    assert config == {
        "max_items_per_worker": None,
        "mode": "read_first",
        "labels": ["positive", "negative", "cannot decide"],
        "undecided_label": "cannot decide",
        "require_highlight": True,
        "gold_overlap": 0.5,
        "overlap_measure": "f1",
    }


def test_config_without_an_undecided_label():
    assert KIND.validate_config({"labels": ["pos", "neg"]})["undecided_label"] is None


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"mode": "sideways"}, "mode"),
        ({"labels": ["only"]}, "labels"),
        ({"labels": ["a", "a"]}, "labels"),
        ({"labels": ["a", "b"], "undecided_label": "c"}, "undecided_label"),
        ({"gold_overlap": 1.5}, "gold_overlap"),
        ({"max_items_per_worker": 0}, "max_items_per_worker"),
    ],
)
def test_bad_config_names_the_field(config, field):
    with pytest.raises(ValidationError) as exc:
        KIND.validate_config(config)
    assert field in exc.value.detail


def test_payload_lists_words_and_line_breaks():
    text = "Great food.\nBad  service\n\nok then"
    payload = highlight_payload(text, [list(s) for s in word_spans(text)])
    assert payload == {"words": ["Great", "food.", "Bad", "service", "ok", "then"], "breaks": [2, 4]}
    assert word_breaks("one two", [[0, 3], [4, 7]]) == []


def test_public_payload_never_contains_the_secret():
    item = Item(payload={"words": ["a"], "breaks": []}, secret={"gold": {"label": "positive", "map": [1]}})
    assert KIND.public_payload(item) == {"words": ["a"], "breaks": []}


def test_public_config_shows_mode_labels_and_limits():
    study = Study(
        kind="highlight", config=KIND.validate_config({"mode": "free"}), instructions="Go", time_limit_s=600
    )
    assert KIND.public_config(study) == {
        "instructions": "Go",
        "time_limit_s": 600,
        "max_items_per_worker": None,
        "mode": "free",
        "labels": ["positive", "negative", "cannot decide"],
        "undecided_label": "cannot decide",
        "require_highlight": True,
    }


def test_binary_map_check():
    assert is_binary_map([0, 1, 1], 3)
    assert not is_binary_map([0, 1], 3)
    assert not is_binary_map([0, 1, 2], 3)
    assert not is_binary_map([0, True, 1], 3)
    assert not is_binary_map([0.0, 1, 1], 3)
    assert not is_binary_map("011", 3)


def test_overlap_measures():
    a, b = [1, 1, 0, 0], [1, 0, 1, 0]
    assert map_overlap(a, b, "f1") == pytest.approx(0.5)
    assert map_overlap(a, b, "jaccard") == pytest.approx(1 / 3)
    assert map_overlap([0, 0], [0, 0]) == 1.0
    assert map_overlap([1, 0], [0, 1]) == 0.0
    with pytest.raises(ValueError):
        map_overlap(a, b, "cosine")


def _gold_item(measure="f1", threshold=0.5):
    study = Study(
        kind="highlight", config=KIND.validate_config({"overlap_measure": measure, "gold_overlap": threshold})
    )
    item = Item(
        payload={"words": list("abcd"), "breaks": []},
        secret={"gold": {"label": "positive", "map": [1, 1, 0, 0]}},
    )
    item.study = study
    return item


def test_gold_grading_by_label_and_overlap():
    item = _gold_item()
    assert KIND.grade_gold(item, {"label": "positive", "map": [1, 0, 1, 0]}) is True  # F1 0.5
    assert KIND.grade_gold(item, {"label": "positive", "map": [0, 0, 1, 1]}) is False
    assert KIND.grade_gold(item, {"label": "negative", "map": [1, 1, 0, 0]}) is False
    jaccard = _gold_item("jaccard")
    assert KIND.grade_gold(jaccard, {"label": "positive", "map": [1, 0, 1, 0]}) is False  # 1/3 < 0.5
    plain = Item(payload={"words": ["a"]}, secret={})
    plain.study = item.study
    assert KIND.grade_gold(plain, {"label": "positive", "map": [1]}) is None


def test_agreement_categories():
    study = Study(kind="highlight", config=KIND.validate_config({}))
    assert KIND.categories(study) == ["positive", "negative", "cannot decide"]
    assert KIND.agreement_value({"label": "negative", "map": [0]}) == "negative"


def test_demo_reviews_mark_their_sentiment_words():
    reviews = generate_reviews(20, seed=1)
    assert reviews == generate_reviews(20, seed=1)
    assert {r["label"] for r in reviews} == {"positive", "negative"}
    for r in reviews:
        words = r["text"].split()
        assert len(r["map"]) == len(words) and sum(r["map"]) >= 2
        lexicon = POSITIVE if r["label"] == "positive" else NEGATIVE
        marked = {w.strip(".,!?").lower() for w, m in zip(words, r["map"], strict=True) if m}
        assert marked <= set(lexicon)
    assert sentiment_map("The soup was bland. Lovely view", "negative") == [0, 0, 0, 1, 0, 0]
