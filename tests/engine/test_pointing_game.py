"""Hybrid documents, the pointing game (Poerner et al. 2018 §2, §4), manual ground truth and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from explain_engine.__main__ import main
from explain_engine.artifacts import TrainedModel
from explain_engine.datasets.hybrid import hybrid_documents, sentences_of
from explain_engine.datasets.rationales import read_mohseni, read_movie_rationales, relevant_by_type, type_hit
from explain_engine.explainers import methods_for
from explain_engine.metrics.pointing_game import (
    hit_feat,
    hit_hybrid,
    hit_manual,
    hit_target,
    pointing_game,
    rmax,
)
from explain_engine.models import build_model
from explain_engine.models.base import ModelOutput, TextClassifier
from explain_engine.vocab import Vocabulary
from tests.conftest import require_shared_data
from tests.engine.test_explainers import linear_bundle

# ------------------------------------------------------------------------------------------ hit functions


def test_rmax_breaks_ties_uniformly():
    assert rmax([0.1, 0.7, 0.3]) == 1
    assert rmax([1, 0, 1]) == 0
    rng = np.random.default_rng(0)
    picks = np.bincount([rmax([1, 0, 1, 1], rng) for _ in range(600)], minlength=4)
    assert picks[1] == 0 and picks[[0, 2, 3]].min() > 150
    with pytest.raises(ValueError):
        rmax([])


def test_hit_functions():
    scores = [0.1, 0.9, 0.3, 0.2]
    assert hit_hybrid(scores, ["neg", "pos", "pos", "neg"], "pos")
    assert not hit_hybrid(scores, ["pos", "neg", "pos", "pos"], "pos")
    assert hit_manual(scores, {1, 3}) and not hit_manual(scores, [0, 2])
    assert hit_target(scores, 1) and not hit_target(scores, 2)
    assert hit_feat(scores, [None, "Pl", "Sg", None], "Pl") and not hit_feat(
        scores, [None, "Sg", None, None], "Pl"
    )
    with pytest.raises(ValueError, match="scores for"):
        hit_hybrid(scores, ["pos"], "pos")


# -------------------------------------------------------------------------------------- hybrid documents


def _sentences(n: int) -> list[dict]:
    good = ["the food was great", "great service", "tasty and friendly"]
    bad = ["awful food", "cold and slow service", "the service was awful"]
    out = []
    for i in range(n):
        pool, label = (good, "pos") if i % 2 == 0 else (bad, "neg")
        out.append({"id": f"s{i}", "text": pool[i % 3], "label": label})
    return out


def test_hybrid_documents_concatenate_shuffled_sentences_and_label_every_word():
    sentences = _sentences(47)
    docs = hybrid_documents(sentences, per_document=10, seed=3)
    assert len(docs) == 4  # the rest of 7 sentences is dropped
    used = [s for d in docs for s in d.sources]
    assert len(used) == len(set(used)) == 40
    by_id = {s["id"]: s for s in sentences}
    for d in docs:
        assert len(d.word_labels) == len(d.text.split())
        expected = [by_id[s]["label"] for s in d.sources for _ in by_id[s]["text"].split()]
        assert list(d.word_labels) == expected
        assert d.text == " ".join(by_id[s]["text"] for s in d.sources)
    assert [d.sources for d in docs] == [d.sources for d in hybrid_documents(sentences, 10, seed=3)]
    assert [d.sources for d in docs] != [d.sources for d in hybrid_documents(sentences, 10, seed=4)]
    assert len(hybrid_documents(sentences, 10, seed=3, limit=2)) == 2


def test_sentences_of_splits_reviews():
    records = [{"id": "r1", "text": "Great  food! Slow service.\nWould return", "label": 1}]
    out = sentences_of(records)
    assert [s["text"] for s in out] == ["Great food!", "Slow service.", "Would return"]
    assert {s["label"] for s in out} == {"1"}
    assert [s["text"] for s in sentences_of(records, split=False)] == [
        "Great food! Slow service. Would return"
    ]


def test_pointing_game_on_hybrid_documents_of_a_known_model():
    bundle = linear_bundle()
    docs = hybrid_documents(_sentences(200), per_document=10, seed=0)
    game = pointing_game(bundle, docs, ["grad_dot_1s", "omit_1", "grad_l2_1s"], kind="hybrid", seed=1)
    assert game.n_documents + game.n_discarded == len(docs)
    assert set(game.hits) == {"grad_dot_1s", "omit_1", "grad_l2_1s", "random"}
    # The most relevant word of the linear model is a sentiment word of the predicted class.
    assert game.hits["grad_dot_1s"].all() and game.hits["omit_1"].all()
    assert 0.2 < game.hits["random"].mean() < 0.8
    assert game.accuracy("grad_dot_1s").value == 1.0
    table = game.table()
    assert "grad_dot_1s" in table and "random" in table and f"/{game.n_documents}" in table
    assert game.to_dict()["accuracy"]["random"]["n"] == game.n_documents
    # each method's time is kept (methods sharing passes under their group) and printed under the table
    assert set(game.seconds) == {"gradients", "omit_1", "random"} and all(
        s >= 0 for s in game.seconds.values()
    )
    assert "seconds: gradients" in table


def test_documents_of_a_class_no_word_has_are_discarded():
    bundle = linear_bundle(bias=(5.0, -5.0))  # always predicts neg
    docs = [
        {"text": "great food", "word_labels": ["pos", "pos"]},
        {"text": "awful food", "word_labels": ["neg"] * 2},
    ]
    game = pointing_game(bundle, docs, ["grad_dot_1s"])
    assert (game.n_documents, game.n_discarded) == (1, 1)


def test_manual_pointing_game_uses_correctly_classified_documents_only():
    bundle = linear_bundle()
    docs = [
        {"text": "the food was great", "label": "pos", "relevant": [3]},
        {"text": "the food was awful", "label": "neg", "relevant": [1]},
        {"text": "awful awful food", "label": "pos", "relevant": [0]},  # misclassified: left out
    ]
    game = pointing_game(bundle, docs, ["grad_dot_1s"], kind="manual")
    assert (game.n_documents, game.n_discarded) == (2, 1)
    assert game.hits["grad_dot_1s"].tolist() == [True, False]


def test_label_map_renames_data_labels():
    bundle = linear_bundle()
    docs = [{"text": "the food was great", "label": "1", "relevant": [3]}]
    game = pointing_game(bundle, docs, ["grad_dot_1s"], kind="manual", label_map={"1": "pos", "0": "neg"})
    assert game.hits["grad_dot_1s"].tolist() == [True]


# ------------------------------------------------------------------------------------------- real data


class ScoreBag(TextClassifier):
    """s(pos) = −s(neg) = Σ_t v[x_t]: a one-dimensional embedding holds each word's score."""

    architecture = "score_bag"

    def __init__(self, values: torch.Tensor):
        super().__init__(vocab_size=len(values), num_classes=2)
        self.embedding = nn.Embedding(len(values), 1, padding_idx=0)
        with torch.no_grad():
            self.embedding.weight.copy_(values[:, None])

    def encode(self, embeds: torch.Tensor, mask: torch.Tensor) -> ModelOutput:
        total = (embeds[..., 0] * mask).sum(1, keepdim=True)
        return ModelOutput(torch.cat([-total, total], dim=1))


