"""The transformer family: a tiny BERT checkpoint built here, loaded through the engine, fine-tuned with the
train CLI, its pieces mapped to canonical words by offsets, saved and loaded, and its special tokens kept
out of pooling and perturbation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from explain_engine.__main__ import main
from explain_engine.artifacts import TrainedModel
from explain_engine.explainers import explain_many
from explain_engine.explainers.lime_text import lime_rows
from explain_engine.explainers.limsse import limsse_rows
from explain_engine.explainers.perturbation import ngram_perturbations
from explain_engine.models import TransformerClassifier, build_model
from explain_engine.subword import NO_WORD, SubwordVocabulary, piece_owners
from explain_engine.text import pool_to_words, word_spans
from explain_engine.training import TrainConfig, train
from tests.engine.test_training import make_records
from tests.engine.tiny_transformer import build_tiny_checkpoint

# A word the tiny WordPiece vocabulary has never seen whole: it is split into several pieces.
RARE = "Unbelievably"


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return make_records(160)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, records) -> Path:
    texts = [rec["text"] for rec in records]
    assert not any(RARE.lower() in t.lower() for t in texts)
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-bert"), texts, layers=1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, records, checkpoint) -> Path:
    """A transformer fine-tuned by ``python -m explain_engine train`` (the folder it wrote)."""
    folder = tmp_path_factory.mktemp("runs")
    data = folder / "data.jsonl"
    data.write_text("".join(json.dumps(rec) + "\n" for rec in records), encoding="utf-8")
    out = folder / "transformer"
    argv = ["train", "--data", str(data), "--model", "transformer", "--checkpoint", str(checkpoint)]
    argv += ["--out", str(out), "--epochs", "10", "--batch-size", "8", "--lr", "3e-3", "--quiet"]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def bundle(trained) -> TrainedModel:
    return TrainedModel.load(trained, device="cpu")


def test_train_cli_fine_tunes_the_checkpoint_above_chance(trained, capsys):
    metrics = json.loads((trained / "metrics.json").read_text())
    config = json.loads((trained / "config.json").read_text())
    assert metrics["architecture"] == "transformer"
    assert metrics["history"][0]["val_accuracy"] <= 0.75  # it starts near chance ...
    assert metrics["test"]["accuracy"] >= 0.85  # ... and learns the sentiment words
    assert config["weights"] == {"format": "transformers", "folder": "transformer"}
    assert config["hyperparameters"]["optimizer"] == "adamw"
    assert config["max_len"] == 256  # the family's default
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in (trained / "transformer").iterdir()
    }
    assert not (trained / "model.pt").exists()


def test_predict_is_batched_and_labels_the_texts(bundle, records):
    texts = [rec["text"] for rec in records[:40]]
    predictions = bundle.predict(texts, batch_size=7)
    assert [p["attention"] for p in predictions] == [None] * 40
    accuracy = np.mean([p["label"] == rec["label"] for p, rec in zip(predictions, records, strict=False)])
    assert accuracy >= 0.85
    whole = bundle.scores(texts, batch_size=64)
    np.testing.assert_allclose(bundle.scores(texts, batch_size=3), whole, atol=1e-5)


def test_save_and_load_give_identical_scores(bundle, tmp_path, records):
    texts = [rec["text"] for rec in records[:10]]
    again = TrainedModel.load(bundle.save(tmp_path / "copy"), device="cpu")
    np.testing.assert_array_equal(again.scores(texts), bundle.scores(texts))
    assert again.model.config == bundle.model.config  # the checkpoint it came from, not the copy's path
    assert again.labels == bundle.labels


def test_pieces_map_to_words_by_offsets_and_words_sum_their_pieces(checkpoint):
    vocab = SubwordVocabulary.from_pretrained(checkpoint)
    text = f"{RARE} great,  acting!"
    item = vocab.tokenize(text)
    pieces = vocab.tokenizer.convert_ids_to_tokens(item.ids)
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
    assert item.owner[0] == item.owner[-1] == NO_WORD
    assert item.n_words == 3
    rare = [k for k, w in enumerate(item.owner) if w == 0]
    assert len(rare) >= 3  # the rare word is split into pieces
    assert "".join(pieces[k].removeprefix("##") for k in rare) == RARE.lower()
    second = [pieces[k] for k, w in enumerate(item.owner) if w == 1]
    assert "".join(p.removeprefix("##") for p in second) == "great," and second[-1] == ","
    scores = np.arange(1.0, len(item.ids) + 1.0)
    words = pool_to_words(scores, item.owner, item.n_words)
    assert words[0] == pytest.approx(scores[rare].sum())
    assert words.sum() == pytest.approx(scores[1:-1].sum())  # [CLS] and [SEP] go to no word


def test_truncation_keeps_the_special_tokens(checkpoint):
    vocab = SubwordVocabulary.from_pretrained(checkpoint, max_positions=12)
    text = " ".join(["the food was great"] * 10)
    short = vocab.tokenize(text, max_len=6)
    cls, sep = vocab.tokenizer.cls_token_id, vocab.tokenizer.sep_token_id
    assert len(short.ids) == 6 and short.ids[0] == cls and short.ids[-1] == sep
    assert short.owner == [NO_WORD, 0, 1, 2, 3, NO_WORD]
    assert short.n_words == len(word_spans(text))
    bounded = vocab.tokenize(text)  # no max_len: the model's positions bound it
    assert len(bounded.ids) == 12 and bounded.ids[-1] == sep


def test_piece_owners_for_byte_level_offsets():
    text = "good food!"
    spans = word_spans(text)
    # a byte-level BPE keeps the space before a word in its piece ("Ġfood" at 4..9)
    offsets = [(0, 0), (0, 4), (4, 9), (9, 10), (0, 0)]
    assert piece_owners(spans, offsets, [1, 0, 0, 0, 1]) == [NO_WORD, 0, 1, 1, NO_WORD]


def test_attention_maps_are_per_layer_and_row_stochastic(bundle, records):
    batch = bundle.encode([rec["text"] for rec in records[:3]])
    assert bundle.model.cls_position == 0
    with torch.no_grad():
        maps = bundle.model.attention_maps(batch.ids, batch.mask)
        output = bundle.model(batch.ids, batch.mask)
    heads = bundle.model.network.config.num_attention_heads
    assert len(maps) == bundle.model.network.config.num_hidden_layers
    assert maps[0].shape == (3, heads, batch.ids.shape[1], batch.ids.shape[1])
    torch.testing.assert_close(maps[-1].sum(-1), torch.ones(maps[-1].shape[:-1]))
    assert output.attention is None


def test_embedding_is_the_word_embedding_and_gradients_reach_it(bundle, records):
    batch = bundle.encode([rec["text"] for rec in records[:2]])
    model = bundle.model
    assert model.embedding is model.network.get_input_embeddings()
    embeds = model.embed(batch.ids).detach().requires_grad_(True)
    torch.testing.assert_close(
        model(batch.ids, batch.mask, embeds=embeds).logits, model(batch.ids, batch.mask).logits
    )
    model(batch.ids, batch.mask, embeds=embeds).logits[:, 0].sum().backward()
    real = embeds.grad.norm(dim=-1)[batch.mask]
    assert bool((real > 0).all())


def test_word_dropout_never_drops_special_tokens(records, checkpoint, monkeypatch):
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    forward = TransformerClassifier.forward

    def spy(self, ids, mask, embeds=None):
        if self.training:
            seen.append((ids.clone(), mask.clone()))
        return forward(self, ids, mask, embeds)

    monkeypatch.setattr(TransformerClassifier, "forward", spy)
    config = TrainConfig(
        architecture="transformer",
        model={"checkpoint": str(checkpoint)},
        epochs=1,
        batch_size=8,
        word_dropout=0.8,
        progress_bar=False,
    )
    bundle = train(records[:40], config)
    cls, sep, unk = (
        bundle.vocab.tokenizer.cls_token_id,
        bundle.vocab.tokenizer.sep_token_id,
        bundle.vocab.unk_id,
    )
    assert seen
    for ids, mask in seen:
        assert _special_kept(ids, mask, cls, sep)
        inner = mask.clone()
        inner[:, 0] = False
        inner[torch.arange(len(ids)), mask.sum(1) - 1] = False
        assert 0.6 < float((ids[inner] == unk).double().mean()) < 0.95  # the words are dropped


def _special_kept(ids: torch.Tensor, mask: torch.Tensor, cls: int, sep: int) -> bool:
    """Every row starts with [CLS] and ends (its last real token) with [SEP]."""
    last = mask.sum(1) - 1
    return bool((ids[:, 0] == cls).all() and (ids.gather(1, last[:, None]).squeeze(1) == sep).all())


def test_perturbations_never_drop_special_tokens(bundle, records):
    texts = [rec["text"] for rec in records[:4]]
    batch = bundle.encode(texts)
    cls, sep = bundle.vocab.tokenizer.cls_token_id, bundle.vocab.tokenizer.sep_token_id
    for unit in ("word", "token"):
        for n in (1, 3):
            omitted, _ = ngram_perturbations(batch, n, "omit", unit)
            assert _special_kept(omitted.ids, omitted.mask, cls, sep)
            occluded, _ = ngram_perturbations(batch, n, "occ", unit)
            position = torch.arange(occluded.ids.shape[1])
            last = occluded.mask.sum(1, keepdim=True) - 1
            ends = (position[None, :] == 0) | (position[None, :] == last)
            assert not bool((occluded.zero & ends).any())
        rows, masks, _, _ = lime_rows(batch, n_samples=60, unit=unit)
        assert _special_kept(rows.ids, rows.mask, cls, sep)
        assert min(m.shape[1] for m in masks) >= 3  # units are words (or pieces), never [CLS]/[SEP]
        rows, design, _ = limsse_rows(batch, n_samples=60, unit=unit)
        assert _special_kept(rows.ids, rows.mask, cls, sep)
        # each row is [CLS] + its substring's pieces + [SEP]
        units = {"word": [len(word_spans(t)) for t in texts]}.get(unit)
        if units is not None:
            assert design.width == max(units)


def test_perturbation_methods_run_on_the_transformer_and_score_words(bundle, records):
    texts = [rec["text"] for rec in records[:3]]
    params = {"lime": {"n_samples": 100}, "limsse_ms_s": {"n_samples": 100}}
    out = explain_many(bundle, texts, ["omit_1", "occ_3", "lime", "limsse_ms_s"], params=params)
    for method, maps in out.items():
        for text, scores in zip(texts, maps, strict=True):
            assert len(scores) == len(word_spans(text)), method
            assert np.isfinite(scores).all()
    # omission of one word: the word's score is the change of s(k, X) when it is deleted
    batch = bundle.encode(texts[:1])
    n_words = len(word_spans(texts[0]))
    full = bundle.scores(texts[:1])[0]
    k = int(full.argmax())
    for w in range(n_words):
        keep = [t for t, owner in enumerate(batch.owners[0]) if owner != w]
        ids = batch.ids[:, keep]
        with torch.no_grad():
            dropped = bundle.model(ids, torch.ones_like(ids, dtype=torch.bool)).logits[0, k]
        assert out["omit_1"][0][w] == pytest.approx(full[k] - float(dropped), abs=1e-4)


def test_a_checkpoint_is_required_and_a_missing_one_is_named(monkeypatch):
    with pytest.raises(ValueError, match="needs a checkpoint"):
        build_model("transformer", 0, 2)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="'no-such-org/no-such-model'.*HF_HUB_OFFLINE"):
        build_model("transformer", 0, 2, checkpoint="no-such-org/no-such-model")
    with pytest.raises(ValueError, match="'no-such-org/no-such-model'.*tokenizer"):
        SubwordVocabulary.from_pretrained("no-such-org/no-such-model")


def test_checkpoint_only_with_the_transformer(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"text": "good", "label": "a"}) + "\n", encoding="utf-8")
    argv = ["train", "--data", str(data), "--model", "cnn", "--checkpoint", "x", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "--checkpoint is for --model transformer" in capsys.readouterr().err


def test_the_model_class_reports_its_family():
    assert TransformerClassifier.architecture == "transformer"
    assert TransformerClassifier.cls_position == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_scores_match_the_cpu(trained, records):
    texts = [rec["text"] for rec in records[:16]]
    cpu = TrainedModel.load(trained, device="cpu")
    gpu = TrainedModel.load(trained, device="cuda")
    assert next(gpu.model.parameters()).is_cuda
    np.testing.assert_allclose(gpu.scores(texts), cpu.scores(texts), atol=1e-4)
    assert [p["label"] for p in gpu.predict(texts)] == [p["label"] for p in cpu.predict(texts)]
