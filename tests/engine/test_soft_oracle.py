"""Prasad et al. 2021 whole: the soft oracle (an explanation-informed twin trained on matched and
mismatched pairs, IG of the joint target, eq. 3), NLTK's stop words for the hard oracle, C_R of every
oracle from the same oracle of the random explanation, the gold label's attributions or an error naming
the example, and ``python -m explain_engine alignment``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import explain_engine.explainers as explainers
from explain_engine.__main__ import main
from explain_engine.artifacts import TrainedModel
from explain_engine.datasets.rationales import rationale_explanations
from explain_engine.metrics.alignment import hard_oracle
from explain_engine.soft_oracle import (
    SEPARATOR,
    informed_records,
    joint_label,
    matched_accuracy,
    soft_oracles,
    train_informed_twin,
    with_splits,
)
from explain_engine.stopwords import NLTK_ENGLISH, STOP_WORD_LISTS
from explain_engine.training import TrainConfig
from tests.conftest import require_shared_data

TINY = TrainConfig(
    architecture="cnn",
    model={"embedding_dim": 8, "num_filters": 4, "fc_size": 8},
    epochs=2,
    batch_size=8,
    lr=1e-2,
    progress_bar=False,
    seed=3,
)


def synthetic(n: int = 24) -> list[dict]:
    good = ["great", "lovely", "superb"]
    bad = ["awful", "dull", "poor"]
    out = []
    for i in range(n):
        words = good if i % 2 else bad
        key = words[i % 3]
        out.append(
            {
                "id": f"r{i}",
                "text": f"the film was {key} and the cast {words[(i + 1) % 3]} overall",
                "label": "pos" if i % 2 else "neg",
                "explanation": f"it says {key}",
                "split": ("train", "validation", "test")[0 if i < 16 else 1 if i < 20 else 2],
            }
        )
    return out


def test_nltk_english_list_is_the_papers_179_words():
    assert len(NLTK_ENGLISH) == len(set(NLTK_ENGLISH)) == 179
    assert {"i", "the", "not", "no", "don't", "wouldn't", "y"} <= STOP_WORD_LISTS["nltk"]
    # scikit-learn's list drops words an explanation means; NLTK's keeps them
    meant = {"never", "nothing", "without", "cannot"}
    assert meant <= STOP_WORD_LISTS["sklearn"] and not meant & STOP_WORD_LISTS["nltk"]
    tokens = ["nothing", "works", "without", "the", "cable"]
    assert hard_oracle(tokens, "nothing works without a cable").tolist() == [1, 1, 1, 0, 1]
    assert hard_oracle(tokens, "nothing works without a cable", "sklearn").tolist() == [0, 1, 0, 0, 1]
    with pytest.raises(ValueError, match="unknown stop-word list 'spacy'"):
        hard_oracle(tokens, "x", "spacy")


def test_informed_records_pair_each_example_with_its_own_and_a_random_explanation():
    recs = synthetic()
    pairs = informed_records(recs, seed=0)
    assert len(pairs) == 2 * len(recs)
    by_id = {r["id"]: r for r in recs}
    for matched, mismatched in zip(pairs[::2], pairs[1::2], strict=True):
        source = by_id[matched["id"].split("|")[0]]
        assert matched["text"] == f"{source['text']} {SEPARATOR} {source['explanation']}"
        assert matched["label"] == joint_label(source["label"], True) == f"{source['label']}|matched"
        assert mismatched["label"] == f"{source['label']}|mismatched"
        other = mismatched["text"].split(f" {SEPARATOR} ")[1]
        assert any(
            r["explanation"] == other and r["split"] == source["split"] and r["id"] != source["id"]
            for r in recs
        )
        assert matched["split"] == mismatched["split"] == source["split"]
    with pytest.raises(ValueError, match="record 0 has no 'explanation'"):
        informed_records([{"id": 1, "text": "a", "label": "x"}])


def test_soft_oracle_is_the_ig_of_the_joint_target_over_the_input_words():
    torch.set_num_threads(1)
    recs = synthetic()
    twin = train_informed_twin(recs, TINY)
    assert twin.labels == ["neg|matched", "neg|mismatched", "pos|matched", "pos|mismatched"]
    texts = [r["text"] for r in recs[:4]]
    own = soft_oracles(twin, texts, [r["explanation"] for r in recs[:4]], [r["label"] for r in recs[:4]])
    rand = soft_oracles(
        twin, texts, [r["explanation"] for r in recs[4:8]], [r["label"] for r in recs[:4]], False
    )
    for text, a, b in zip(texts, own, rand, strict=True):
        assert a.shape == b.shape == (len(text.split()),)  # the words of x only, not of the explanation
        assert (a >= 0).all() and a.sum() > 0 and not np.allclose(a, b)
    with pytest.raises(ValueError, match="no joint label 'maybe|matched'"):
        soft_oracles(twin, texts[:1], ["x"], ["maybe"])


def overlap_records(n: int = 160, seed: int = 5) -> list[dict]:
    """Inputs of 12 random words and a sentiment word; the explanation names 3 of the input's other
    words. Whether an explanation belongs to an input shows only in which words the two share."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{k}" for k in range(40)]
    out = []
    for i in range(n):
        words = list(rng.choice(vocab, 12, replace=False))
        label = "pos" if i % 2 else "neg"
        x = words[:6] + ["good" if label == "pos" else "bad"] + words[6:]
        out.append({"id": f"s{i}", "text": " ".join(x), "label": label, "explanation": " ".join(words[3:6])})
    return out