def _lexicon(texts: list[str]) -> tuple[Vocabulary, torch.Tensor]:
    """Hu & Liu's positive words score about +1 and negative words about −1 (distinct values, no ties)."""
    folder = require_shared_data("opinion-lexicon-hu-liu")
    lexicon = {}
    for name, sign in (("positive-words.txt", 1.0), ("negative-words.txt", -1.0)):
        words = [w.strip() for w in (folder / name).read_text(encoding="latin-1").splitlines()]
        words = [w for w in words if w and not w.startswith(";")]
        for i, word in enumerate(words):
            lexicon[word] = sign * (1.0 + i / (10 * len(words)))
    vocab = Vocabulary.build(texts)
    return vocab, torch.tensor([lexicon.get(tok, 0.0) for tok in vocab.itos])


def _lexicon_bundle(texts: list[str], labels=("0", "1")) -> TrainedModel:
    vocab, values = _lexicon(texts)
    return TrainedModel(ScoreBag(values), vocab, list(labels), device="cpu")


def _reference_hits(texts_docs, vocab, values) -> list[bool | None]:
    """Independent reference: is the most relevant word (by summed lexicon score, for the predicted class)
    in a sentence of the predicted class? None where the maximum is shared by words of both classes (a random tie-break)."""
    expected = []
    for d in texts_docs:
        batch = vocab.encode([d.text])
        words = np.zeros(len(d.word_labels))
        np.add.at(words, batch.owners[0], values[batch.ids[0]].numpy())
        predicted = "1" if words.sum() > 0 else "0"
        relevance = words if predicted == "1" else -words  # relevance for the predicted class
        if predicted in d.word_labels:
            best = {d.word_labels[i] == predicted for i in np.flatnonzero(relevance == relevance.max())}
            expected.append(best.pop() if len(best) == 1 else None)
    return expected


