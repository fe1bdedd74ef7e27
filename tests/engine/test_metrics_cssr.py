"""Hu & Liu lexicon reading and cross-sentiment selection rates (Sen et al. 2020 §4.3, Def. 4.3)."""

from __future__ import annotations

import numpy as np
import pytest

from explain_engine.datasets.yelphat import read_raw
from explain_engine.lexicon import NEGATIVE, POSITIVE, OpinionLexicon, load_opinion_lexicon, read_word_list
from explain_engine.metrics.behavioral import HumanMaps
from explain_engine.metrics.cssr import cssr, polarity_codes
from explain_engine.text import words_of
from tests.conftest import require_shared_data


@pytest.fixture(scope="module")
def lexicon() -> OpinionLexicon:
    return load_opinion_lexicon(require_shared_data("opinion-lexicon-hu-liu"))


def test_lexicon_files(lexicon):
    assert len(lexicon.positive) == 2006 and len(lexicon.negative) == 4783
    assert "naïve" in lexicon.negative  # the Latin-1 byte 0xEF
    assert {"a+", "abound"} <= lexicon.positive and "2-faced" in lexicon.negative
    assert lexicon.positive & lexicon.negative == {"envious", "enviously", "enviousness"}
    assert not any(w.startswith(";") for w in lexicon.positive | lexicon.negative)


def test_word_list_skips_comments_and_blank_lines(tmp_path):
    path = tmp_path / "words.txt"
    path.write_bytes(b";; header\n; more\n\ngood\nna\xefve\n  \n")
    assert read_word_list(path) == ["good", "naïve"]
    with pytest.raises(ValueError, match="both"):
        load_opinion_lexicon(positive=path)


def test_polarity_normalises_case_and_punctuation(lexicon):
    assert lexicon.polarity("Great.") == POSITIVE
    assert lexicon.polarity('"awful!"') == NEGATIVE
    assert lexicon.polarity("A+") == POSITIVE
    assert lexicon.polarity("envious") == POSITIVE | NEGATIVE
    assert lexicon.polarity("table") == 0


def test_cssr_counts_every_selected_occurrence():
    lex = OpinionLexicon(frozenset({"good", "nice"}), frozenset({"bad"}))
    words = [["good", "good", "bad", "food"], ["bad", "nice", "bad"], ["fine"]]
    selected = [[1, 1, 1, 1], [1, 1, 0], [1]]
    pol = polarity_codes(words, lex)
    out = cssr(pol, selected, [1, 0, 1], n_boot=50)
    assert out["cssr_p"].value == pytest.approx(1 / 2)  # positive texts: 2 × good, 1 × bad
    assert out["cssr_n"].value == pytest.approx(1 / 1)  # negative text: nice selected, one bad selected
    assert out["cssr_p"].extra == {"cross": 1, "same": 2} and out["cssr_p"].n == 2
    with pytest.raises(ValueError, match="labels"):
        cssr(pol, selected, [1, 0])


def test_human_cssr_on_yelp50(lexicon):
    """Sen et al. 2020 Table 4, Human: CSSR_p 0.06, CSSR_n 0.20 on Yelp-50. Over every individual map
    CSSR_p comes out 0.067; over the consensus maps (CAM) CSSR_n comes out 0.205."""
    records = read_raw(require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv"))
    humans = HumanMaps.from_records(records)
    pol = polarity_codes([words_of(r["text"], r["words"]) for r in records], lexicon)
    every_map = cssr(pol.take(humans.review), humans.maps, humans.labels[humans.review], n_boot=200)
    assert abs(every_map["cssr_p"].value - 0.06) < 0.01
    assert every_map["cssr_p"].ci_low < every_map["cssr_p"].value < every_map["cssr_p"].ci_high
    idx, cam = humans.consensus()
    on_cam = cssr(pol.take(idx), cam, humans.labels[idx], n_boot=0)
    assert abs(on_cam["cssr_n"].value - 0.20) < 0.01
    # by hand on the first positive review's first map
    first = next(i for i, r in enumerate(records) if r["label"] == 1)
    words = records[first]["text"].split()
    chosen = [w for w, m in zip(words, records[first]["annotations"][0]["map"], strict=True) if m]
    flags = [lexicon.polarity(w) for w in chosen]
    assert int(
        np.sum(pol.take([first]).values[np.array(records[first]["annotations"][0]["map"]) > 0] > 0)
    ) == sum(f > 0 for f in flags)
