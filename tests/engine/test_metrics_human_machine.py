"""One-pass comparison against every human reference equals the metrics computed one by one."""

from __future__ import annotations

import numpy as np
import pytest

from explain_engine.lexicon import OpinionLexicon
from explain_engine.metrics.behavioral import HumanMaps, behavioral_similarity
from explain_engine.metrics.cssr import cssr, polarity_codes
from explain_engine.metrics.human_machine import compare_to_humans
from explain_engine.metrics.lexical import encode_tags, lexical_similarity, random_lexical_similarity
from explain_engine.metrics.ragged import Ragged, random_ranks


def _study(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    tagset = ["NN", "JJ", "DT", "VB", "RB", "."]
    vocab = ["good", "bad", "food", "the", "slow", "nice", "place"]
    records, tag_lists, words = [], [], []
    for i in range(n):
        length = int(rng.integers(8, 30))
        maps = [(rng.random(length) < 0.3).astype(int).tolist() for _ in range(int(rng.integers(2, 4)))]
        records.append(
            {
                "id": str(i),
                "words": [[0, 1]] * length,
                "label": i % 2,
                "annotations": [{"label": "positive", "map": m} for m in maps],
            }
        )
        tag_lists.append(list(rng.choice(tagset, length)))
        words.append(list(rng.choice(vocab, length)))
    humans = HumanMaps.from_records(records)
    machine = Ragged(rng.random(int(humans.lengths.sum())), humans.lengths)
    lexicon = OpinionLexicon(frozenset({"good", "nice"}), frozenset({"bad", "slow"}))
    return humans, machine, encode_tags(tag_lists), polarity_codes(words, lexicon)


def test_rows_equal_metrics_computed_one_by_one():
    humans, machine, tags, polarity = _study()
    out = compare_to_humans(humans, machine, tags, polarity, draws=4, n_boot=100, seed=3)
    rows = {r["reference"]: r for r in out["references"]}
    assert list(rows) == ["HAM1", "HAM2", "HAM3", "CAM", "SAM"]
    rng = np.random.default_rng(3)
    shuffles = [random_ranks(humans.lengths, rng) for _ in range(4)]
    for name, (idx, maps) in humans.references().items():
        m, t = machine.take(idx), tags.take(idx)
        row = rows[name]
        assert row["texts"] == len(idx)
        bs = behavioral_similarity(maps, m, n_boot=100, seed=3)
        assert row["behavioral"] == bs.to_dict()
        assert row["lexical"]["value"] == pytest.approx(lexical_similarity(t, maps, m, n_boot=0).value)
        rnd = random_lexical_similarity(t, maps, random_ranks=[r.take(idx) for r in shuffles])
        assert row["lexical_random"]["value"] == pytest.approx(rnd.value)
        assert row["cssr_human"]["cssr_n"]["value"] == pytest.approx(
            cssr(polarity.take(idx), maps, humans.labels[idx], n_boot=0)["cssr_n"].value, nan_ok=True
        )
    assert rows["HAM3"]["texts"] < rows["HAM1"]["texts"]  # only texts with a third map
    assert [r["tag"] for r in out["tag_distribution"]][:3] == ["CC", "CD", "DT"]


def test_without_tags_or_lexicon_and_shape_errors():
    humans, machine, _, _ = _study(10)
    out = compare_to_humans(humans, machine, n_boot=0)
    row = out["references"][0]
    assert "lexical" not in row and "cssr_human" not in row and out["tag_distribution"] is None
    with pytest.raises(ValueError, match="one score per word"):
        compare_to_humans(humans, Ragged.from_lists([[0.1, 0.2]]))
