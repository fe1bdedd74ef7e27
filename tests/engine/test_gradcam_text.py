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