def _agree(hits: np.ndarray, expected: list[bool | None]) -> bool:
    return all(e is None or bool(h) == e for h, e in zip(hits, expected, strict=True))


def test_pointing_game_on_sst2_hybrid_documents():
    from explain_engine.datasets import read_sst2

    records = read_sst2(require_shared_data("sst2-glue", "dev.tsv"))
    docs = hybrid_documents(sentences_of(records, split=False), 10, seed=0, limit=30)
    assert len(docs) == 30 and all(len(d.sources) == 10 for d in docs)
    texts = [r["text"] for r in records]
    bundle = _lexicon_bundle(texts)
    game = pointing_game(bundle, docs, ["grad_dot_1s", "occ_1"], seed=0)
    expected = _reference_hits(docs, *_lexicon(texts))
    assert game.n_documents == len(expected) >= 25
    assert sum(e is not None for e in expected) >= 20
    assert _agree(game.hits["grad_dot_1s"], expected)
    assert _agree(game.hits["occ_1"], expected)  # occluding a word of a linear model removes its score
    assert game.hits["grad_dot_1s"].mean() > game.hits["random"].mean()


def test_pointing_game_on_yelp_hat_hybrid_documents():
    from explain_engine.datasets.yelphat import read_raw

    records = read_raw(require_shared_data("yelp-hat", "raw", "ham_part1(50words).csv"))[:60]
    sentences = sentences_of(records)
    assert len(sentences) > 2 * len(records)
    docs = hybrid_documents(sentences, 10, seed=0, limit=12)
    label_of = {r["id"]: str(r["label"]) for r in records}
    for d in docs:
        assert {label_of[s.split("#")[0]] for s in d.sources} == set(d.word_labels)
    bundle = _lexicon_bundle([r["text"] for r in records])
    game = pointing_game(bundle, docs, ["grad_dot_1s"], seed=0)
    expected = _reference_hits(docs, *_lexicon([r["text"] for r in records]))
    assert game.n_documents == len(expected) >= 10
    assert _agree(game.hits["grad_dot_1s"], expected) and sum(e is not None for e in expected) >= 8


def test_movie_rationales_loader_and_manual_pointing_game(tmp_path):
    path = require_shared_data("movie-review-rationales-zaidan2007", "movie_rationales.jsonl")
    everything = read_movie_rationales(path, annotated_only=False)
    assert len(everything) == 2000
    records = [r for r in everything if r["relevant"]]
    assert len(records) == 1799  # 1800 annotated reviews, one (posR_161) without a tag
    lines = path.read_text(encoding="utf-8").splitlines()
    untagged = next(i for i, r in enumerate(everything) if r["id"] == "posR_161")
    small = tmp_path / "three.jsonl"
    small.write_text("\n".join([lines[0], lines[untagged], lines[1]]) + "\n", encoding="utf-8")
    assert [r["id"] for r in read_movie_rationales(small)] == ["posR_000", "posR_001"]
    first = records[0]
    assert first["id"] == "posR_000" and first["label"] == "pos"
    words = first["text"].split()
    raw = json.loads(lines[0])
    start, end = raw["rationale_spans"][0]
    assert first["relevant"][: end - start] == list(range(start, end))
    assert " ".join(words[start:end]) == raw["rationale_texts"][0]
    sample = records[:10] + records[-10:]
    bundle = _lexicon_bundle([r["text"] for r in sample], labels=("neg", "pos"))
    game = pointing_game(bundle, sample, ["grad_dot_1s"], kind="manual", seed=0)
    assert game.n_documents >= 10
    assert game.hits["grad_dot_1s"].mean() > game.hits["random"].mean()