def test_twin_learns_whether_the_explanation_belongs_to_the_input(tmp_path):
    """Matched and mismatched pairs differ only in word overlap: a twin that cannot compare e with x
    (one CNN over "x SEP e", the InferSent features alone) stays near 0.5 on them."""
    torch.set_num_threads(1)
    config = TrainConfig(
        architecture="cnn",
        model={"embedding_dim": 16, "num_filters": 8, "fc_size": 16},
        epochs=6,
        batch_size=16,
        lr=3e-3,
        patience=None,
        progress_bar=False,
        seed=3,
    )
    recs = overlap_records()
    twin = train_informed_twin(recs, config, out_dir=tmp_path / "twin", encoding_dim=16, hidden_size=16)
    assert twin.model.architecture == "informed" and twin.model.config["target"] == "cnn"
    test = [p for p in informed_records(with_splits(recs, config)) if p["split"] == "test"]
    assert len(test) == 2 * 16 and {p["label"].split("|")[1] for p in test} == {"matched", "mismatched"}
    scores = matched_accuracy(twin, test)
    assert scores["matched"] >= 0.9, scores
    # the separator's id travels with the weights
    again = TrainedModel.load(tmp_path / "twin", device="cpu")
    texts = [p["text"] for p in test[:6]]
    assert np.allclose(again.scores(texts), twin.scores(texts), atol=1e-5)
    with pytest.raises(ValueError, match="needs the separator word"):
        again.scores(["w1 w2 w3"])
    with pytest.raises(ValueError, match="may not occur in an input"):
        informed_records([{**recs[0], "text": f"a {SEPARATOR} b"}, recs[1]])


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def alignment_records(rng: np.random.Generator, n: int = 12) -> list[dict]:
    """Attributions that follow the words an example's own explanation names, plus noise."""
    vocab = [f"w{k}" for k in range(30)]
    out = []
    for i in range(n):
        words = list(rng.choice(vocab, 10, replace=False))
        named = words[:3]
        attr = [(1.0 if w in named else 0.0) + rng.normal(0, 0.1) for w in words]
        out.append({"id": f"e{i}", "text": " ".join(words), "label": "pos", "explanation": " ".join(named),
                    "attributions": {"pos": attr, "neg": [0.0] * 10}})  # fmt: skip
    return out


