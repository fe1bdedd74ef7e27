"""Lexical similarity over Penn Treebank tags (Sen et al. 2020 §4.2, Def. 4.2) and offline POS tagging."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.stats import pearsonr

from explain_engine.datasets.yelphat import read_raw
from explain_engine.metrics.behavioral import HumanMaps
from explain_engine.metrics.lexical import (
    adjusted_lexical_similarity,
    encode_tags,
    lexical_similarity,
    machine_selection,
    random_lexical_similarity,
    tag_counts,
    tag_distribution,
    tag_distribution_table,
)
from explain_engine.metrics.pos import TAGSET, tag_documents, tag_words, word_pieces
from explain_engine.metrics.ragged import Ragged
from tests.conftest import require_shared_data


@pytest.fixture(scope="module")
def yelp50():
    path = require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv")
    records = read_raw(path)
    tags = tag_documents([r["text"] for r in records], [r["words"] for r in records])
    return records, HumanMaps.from_records(records, max_maps=3, min_maps=3), tags


def test_word_pieces_split_the_penn_way():
    assert word_pieces("wasn't") == ["was", "n't"]
    assert word_pieces("can't") == ["ca", "n't"]
    assert word_pieces("food's") == ["food", "'s"]
    assert word_pieces("did.") == ["did", "."]
    assert word_pieces("ok...a") == ["ok", ".", ".", ".", "a"]
    assert word_pieces("2-6") == ["2-6"]
    assert word_pieces("$4.95") == ["$", "4.95"]


def test_tag_words_one_tag_per_canonical_word():
    text = "I wasn't impressed, the staff's attitude was bad.  Great tacos!"
    tags = tag_words(text)
    assert len(tags) == len(text.split())
    assert tags[:3] == ["PRP", "VBD", "VBN"]
    assert tags[7] == "JJ" and tags[9] == "NNS"
    assert not set(tag_words("...  !!")) & set(TAGSET)  # punctuation-only words: a tag outside the tagset
    assert tag_words("") == []
    assert len(TAGSET) == 36


def test_tag_counts_and_ls_match_a_per_text_loop(yelp50):
    records, humans, tags = yelp50
    idx, cam = humans.consensus()
    rng = np.random.default_rng(0)
    machine = Ragged(rng.random(cam.values.shape[0]), cam.lengths)
    t = encode_tags(tags).take(idx)
    counts = tag_counts(t, cam)
    k = cam.sums().astype(int)
    human_words, machine_words = Counter(), Counter()
    tag_lists = [tags[i] for i in idx]
    for i, (tl, hm, mm) in enumerate(zip(tag_lists, cam.to_lists(), machine.to_lists(), strict=True)):
        if i < 20:
            assert counts[i].sum() == sum(1 for tg, h in zip(tl, hm, strict=True) if h and tg in TAGSET)
        human_words.update(tg for tg, h in zip(tl, hm, strict=True) if h)
        top = sorted(range(len(mm)), key=lambda j: (-mm[j], j))[: k[i]]
        machine_words.update(tl[j] for j in top)
    h = np.array([human_words[tg] for tg in TAGSET], float)
    m = np.array([machine_words[tg] for tg in TAGSET], float)
    ls = lexical_similarity(t, cam, machine, n_boot=200)
    assert ls.value == pytest.approx(pearsonr(h / h.sum(), m / m.sum()).statistic, abs=1e-12)
    assert ls.ci_low < ls.value < ls.ci_high and ls.n == len(idx)
    assert np.allclose(tag_distribution(t, cam), h / h.sum())


def test_identical_selection_is_perfect_and_binary_selection(yelp50):
    _, humans, tags = yelp50
    idx, maps = humans.slot_maps(0)
    t = encode_tags(tags).take(idx)
    same = lexical_similarity(t, maps, maps.with_values(maps.values.astype(float)), n_boot=0)
    assert same.value == pytest.approx(1.0)
    sel = machine_selection(maps, maps, "binary")
    assert np.array_equal(sel.values, maps.values > 0)
    with pytest.raises(ValueError, match="unknown selection"):
        machine_selection(maps, maps, "threshold")


def test_random_baseline_near_paper_value(yelp50):
    """Sen et al. 2020 Table 3: random attention LS 0.85 ± 0.006 on Yelp-50."""
    _, humans, tags = yelp50
    t = encode_tags(tags)
    for s in range(3):
        idx, maps = humans.slot_maps(s)
        rnd = random_lexical_similarity(t.take(idx), maps, draws=10, seed=s)
        assert abs(rnd.value - 0.85) < 0.02, (s, rnd.value)
        assert 0 < rnd.extra["sd"] < 0.02 and rnd.extra["draws"] == 10


def test_adjusted_lexical_similarity():
    assert adjusted_lexical_similarity(0.99, 0.85) == pytest.approx(0.14 / 0.15)
    assert adjusted_lexical_similarity(0.85, 0.85) == 0.0
    assert np.isnan(adjusted_lexical_similarity(0.9, 1.0))


def test_tag_distribution_table_shape(yelp50):
    _, humans, tags = yelp50
    idx, cam = humans.consensus()
    t = encode_tags(tags).take(idx)
    rows = tag_distribution_table(t, cam, cam)
    assert [r["tag"] for r in rows] == list(TAGSET)
    for col in ("human", "machine", "corpus"):
        assert sum(r[col] for r in rows) == pytest.approx(1.0)
    by_tag = {r["tag"]: r for r in rows}
    # Sen et al. 2020 Table 5: adjectives are selected far above their share of the corpus
    assert by_tag["JJ"]["human"] > 3 * by_tag["JJ"]["corpus"]
    assert by_tag["DT"]["human"] < by_tag["DT"]["corpus"]