def test_mohseni_20news_loader(tmp_path):
    path = require_shared_data("mohseni-20news-human-attention", "human_attention_subset.jsonl")
    records = read_mohseni(path)
    assert len(records) == 11
    assert {r["category"] for r in records} == {"sci.med", "sci.electronics"}
    first = next(r for r in records if r["id"] == "sci.electronics/53968")
    assert first["types"]["receiver"] == 1.0 and first["types"]["vcrs"] == 0.5
    assert first["text"] is None and first["relevant"] is None
    assert "vcrs" not in read_mohseni(path, min_weight=1.0)[0]["types"]
    article = tmp_path / "sci.electronics" / "53968"
    article.parent.mkdir()
    article.write_text("The IR receiver, and the Remote-control circuit.", encoding="latin-1")
    with pytest.raises(FileNotFoundError):
        read_mohseni(path, tmp_path)
    for r in records:
        if r["id"] != "sci.electronics/53968":
            (tmp_path / r["category"]).mkdir(exist_ok=True)
            (tmp_path / r["category"] / r["id"].split("/")[1]).write_text("nothing here", encoding="latin-1")
    with_texts = {r["id"]: r for r in read_mohseni(path, tmp_path)}
    assert with_texts["sci.electronics/53968"]["relevant"] == [2, 5, 6]
    assert relevant_by_type("a Circuit.", ["circuit"]) == [1]
    assert type_hit("Remote-control", {"remote": 1.0}) and not type_hit("remotes", ["remote"])


# ------------------------------------------------------------------------------------------------ CLI


def _saved_cnn(tmp_path, texts):
    torch.manual_seed(0)
    vocab = Vocabulary.build(texts)
    model = build_model("cnn", len(vocab), 2, embedding_dim=8, num_filters=3, fc_size=4)
    TrainedModel(model, vocab, ["0", "1"], device="cpu").save(tmp_path / "model")
    return tmp_path / "model"


def test_pointing_game_and_explain_commands(tmp_path, capsys):
    data = tmp_path / "sentences.jsonl"
    sentences = _sentences(40)
    with data.open("w", encoding="utf-8") as fh:
        for s in sentences:
            fh.write(
                json.dumps({"id": s["id"], "text": s["text"], "label": "1" if s["label"] == "pos" else "0"})
                + "\n"
            )
    model = _saved_cnn(tmp_path, [s["text"] for s in sentences])
    status = main(
        [
            "pointing-game",
            "--model",
            str(model),
            "--data",
            str(data),
            "--methods",
            "grad_dot_1s,occ_1",
            "--subset",
            "all",
            "--json",
        ]
    )
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "hybrid" and result["documents"] + result["discarded"] == 4
    assert set(result["accuracy"]) == {"grad_dot_1s", "occ_1", "random"}
    out = tmp_path / "explained.jsonl"
    status = main(
        ["explain", "--model", str(model), "--data", str(data), "--methods", "grad_dot_int_s,lime"]
        + ["--param", "lime.n_samples=50", "--limit", "5", "--evidence", "1", "--out", str(out)]
    )
    assert status == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 5
    assert set(rows[0]["explanations"]) == {"grad_dot_int_s", "lime"}
    assert len(rows[0]["explanations"]["lime"]) == len(rows[0]["text"].split())
    ev = rows[0]["evidence"]["lime"]["evidence"][0]
    assert rows[0]["text"][ev["start"] : ev["end"]] == ev["text"]
    assert (
        main(["explain", "--model", str(model), "--data", str(data), "--methods", "nope", "--out", "-"]) == 2
    )


