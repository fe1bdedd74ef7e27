"""Training, the model bundle (save / load / predict), the weaker twin and the train / predict CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from explain_engine.__main__ import main
from explain_engine.artifacts import TrainedModel
from explain_engine.text import word_spans
from explain_engine.training import PAPER_DEFAULTS, TrainConfig, train, weaker_twin

POS, NEG = ["great", "lovely", "tasty", "friendly"], ["awful", "rude", "cold", "dirty"]
FILLER = ["the", "food", "was", "and", "staff", "we", "had", "a", "table", "there", "it's", "Service,"]


def make_records(n: int = 80, seed: int = 0) -> list[dict]:
    """Short reviews whose label is the sentiment word they contain (balanced, deterministic)."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        label = i % 2
        words = list(rng.choice(FILLER, size=int(rng.integers(3, 9))))
        words.insert(int(rng.integers(len(words) + 1)), str(rng.choice(POS if label else NEG)))
        records.append(
            {
                "id": f"r{i}",
                "text": " ".join(words) + ".",
                "label": "positive" if label else "negative",
                "metadata": {"group": "a" if i < n // 2 else "b"},
            }
        )
    return records


TINY = {"embedding_dim": 16, "hidden_size": 12, "attention_size": 8}


def tiny_config(**changes) -> TrainConfig:
    base = TrainConfig(
        architecture="bilstm_attention",
        model=dict(TINY),
        epochs=12,
        batch_size=16,
        lr=0.02,
        patience=None,
        progress_bar=False,
        min_count=1,
    )
    for key, value in changes.items():
        setattr(base, key, value)
    return base


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return make_records()


@pytest.fixture(scope="module")
def trained(records, tmp_path_factory) -> tuple[TrainedModel, list[tuple[float, dict]], object]:
    calls: list[tuple[float, dict]] = []
    out = tmp_path_factory.mktemp("bundle")
    bundle = train(records, tiny_config(), out_dir=out, on_progress=lambda f, info: calls.append((f, info)))
    return bundle, calls, out


def test_training_learns_and_reports(trained):
    bundle, calls, _ = trained
    m = bundle.metrics
    assert (m["n_train"], m["n_validation"], m["n_test"]) == (64, 8, 8)
    assert m["test"]["accuracy"] >= 0.85 and m["validation"]["accuracy"] >= 0.85
    assert m["history"][-1]["train_loss"] < m["history"][0]["train_loss"]
    assert m["epochs_run"] == 12 and 1 <= m["best_epoch"] <= 12
    assert bundle.labels == ["negative", "positive"] and not bundle.model.training


def test_progress_callback_runs_to_one(trained):
    _, calls, _ = trained
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and 0 < fractions[0] < 0.1
    assert calls[-1][1]["phase"] == "done" and "accuracy" in calls[-1][1]["test"]
    per_batch = [info for _, info in calls if "loss" in info]
    assert per_batch and {"epoch", "step", "loss", "accuracy"} <= set(per_batch[0])
    assert any("val_loss" in info for _, info in calls)


def test_save_load_round_trip_gives_identical_outputs(trained, records):
    bundle, _, out = trained
    assert {p.name for p in out.iterdir()} >= {
        "model.pt",
        "vocab.json",
        "config.json",
        "metrics.json",
        "splits.json",
    }
    loaded = TrainedModel.load(out)
    texts = [rec["text"] for rec in records[:10]]
    assert loaded.labels == bundle.labels and loaded.metrics["test"] == bundle.metrics["test"]
    assert loaded.config["train"]["seed"] == 13 and loaded.config["architecture"] == "bilstm_attention"
    np.testing.assert_array_equal(loaded.scores(texts), bundle.scores(texts))
    assert loaded.predict(texts) == bundle.predict(texts)
    splits = json.loads((out / "splits.json").read_text())
    assert len(splits["test"]) == 8 and not set(splits["test"]) & set(splits["train"])


def test_predict_gives_word_attention_and_ignores_batching(trained):
    bundle, _, _ = trained
    texts = ["the staff was friendly and the food was tasty.", "awful", "It's cold and dirty there."]
    preds = bundle.predict(texts, batch_size=64)
    for together, alone in zip(preds, bundle.predict(texts, batch_size=1), strict=True):
        assert together["label"] == alone["label"]
        np.testing.assert_allclose(together["attention"], alone["attention"], rtol=1e-5, atol=1e-7)
        for label, p in together["probabilities"].items():
            assert p == pytest.approx(alone["probabilities"][label], rel=1e-5)
    for text, pred in zip(texts, preds, strict=True):
        assert len(pred["attention"]) == len(word_spans(text))
        assert sum(pred["attention"]) == pytest.approx(1.0)
        assert sum(pred["probabilities"].values()) == pytest.approx(1.0)
        assert pred["label"] == max(pred["probabilities"], key=pred["probabilities"].get)
    assert [p["label"] for p in preds] == ["positive", "negative", "negative"]
    probs = bundle.scores(texts, kind="probs")
    np.testing.assert_allclose(probs[:, 1], [p["probabilities"]["positive"] for p in preds])


def test_encode_returns_a_batch_on_the_bundle_device(trained):
    bundle, _, _ = trained
    batch = bundle.encode(["Great food", "rude"])
    assert batch.ids.device == bundle.device and batch.owners == [[0, 1], [0]] and batch.n_words == [2, 1]


def test_same_seed_same_model(records):
    a = train(records, tiny_config(epochs=2))
    b = train(records, tiny_config(epochs=2))
    for (name, pa), pb in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.equal(pa, pb), name
    c = train(records, tiny_config(epochs=2, seed=14))
    assert not torch.equal(a.model.classifier.weight, c.model.classifier.weight)


def test_early_stopping_keeps_the_best_epoch(records):
    bundle = train(records, tiny_config(epochs=30, patience=2, lr=0.05))
    hist = bundle.metrics["history"]
    best = bundle.metrics["best_epoch"]
    assert len(hist) < 30 and len(hist) == best + 2
    assert hist[best - 1]["val_loss"] == min(h["val_loss"] for h in hist)
    assert bundle.metrics["validation"]["loss"] == pytest.approx(hist[best - 1]["val_loss"], rel=1e-5)


def test_word_dropout_hides_words_while_training(records):
    blind = train(records, tiny_config(epochs=4, word_dropout=1.0))
    assert max(h["train_accuracy"] for h in blind.metrics["history"]) < 0.75
    seeing = train(records, tiny_config(epochs=8, word_dropout=0.1))
    assert seeing.metrics["history"][-1]["train_accuracy"] > 0.9


def test_weaker_twins(records):
    full = tiny_config()
    one = weaker_twin(full, "one_epoch")
    assert one.epochs == 1 and one.patience is None and full.epochs == 12
    assert train(records, one).metrics["epochs_run"] == 1
    narrow = train(records, weaker_twin(full, "subset", fraction=0.25))
    assert narrow.metrics["n_train"] == 16 and narrow.metrics["n_test"] == 8
    grouped = train(records, weaker_twin(tiny_config(epochs=1), "subset", where={"group": ["a"]}))
    assert 0 < grouped.metrics["n_train"] < 64
    with pytest.raises(ValueError, match="unknown weaker twin"):
        weaker_twin(full, "smaller")


def test_records_with_their_own_split_keep_it(records):
    names = {0: "dev", 1: "test"}
    tagged = [{**rec, "split": names.get(i % 10, "train")} for i, rec in enumerate(records)]
    bundle = train(tagged, tiny_config(epochs=1))
    counts = [sum(r["split"] == s for r in tagged) for s in ("train", "dev", "test")]
    assert [bundle.metrics[k] for k in ("n_train", "n_validation", "n_test")] == counts


def test_bad_records_are_named(records):
    with pytest.raises(ValueError, match="record 'r1': field 'label'"):
        train([records[0], {**records[1], "label": None}], tiny_config())
    with pytest.raises(ValueError, match="at least two labels"):
        train([r for r in records if r["label"] == "positive"], tiny_config())
    with pytest.raises(ValueError, match="unknown architecture"):
        train(records, tiny_config(architecture="svm"))


def test_paper_defaults_cover_every_architecture():
    from explain_engine.models import ARCHITECTURES

    assert set(PAPER_DEFAULTS) == set(ARCHITECTURES)
    assert TrainConfig(architecture="bilstm_attention").resolved() == {
        "epochs": 64,
        "batch_size": 128,
        "lr": 1e-4,
        "optimizer": "adam",
        "weight_decay": 0.0,
        "warmup": 0.0,
        "max_len": None,
    }
    transformer = TrainConfig(architecture="transformer", max_len=64, weight_decay=0.0).resolved()
    assert transformer == {
        "epochs": 3,
        "batch_size": 16,
        "lr": 2e-5,
        "optimizer": "adamw",
        "weight_decay": 0.0,
        "warmup": 0.1,
        "max_len": 64,
    }


def test_rationale_learns_to_select_a_human_like_share(records):
    config = tiny_config(
        architecture="rationale",
        model={"embedding_dim": 16, "hidden_size": 12, "selection_target": 0.2, "selection_lambda": 2.0},
        epochs=20,
        lr=0.02,
    )
    bundle = train(records, config)
    texts = [rec["text"] for rec in records]
    preds = bundle.predict(texts)
    share = np.mean([np.mean(p["attention"]) for p in preds])
    assert 0.08 <= share <= 0.4
    assert all(set(p["attention"]) <= {0.0, 1.0} for p in preds)
    assert bundle.metrics["test"]["accuracy"] >= 0.75


def test_cli_train_then_predict(tmp_path, records, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    out = tmp_path / "model"
    argv = [
        "train",
        "--data",
        str(data),
        "--model",
        "bilstm_attention",
        "--out",
        str(out),
        "--epochs",
        "3",
        "--batch-size",
        "16",
        "--lr",
        "0.02",
        "--embedding-dim",
        "16",
        "--hidden-size",
        "8",
        "--min-count",
        "1",
        "--quiet",
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["architecture"] == "bilstm_attention" and summary["test"]["n"] == 8
    unlabeled = tmp_path / "new.jsonl"
    unlabeled.write_text(
        json.dumps({"id": "x1", "text": "The food was great."})
        + "\n"
        + json.dumps({"id": "x2", "text": "Rude staff!"})
        + "\n"
    )
    preds_path = tmp_path / "preds.jsonl"
    assert main(["predict", "--model", str(out), "--data", str(unlabeled), "--out", str(preds_path)]) == 0
    rows = [json.loads(line) for line in preds_path.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["x1", "x2"]
    assert set(rows[0]) == {"id", "label", "probabilities", "attention"} and len(rows[0]["attention"]) == 4
    assert set(rows[1]["probabilities"]) == {"negative", "positive"}


def test_cli_reports_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine", "label": "1"}\n{"id": "b", "label": "0"}\n')
    assert main(["train", "--data", str(bad), "--model", "cnn", "--out", str(tmp_path / "m"), "--quiet"]) == 2
    assert "bad.jsonl:2: missing field 'text'" in capsys.readouterr().err