def test_alignment_command_prints_delta_a_per_oracle_with_its_t_test(tmp_path, capsys):
    recs = alignment_records(np.random.default_rng(0))
    path = write(tmp_path / "a.jsonl", recs)
    assert main(["alignment", "--data", path, "--json", "--n-boot", "200", "--compare-stop-words"]) == 0
    rep = json.loads(capsys.readouterr().out)
    hard = rep["oracles"]["hard"]
    assert hard["delta_a"]["value"] > 0.5 and hard["p_value"] < 1e-3 and hard["t_statistic"] > 0
    assert rep["stop_words"] == "nltk" and "stop_word_shift" in rep
    assert set(rep["pairing"]) == {r["id"] for r in recs} and all(k != v for k, v in rep["pairing"].items())
    assert main(["alignment", "--data", path, "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "C_R from the same oracle of a random other explanation" in out and "p (C > C_R)" in out


def test_expert_c_r_comes_from_the_expert_oracle_of_the_random_explanation(tmp_path, capsys):
    """Experts mark exactly the attributed words against the random explanation and the opposite against
    the own one: ΔA(expert) must come out strongly negative. Had C_R come from the hard oracle (the old
    rule), it would not."""
    recs = alignment_records(np.random.default_rng(1))
    for i, rec in enumerate(recs):
        recs[i]["random_partner"] = recs[(i + 1) % len(recs)]["id"]
        attributed = [1 if k < 3 else 0 for k in range(10)]
        rec["expert_random"] = [attributed, attributed]
        rec["expert"] = [[1 - v for v in attributed]] * 2
    path = write(tmp_path / "e.jsonl", recs)
    assert main(["alignment", "--data", path, "--json", "--n-boot", "0"]) == 0
    rep = json.loads(capsys.readouterr().out)
    expert = rep["oracles"]["expert"]
    assert expert["delta_a"]["value"] < -0.9 and expert["mean_c_random"] > 1.0
    assert rep["pairing"]["e0"] == "e1"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attributions": {"neg": [0.0] * 10}}, "example 'e0': no attributions for its gold label 'pos'"),
        ({"attributions": [1.0, 2.0]}, "example 'e0': 2 attributions for 10 words"),
        ({"expert": [[1] * 10]}, "example 'e0': the expert oracle needs both 'expert' and 'expert_random'"),
        ({"random_partner": "e0"}, "example 'e0': random_partner must name another example"),
    ],
)
def test_alignment_command_names_the_bad_example(tmp_path, capsys, change, message):
    recs = alignment_records(np.random.default_rng(0))
    recs[0].update(change)
    assert main(["alignment", "--data", write(tmp_path / "bad.jsonl", recs)]) == 2
    assert message in capsys.readouterr().err


def test_movie_rationales_stand_in_for_explanations():
    path = require_shared_data("movie-review-rationales-zaidan2007", "movie_rationales.jsonl")
    recs = rationale_explanations(path, max_words=150)
    first = recs[0]
    assert len(first["text"].split()) <= 150 and set(first) == {"id", "text", "label", "explanation"}
    words = set(first["text"].split())
    assert all(w in words for snippet in first["explanation"].split(" ; ") for w in snippet.split())
    assert len(recs) == 1257 and {r["label"] for r in recs} == {"pos", "neg"}


