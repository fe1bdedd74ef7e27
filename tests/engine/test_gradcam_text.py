"""Grad-CAM-Text as Lertvittayakumjorn & Toni 2019 eq. 1 on a CNN small enough to work out by hand."""

from __future__ import annotations

import numpy as np
import torch

from explain_engine.artifacts import TrainedModel
from explain_engine.evidence import evidence_and_counter
from explain_engine.explainers import explain_many
from explain_engine.explainers.gradcam import gradcam_text
from explain_engine.models.cnn import KimCNN
from explain_engine.vocab import Vocabulary


def hand_cnn() -> TrainedModel:
    """Words a, b, c with embeddings (1, 0), (0, 2), (0, −1); three width-1 filters (1, 0), (0, 1),
    (0, 1.5); FC the identity; class 0's score h1 + h2 − h3 + 1, class 1's score 0.

    On "a b c" the filters pick a (v1 = 1), b (v2 = 2) and b (v3 = 3); h = v; s0 = 1 > s1 = 0, and
    ∂s0/∂v = (1, 1, −1). Eq. 1: E = |max(∂, 0)|·v = (1, 2, 0) → a: 1, b: 2, c: 0; with min:
    E⁻ = (0, 0, 3) → b: 3. The signed sum would give a: 1, b: 2 − 3 = −1, c: 0 — a top word of "a",
    where the paper's evidence is "b" (and its counter-evidence is "b" too).
    """
    vocab = Vocabulary(["<pad>", "<unk>", "a", "b", "c"])
    model = KimCNN(len(vocab), 2, embedding_dim=2, filter_sizes=(1,), num_filters=3, fc_size=3, dropout=0.0)
    with torch.no_grad():
        model.embedding.weight.copy_(
            torch.tensor([[0, 0], [0, 0], [1, 0], [0, 2], [0, -1]], dtype=torch.float)
        )
        model.convs[0].weight.copy_(torch.tensor([[[1.0], [0.0]], [[0.0], [1.0]], [[0.0], [1.5]]]))
        model.convs[0].bias.zero_()
        model.fc.weight.copy_(torch.eye(3))
        model.fc.bias.zero_()
        model.out.weight.copy_(torch.tensor([[1.0, 1.0, -1.0], [0.0, 0.0, 0.0]]))
        model.out.bias.copy_(torch.tensor([1.0, 0.0]))
    return TrainedModel(model.eval(), vocab, ["x", "y"], device="cpu")


def test_evidence_takes_the_max_part_and_counter_evidence_the_min_part():
    bundle = hand_cnn()
    batch = bundle.encode(["a b c"])
    target = torch.tensor([0])
    assert bundle.scores(["a b c"]).argmax() == 0
    parts = {
        p: gradcam_text(bundle.model, batch.ids, batch.mask, target, p)[0].tolist()
        for p in ("positive", "negative", "signed")
    }
    assert parts == {"positive": [1.0, 2.0, 0.0], "negative": [0.0, -3.0, 0.0], "signed": [1.0, -1.0, 0.0]}

    out = explain_many(bundle, ["a b c"], ["gradcam"])
    np.testing.assert_allclose(out["gradcam"][0], [1, 2, 0])
    np.testing.assert_allclose(out.counter["gradcam"][0], [0, -3, 0])
    paper = evidence_and_counter("a b c", out["gradcam"][0], 1, counter_scores=out.counter["gradcam"][0])
    assert [e.text for e in paper["evidence"]] == ["b"] and [e.text for e in paper["counter_evidence"]] == [
        "b"
    ]
    signed = evidence_and_counter("a b c", parts["signed"], 1)
    assert [e.text for e in signed["evidence"]] == ["a"]  # what the signed default used to show

    single = explain_many(bundle, ["a b c"], ["gradcam"], params={"gradcam": {"part": "signed"}})
    np.testing.assert_allclose(single["gradcam"][0], [1, -1, 0])
    assert "gradcam" not in single.counter


def test_evidence_ngrams_are_chosen_among_those_the_filters_detected(tmp_path, capsys):
    """§4.3.1: "we select, as the evidence, non-overlapping n-grams which are detected by at least one
    of the filters". The detected n-grams are each filter's max-pooled window; the n-gram of the
    filter widths with the highest sum of word effects is often none of them (two detected windows
    side by side sum highest across their border)."""
    import json

    from explain_engine.__main__ import main
    from explain_engine.evidence import top_ngrams
    from explain_engine.models import build_model

    torch.manual_seed(4)
    words = [f"w{k}" for k in range(30)]
    rng = np.random.default_rng(4)
    texts = [" ".join(rng.choice(words, int(rng.integers(8, 25)))) for _ in range(30)]
    vocab = Vocabulary.build(texts)
    sizes = {"embedding_dim": 8, "filter_sizes": (2, 3), "num_filters": 3, "fc_size": 6}
    bundle = TrainedModel(build_model("cnn", len(vocab), 2, **sizes), vocab, ["neg", "pos"], device="cpu")
    out = explain_many(bundle, texts, ["gradcam"])
    batch = bundle.encode(texts)
    argmax = bundle.model(batch.ids, batch.mask).extras["argmax"]
    widths = [2] * 3 + [3] * 3
    outside = 0
    for i, text in enumerate(texts):
        n = len(text.split())
        detected = sorted({(int(s), min(int(s) + w, n)) for s, w in zip(argmax[i], widths, strict=True)})
        assert out.ngrams["gradcam"][i] == detected
        chosen = evidence_and_counter(text, out["gradcam"][i], 3, (2, 3), counter_scores=out.counter["gradcam"][i],
                                      candidates=out.ngrams["gradcam"][i])  # fmt: skip
        for piece in chosen["evidence"] + chosen["counter_evidence"]:
            assert (piece.first_word, piece.end_word) in detected
        everywhere = top_ngrams(out["gradcam"][i], (2, 3), 3)
        outside += sum((a, b) not in detected for a, b, _ in everywhere)
    assert outside > 0  # without the detected n-grams, evidence would leave them
    path = tmp_path / "texts.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "text": t, "label": "pos"}) + "\n" for i, t in enumerate(texts))
    )
    bundle.save(tmp_path / "cnn")
    args = ["explain", "--model", str(tmp_path / "cnn"), "--data", str(path), "--methods", "gradcam"]
    assert main([*args, "--evidence", "3", "--ngrams", "--out", str(tmp_path / "e.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    for row, ranges in zip(rows, out.ngrams["gradcam"], strict=True):
        for piece in row["evidence"]["gradcam"]["evidence"]:
            assert (piece["first_word"], piece["end_word"]) in ranges


def test_top_ngrams_among_candidates_scores_only_those():
    from explain_engine.evidence import top_ngrams

    scores = np.array([1.0, 3.0, 3.0, 1.0, 0.0, 0.5])
    assert top_ngrams(scores, (2,), 2)[0][:2] == (1, 3)  # "b c" sums highest
    chosen = top_ngrams(scores, (2,), 3, candidates=[(0, 2), (2, 4), (4, 6), (9, 11)])
    assert chosen == [(0, 2, 4.0), (2, 4, 4.0), (4, 6, 0.5)]
    assert top_ngrams(scores, (2,), 1, counter=True, candidates=[(0, 2), (4, 6)]) == [(4, 6, 0.5)]