def test_pointing_game_command_on_manual_ground_truth(tmp_path, capsys):
    data = tmp_path / "movie_rationales.jsonl"
    reviews = [
        ("pos", "the food was great and tasty", [[3, 4]]),
        ("neg", "awful food , cold and slow", [[0, 1]]),
        ("pos", "friendly service and great food", [[0, 1], [3, 4]]),
        ("neg", "the service was slow", []),
    ]
    with data.open("w", encoding="utf-8") as fh:
        for i, (label, text, spans) in enumerate(reviews):
            row = {"id": f"r{i}", "label": label, "text": text, "rationale_spans": spans}
            fh.write(json.dumps(row) + "\n")
    model = _saved_cnn(tmp_path, [text for _, text, _ in reviews])
    args = ["pointing-game", "--model", str(model), "--data", str(data), "--methods", "grad_dot_1s"]
    assert main([*args, "--label-map", "neg=0,pos=1", "--limit", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "manual" and result["documents"] + result["discarded"] == 2
    assert main([*args, "--label-map", "neg=0,pos=1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["documents"] + result["discarded"] == 3  # the review without rationales is not read
    assert main([*args, "--label-map", "neg"]) == 2


def test_pointing_game_command_reads_raw_yelp_hat_csv(tmp_path, capsys):
    import csv

    reviews = [
        (1, "Great food. Friendly service!"),
        (0, "Awful food. Cold and slow."),
        (1, "Tasty food. Great service."),
        (0, "Slow service. Awful and cold."),
    ]
    data = tmp_path / "ham_part_test.csv"
    with data.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["Input.label", "Input.text", "Answer.Q1Answer", "Answer.html_output"])
        for label, text in reviews:
            spans = " ".join(f"<span>{w}</span>" for w in text.split()) + " <span></span>"
            writer.writerow([label, text, "yes" if label else "no", spans])
    model = _saved_cnn(tmp_path, [text for _, text in reviews])
    argv = [
        "pointing-game",
        "--model",
        str(model),
        "--data",
        str(data),
        "--methods",
        "occ_1",
        "--subset",
        "all",
    ]
    assert main([*argv, "--per-document", "3", "--json", "--progress", "--batch-size", "1"]) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    # Eight sentences (two per review) make two hybrid documents of three; two sentences are left over.
    assert result["kind"] == "hybrid" and result["documents"] + result["discarded"] == 2
    # --progress: a line per batch of one document on stderr, each naming the method's seconds so far
    lines = out.err.strip().splitlines()
    assert len(lines) == result["documents"] and lines[-1].startswith(f"{result['documents']}/")
    assert all("occ_1" in line for line in lines) and set(result["method_seconds"]) == {"occ_1", "random"}


def _sentences_file(tmp_path, n: int = 40):
    data = tmp_path / "sentences.jsonl"
    sentences = _sentences(n)
    with data.open("w", encoding="utf-8") as fh:
        for s in sentences:
            label = "1" if s["label"] == "pos" else "0"
            fh.write(json.dumps({"id": s["id"], "text": s["text"], "label": label}) + "\n")
    return data, sentences


def test_pointing_game_command_plays_all_methods_on_a_cnn(tmp_path, capsys):

    data, sentences = _sentences_file(tmp_path)
    model = _saved_cnn(tmp_path, [s["text"] for s in sentences])
    argv = [
        "pointing-game",
        "--model",
        str(model),
        "--data",
        str(data),
        "--methods",
        "all",
        "--subset",
        "all",
    ]
    standalone = set(methods_for("cnn", standalone=True))
    assert "decision_tree" in methods_for("cnn") and "decision_tree" not in standalone

    # Without training texts the trees cannot be fitted: every other method plays, the reason is printed.
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["accuracy"]) == standalone | {"random"}
    assert "--train" in result["skipped"]["decision_tree"]
    # LRP reports how far its relevances outgrow the class score, one ratio per document
    lrp_report = result["amplification"]["lrp"]
    assert len(lrp_report["ratios"]) == result["documents"] and lrp_report["eps"] == 1e-3
    assert all(r >= 1.0 - 1e-6 for r in lrp_report["ratios"]) and set(result["amplification"]) == {"lrp"}
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "lime" in table and "skipped decision_tree: needs trees fitted" in table
    assert "lrp: relevance / class score (sum of |relevance|): median" in table

    # With --train the CLI fits the trees (a seeded 90/10 split of the records) and plays them too.
    assert main([*argv, "--train", str(data), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["accuracy"]) == standalone | {"random", "decision_tree"} and not result["skipped"]
    assert "36 training and 4 validation texts" in result["notes"][0]

    # A model folder's splits.json picks the training texts out of the --data records themselves.
    ids = [s["id"] for s in sentences]
    (model / "splits.json").write_text(json.dumps({"train": ids[:30], "validation": ids[30:36], "test": []}))
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "decision_tree" in result["accuracy"] and "30 training and 6 validation" in result["notes"][0]
    assert "splits.json" in result["notes"][0]


def test_pointing_game_command_refuses_decision_tree_without_training_texts(tmp_path, capsys):
    data, sentences = _sentences_file(tmp_path)
    model = _saved_cnn(tmp_path, [s["text"] for s in sentences])
    argv = ["pointing-game", "--model", str(model), "--data", str(data), "--methods", "decision_tree"]
    argv += ["--subset", "all"]
    assert main(argv) == 2
    assert "needs trees fitted on the model's training texts: pass --train" in capsys.readouterr().err
    assert main([*argv, "--train", str(data), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["accuracy"]) == {"decision_tree", "random"}


def test_pointing_game_command_on_the_20news_attention_lists(tmp_path, capsys):
    """The shared folder holds the marked word types of 11 articles, not their texts: without
    ``--texts-dir`` the command says which texts it needs; given a folder of articles it plays."""
    path = require_shared_data("mohseni-20news-human-attention", "human_attention_subset.jsonl")
    records = read_mohseni(path)
    folder = tmp_path / "20news-bydate-test"
    texts = []
    for r in records:  # stand-in articles that mention some of the marked types among other words
        marked = sorted(r["types"])[:3]
        text = f"Subject: a question . I read that {' and '.join(marked)} matter here , any ideas ?"
        (folder / r["category"]).mkdir(parents=True, exist_ok=True)
        (folder / r["id"]).write_text(text, encoding="latin-1")
        texts.append(text)
    torch.manual_seed(0)
    vocab = Vocabulary.build(texts)
    model = build_model("cnn", len(vocab), 2, embedding_dim=8, num_filters=3, fc_size=4)
    TrainedModel(model, vocab, ["sci.electronics", "sci.med"], device="cpu").save(tmp_path / "model")
    argv = ["pointing-game", "--model", str(tmp_path / "model"), "--data", str(path)]
    argv += ["--methods", "grad_dot_1s,occ_1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not the texts of their 11 articles" in err and "--texts-dir" in err
    assert main([*argv, "--texts-dir", str(folder), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "manual" and result["documents"] + result["discarded"] == 11
    assert set(result["accuracy"]) == {"grad_dot_1s", "occ_1", "random"}
    (folder / records[0]["id"]).unlink()
    assert main([*argv, "--texts-dir", str(folder)]) == 2
    assert "1 of the 11 annotated 20news-bydate test articles are missing" in capsys.readouterr().err


def test_hybrid_documents_come_from_the_models_test_split_only(tmp_path, capsys):
    from explain_engine.cli.pointing_game import held_out

    data, sentences = _sentences_file(tmp_path)
    model = _saved_cnn(tmp_path, [s["text"] for s in sentences])
    ids = [s["id"] for s in sentences]
    (model / "splits.json").write_text(
        json.dumps({"train": ids[:20], "validation": ids[20:25], "test": ids[25:]})
    )
    records = [json.loads(line) for line in data.read_text().splitlines()]
    chosen, source = held_out(records, str(model), "test")
    assert [r["id"] for r in chosen] == ids[25:] and "15 of 40 records" in source
    assert held_out(records, str(model), "all")[0] == records
    argv = ["pointing-game", "--model", str(model), "--data", str(data), "--methods", "occ_1", "--json"]
    assert main([*argv, "--per-document", "5"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["documents"] + result["discarded"] == 3  # 15 test sentences, 5 a document; 40 would make 8
    assert "test split" in result["source"]
    # Without splits.json the records' own split field decides; with neither, the command says what to do.
    (model / "splits.json").unlink()
    split_data = tmp_path / "with_split.jsonl"
    split_data.write_text(
        "\n".join(
            json.dumps({**r, "split": "test" if i % 4 == 0 else "train"}) for i, r in enumerate(records)
        )
    )
    assert [r["id"] for r in held_out(
        [json.loads(line) for line in split_data.read_text().splitlines()], str(model), "test"
    )[0]] == ids[::4]  # fmt: skip
    assert main(argv) == 2
    assert "pass --subset all" in capsys.readouterr().err