def test_informed_twin_command_trains_both_and_prints_delta_a_of_hard_and_soft(tmp_path, capsys):
    torch.set_num_threads(1)
    data = write(tmp_path / "x.jsonl", overlap_records(60))
    args = ["informed-twin", "--data", data, "--model", "cnn", "--out", str(tmp_path / "run")]
    assert (
        main([*args, "--epochs", "2", "--embedding-dim", "8", "--n-boot", "0", "--device", "cpu", "--json"])
        == 0
    )
    rep = json.loads(capsys.readouterr().out)
    assert rep["examples"] == 60 and rep["test_examples"] == 6 and rep["twin_test"]["pairs"] == 12
    oracles = rep["alignment"]["oracles"]
    assert (
        set(oracles) == {"hard", "soft", "soft (y' matched for both)"} and rep["alignment"]["examples"] == 6
    )
    # the diagnostic row shares C with the paper's soft oracle; only the random explanation's target differs
    same = oracles["soft (y' matched for both)"]
    assert same["mean_c"] == pytest.approx(oracles["soft"]["mean_c"], abs=1e-12)
    assert same["mean_c_random"] != pytest.approx(oracles["soft"]["mean_c_random"], abs=1e-9)
    rows = [json.loads(line) for line in (tmp_path / "run" / "alignment.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(len(r["attributions"]) == len(r["text"].split()) for r in rows)
    # the target's IG and the soft oracle's report their completeness, counted in ΔA's output
    assert all(set(r["completeness"]) >= {"converged", "steps", "error"} for r in rows)
    checks = rep["alignment"]["completeness"]
    assert checks["attributions"]["checked"] == 6 and checks["soft"]["checked"] == 6
    assert checks["soft"]["path_points"]["min"] >= 50
    flagged = {r["id"] for r in rows if not r["completeness"]["converged"]}
    assert set(checks["attributions"]["flagged_ids"]) == flagged
    assert all("flagged_texts" in row for row in oracles.values())
    assert (tmp_path / "run" / "twin" / "model.pt").exists() and (
        tmp_path / "run" / "target" / "model.pt"
    ).exists()


def test_alignment_counts_texts_whose_integrated_gradients_are_flagged(tmp_path, capsys, monkeypatch):
    """An IG that is not complete at the step cap enters ΔA flagged: the attributions' own check (as
    ``informed-twin`` writes it) and the soft oracle's, per row, with the path points used."""
    torch.set_num_threads(1)
    recs = alignment_records(np.random.default_rng(1))
    for i, rec in enumerate(recs):
        rec["completeness"] = {"converged": i != 3, "steps": 50 + 10 * i, "error": 0.2 if i == 3 else 0.001}
    path = write(tmp_path / "a.jsonl", recs)
    splits = ["train"] * 8 + ["validation"] * 2 + ["test"] * 2
    train_informed_twin(
        [{**r, "split": s} for r, s in zip(recs, splits, strict=True)], TINY, tmp_path / "twin"
    )
    # a tolerance no IG meets within a cap of 60 points: every soft-oracle text is flagged
    original = explainers.explain_many

    def capped(bundle, texts, methods, target=None, **kw):
        kw["params"] = {m: {"tolerance": 1e-12, "max_steps": 60} for m in methods}
        return original(bundle, texts, methods, target, **kw)

    monkeypatch.setattr(explainers, "explain_many", capped)
    twin = str(tmp_path / "twin")
    assert main(["alignment", "--data", path, "--informed-model", twin, "--json", "--n-boot", "0"]) == 0
    monkeypatch.undo()
    rep = json.loads(capsys.readouterr().out)
    done = rep["completeness"]
    assert done["attributions"]["flagged_ids"] == ["e3"] and done["attributions"]["checked"] == 12
    assert done["attributions"]["path_points"]["max"] == 160
    assert rep["oracles"]["hard"]["flagged_texts"] == 1
    assert done["soft"]["flagged"] == 12 and rep["oracles"]["soft"]["flagged_texts"] == 12
    assert done["soft"]["path_points"]["max"] <= 60
    # one text at a time through the command gives the same ΔA of every soft row
    assert (
        main(
            [
                "alignment",
                "--data",
                path,
                "--informed-model",
                twin,
                "--json",
                "--n-boot",
                "0",
                "--batch-size",
                "1",
            ]
        )
        == 0
    )
    alone = json.loads(capsys.readouterr().out)
    assert main(["alignment", "--data", path, "--informed-model", twin, "--json", "--n-boot", "0"]) == 0
    together = json.loads(capsys.readouterr().out)
    for name in ("soft", "soft (y' matched for both)"):
        a, b = alone["oracles"][name]["delta_a"]["value"], together["oracles"][name]["delta_a"]["value"]
        assert a == pytest.approx(b, abs=1e-6)
    assert main(["alignment", "--data", path, "--batch-size", "0"]) == 2
    assert "--batch-size must be at least 1" in capsys.readouterr().err
    assert main(["alignment", "--data", path, "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "(1 texts with an incomplete IG)" in out and "completeness of IG (attributions): 11 of 12" in out
