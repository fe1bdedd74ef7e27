"""The fast inference paths the perturbation methods run on: each equals the plain computation.

Fused recurrent kernels against the explicit-gate loop, token-budget chunking, LIME's repeated
samples, the one-call banded solve, and the public scoring path with a token budget.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explain_engine.artifacts import TrainedModel
from explain_engine.explainers import explain
from explain_engine.explainers.lime_text import (
    distinct_masks,
    kernel_weights,
    lime_rows,
    sample_masks,
    weighted_ridge,
)
from explain_engine.explainers.limsse import _solve
from explain_engine.explainers.perturbation import Perturbed, chunk_tokens, forward_logits, iter_chunks
from explain_engine.explainers.registry import predicted_target
from explain_engine.models import build_model
from explain_engine.models.recurrent import GatedRNN
from explain_engine.vocab import Vocabulary
from tests.engine.test_explainers import TEXTS, tiny_bundle


def _masks() -> dict[str, torch.Tensor]:
    lengths = torch.tensor([9, 7, 4, 1, 0, 3])
    prefix = torch.arange(9)[None, :] < lengths[:, None]
    holes = prefix.clone()
    holes[1, 2] = False  # a gap inside a text
    holes[2, 6] = True  # a token after padding
    return {"prefix": prefix, "holes": holes}


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("layout", ["prefix", "holes"])
def test_fused_recurrent_inference_equals_the_explicit_gates(kind, bidirectional, layout):
    torch.manual_seed(3)
    rnn = GatedRNN(kind, 7, 5, bidirectional)
    x = torch.randn(6, 9, 7)
    mask = _masks()[layout]
    explicit = rnn(x, mask)  # gradients enabled: the explicit loop
    assert explicit[0].requires_grad
    for context in (torch.no_grad, torch.inference_mode):
        with context():
            fused = rnn(x, mask)
        for a, b in zip(explicit, fused, strict=True):
            torch.testing.assert_close(b, a.detach(), rtol=1e-5, atol=1e-5)
    assert fused[0][4].abs().sum() == 0 and fused[1][4].abs().sum() == 0  # the empty row stays zero


def test_fused_path_is_not_taken_for_traces_or_gradients():
    torch.manual_seed(0)
    rnn = GatedRNN("lstm", 4, 3, True)
    x = torch.randn(2, 5, 4)
    mask = torch.ones(2, 5, dtype=torch.bool)
    with torch.no_grad():
        _, _, trace = rnn(x, mask, return_trace=True)
    assert set(trace) == {"forward", "backward"}
    x.requires_grad_(True)
    rnn(x, mask)[1].sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0


@pytest.mark.parametrize("arch", ["bilstm_attention", "bigru", "lstm"])
def test_recurrent_models_predict_the_same_with_and_without_gradients(arch):
    bundle = tiny_bundle(arch, seed=2)
    batch = bundle.encode([*TEXTS, "slow"])
    model = bundle.model
    explicit = model(batch.ids, batch.mask)
    with torch.inference_mode():
        fused = model(batch.ids, batch.mask)
    torch.testing.assert_close(fused.logits, explicit.logits.detach(), rtol=1e-5, atol=1e-5)
    if explicit.attention is not None:
        torch.testing.assert_close(fused.attention, explicit.attention.detach(), rtol=1e-5, atol=1e-5)


def test_token_budget_chunks_cover_every_row_once():
    lengths = torch.tensor([1, 9, 3, 9, 5, 2, 7, 4, 8, 6])
    mask = torch.arange(9)[None, :] < lengths[:, None]
    rows = Perturbed(torch.where(mask, 5, 0), mask, None, torch.zeros(10, dtype=torch.long))
    seen = []
    for index, ids, chunk_mask, _ in iter_chunks(rows, batch_size=4, max_tokens=20):
        assert len(index) <= 4 and (len(index) == 1 or ids.numel() <= 20)
        assert ids.shape[1] == int(lengths[index].max())
        assert torch.equal(chunk_mask.sum(1), lengths[index])
        seen.extend(index.tolist())
    assert sorted(seen) == list(range(10))
    assert [len(c[0]) for c in iter_chunks(rows, batch_size=3)] == [3, 3, 3, 1]


def test_forward_logits_do_not_depend_on_the_chunking():
    bundle = tiny_bundle("bigru_attention")
    rows, *_ = lime_rows(bundle.encode(TEXTS), n_samples=200)
    whole = forward_logits(bundle.model, rows, batch_size=10_000)
    small = forward_logits(bundle.model, rows, batch_size=64, max_tokens=50)
    torch.testing.assert_close(small, whole, rtol=1e-5, atol=1e-6)
    assert chunk_tokens(bundle.model, "cpu") is not None and chunk_tokens(bundle.model, "cuda") is None


def test_lime_runs_each_distinct_sample_once():
    masks = sample_masks(np.random.default_rng(0), 4, 300)  # 15 possible samples: many repeats
    distinct, row = distinct_masks(masks)
    assert len(distinct) == len({m.tobytes() for m in masks}) < 300
    assert np.array_equal(distinct[row], masks)
    assert distinct[0].all()  # the unperturbed text, drawn first, stays first
    vocab = Vocabulary.build(TEXTS)
    batch = vocab.encode(["tasty but slow service"])
    rows, all_masks, _, sample_row = lime_rows(batch, n_samples=300)
    assert len(rows) == len(distinct_masks(all_masks[0])[0]) and len(sample_row) == 300
    real = rows.mask if rows.zero is None else rows.mask & ~rows.zero  # an empty sample: one zero vector
    kept = real[torch.as_tensor(sample_row)].sum(1).numpy()
    assert np.array_equal(kept, all_masks[0].sum(1))  # each sample's row keeps its words


def test_lime_on_distinct_samples_equals_lime_on_every_sample():
    bundle = tiny_bundle("cnn", seed=1)
    text = "great food"  # four possible samples of two words: nearly all of 500 draws repeat
    ours = explain(bundle, [text], method="lime", n_samples=500, seed=4)[0]
    batch = bundle.encode([text])
    rows, all_masks, _, sample_row = lime_rows(batch, n_samples=500, seed=4)
    assert len(rows) <= 4
    index = torch.as_tensor(sample_row)
    zero = None if rows.zero is None else rows.zero[index]
    every = Perturbed(rows.ids[index], rows.mask[index], zero, rows.doc[index])  # one row per sample
    target = predicted_target(bundle, batch)
    probs = forward_logits(bundle.model, every).softmax(-1)[:, int(target[0])].double().numpy()
    masks = all_masks[0]
    beta, _ = weighted_ridge(masks.astype(float), probs, kernel_weights(masks), 1.0)
    np.testing.assert_allclose(ours, beta, rtol=1e-4, atol=1e-5)


def test_one_banded_solve_for_all_texts_equals_one_per_text():
    rng = np.random.default_rng(5)
    n_docs, bands, width = 4, 3, 7
    band = np.zeros((n_docs, bands, width))
    for b in range(n_docs):
        z = (rng.random((30, width)) < 0.3).astype(float)
        z[:, b + 3 :] = 0.0  # texts of different lengths: the rest are never-drawn units
        gram = z.T @ z
        for d in range(bands):
            band[b, d, : width - d] = np.diagonal(gram, -d)
    rhs = rng.normal(size=(n_docs, width))
    together = _solve(band, rhs, 1e-10)
    for b in range(n_docs):
        alone = _solve(band[b : b + 1], rhs[b : b + 1], 1e-10)
        np.testing.assert_allclose(together[b], alone[0], rtol=1e-8, atol=1e-10)
        assert np.all(together[b, b + 3 :] == 0)


def test_scores_with_a_token_budget_equal_plain_batches():
    torch.manual_seed(0)
    texts = [*TEXTS, "slow", "the food was great and the service friendly but slow and cold"]
    vocab = Vocabulary.build(texts)
    bundle = TrainedModel(build_model("bilstm_attention", len(vocab), 2, hidden_size=6), vocab, ["a", "b"])
    plain = bundle.scores(texts, batch_size=2)
    budget = bundle.scores(texts, batch_size=64, max_tokens=12)
    np.testing.assert_allclose(budget, plain, rtol=1e-5, atol=1e-6)
