"""The morphosyntactic agreement paradigm (Poerner et al. 2018 §2.2, §4.2) on synthetic sentences: the
generator's grammar, and the pointing-game command end to end."""

from __future__ import annotations

import json

import numpy as np
import torch

from explain_engine.__main__ import main
from explain_engine.datasets.agreement import NOUNS, PLURAL, SINGULAR, agreement_corpus
from explain_engine.metrics.pointing_game import pointing_game
from tests.engine.test_explainers import tiny_bundle

torch.set_num_threads(1)
SINGULARS = {s for s, _ in NOUNS}
PLURALS = {p for _, p in NOUNS}


def test_generated_sentences_agree_with_their_subject_and_attract_with_the_other_number():
    corpus = agreement_corpus(400, seed=3)
    assert len({r["text"] for r in corpus}) == 400
    assert {r["split"] for r in corpus} == {"train", "validation", "test"}
    assert sum(r["split"] == "test" for r in corpus) == 40
    labels = [r["label"] for r in corpus]
    assert 150 < labels.count(SINGULAR) < 250
    for r in corpus:
        words = r["text"].split()
        assert len(r["features"]) == len(words)
        subject = words[r["target"]]
        assert r["features"][r["target"]] == r["label"]  # the label is the subject's number
        assert subject in (SINGULARS if r["label"] == SINGULAR else PLURALS)
        assert r["verb"] in (
            ("is", "was", "has", "seems") if r["label"] == SINGULAR else ("are", "were", "have", "seem")
        )
        other = PLURAL if r["label"] == SINGULAR else SINGULAR
        assert r["attractors"] == [i for i, f in enumerate(r["features"]) if f == other]
        for i in r["attractors"]:  # an attractor has the other number, and comes between subject and verb
            assert i > r["target"] and r["features"][i] == other
        nouns = [i for i, w in enumerate(words) if w in SINGULARS | PLURALS]
        assert all(r["features"][i] == (SINGULAR if words[i] in SINGULARS else PLURAL) for i in nouns)
        assert words[-1] != subject or r["target"] != len(words) - 1  # a modifier always follows
    # attractors are common but not everywhere: the nearest noun does not give the label away
    with_attractor = np.mean([bool(r["attractors"]) for r in corpus])
    last_noun_agrees = np.mean(
        [r["features"][max(i for i, f in enumerate(r["features"]) if f)] == r["label"] for r in corpus]
    )
    assert 0.5 < with_attractor < 0.95 and 0.35 < last_noun_agrees < 0.65
    assert agreement_corpus(50, seed=3)[0] == corpus[0] | {"split": "train"}


def test_pointing_game_scores_hit_target_and_hit_feat():
    docs = [
        {
            "id": "a",
            "text": "the keys near the cabinet",
            "label": "Pl",
            "target": 1,
            "features": [None, "Pl", None, None, "Sg"],
        },
        {
            "id": "b",
            "text": "the key near the cabinets",
            "label": "Sg",
            "target": 1,
            "features": [None, "Sg", None, None, "Pl"],
        },
    ]
    bundle = tiny_bundle("lstm", [d["text"] for d in docs])
    bundle.labels = ["Pl", "Sg"]
    predicted = bundle.scores([d["text"] for d in docs]).argmax(1)
    game = pointing_game(bundle, docs, ["occ_1"], kind="agreement")
    correct = np.array([bundle.labels[p] == d["label"] for p, d in zip(predicted, docs, strict=True)])
    np.testing.assert_array_equal(game.correct, correct)
    assert (
        len(game.hits["last"]) == correct.sum() and not game.hits["last"].any()
    )  # the subject is never last
    # the last word has the predicted number exactly when that number is the attractor's
    expected_last = [d["features"][-1] == bundle.labels[p] for p, d in zip(predicted, docs, strict=True)]
    np.testing.assert_array_equal(game.feat_hits["last"], expected_last)
    assert set(game.to_dict(n_boot=10)["hit_feat"]) == {"occ_1", "random", "last"}


def test_agreement_command_end_to_end(tmp_path, capsys):
    data = tmp_path / "agreement.jsonl"
    assert main(["agreement-data", "--out", str(data), "--n", "300", "--seed", "1"]) == 0
    assert "wrote 300 synthetic agreement samples" in capsys.readouterr().out
    model = tmp_path / "lstm"
    argv = ["train", "--data", str(data), "--model", "lstm", "--out", str(model), "--epochs", "2"]
    argv += ["--embedding-dim", "8", "--hidden-size", "8", "--min-count", "1", "--quiet", "--device", "cpu"]
    assert main(argv) == 0
    capsys.readouterr()
    play = ["pointing-game", "--paradigm", "agreement", "--model", str(model), "--data", str(data)]
    play += ["--methods", "grad_dot_int_s,lrp,omit_1", "--device", "cpu"]
    assert main([*play, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    test_ids = {r["id"] for r in map(json.loads, data.read_text().splitlines()) if r["split"] == "test"}
    assert result["kind"] == "agreement" and result["documents"] == len(test_ids) == 30
    assert "test split" in result["source"]
    methods = {"grad_dot_int_s", "lrp", "omit_1", "random", "last"}
    assert set(result["hit_target"]) == set(result["hit_feat"]) == methods
    assert result["hit_target"]["last"]["value"] in (0, None)
    for m in methods:
        assert result["hit_target"][m]["n"] == result["correctly_classified"]
        n_feat = result["hit_feat"][m]["correct"]["n"] + result["hit_feat"][m]["incorrect"]["n"]
        assert n_feat == 30
    assert result["completeness"]["grad_dot_int_s"]["documents"] == 30
    assert main(play) == 0
    table = capsys.readouterr().out
    assert "hit_target f=y" in table and "hit_feat f≠y" in table and "grad_dot_int_s: " in table
    reviews = tmp_path / "reviews.jsonl"
    reviews.write_text(json.dumps({"id": "r", "text": "good food", "label": "Sg"}) + "\n")
    assert main([*play[:-4], "--data", str(reviews)]) == 2
    assert "needs records with 'target' and 'features'" in capsys.readouterr().err
