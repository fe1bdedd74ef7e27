"""Propagation explainers: ε-LRP, DeepLIFT, cell decomposition, Grad-CAM-Text, decision trees."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explain_engine.artifacts import TrainedModel
from explain_engine.explainers import explain, methods_for
from explain_engine.explainers._propagation import (
    LrpRule,
    Rule,
    input_times_modified_gradient,
    rule_logits,
)
from explain_engine.explainers.cell_decomposition import decompose
from explain_engine.explainers.decision_tree import (
    correlated_classes,
    extract_decision_trees,
    fit_decision_trees,
    tree_relevance,
)
from explain_engine.explainers.deeplift import (
    CaptumKimCNN,
    deeplift,
    deeplift_captum_cnn,
    deeplift_rules,
    deeplift_with_reference,
)
from explain_engine.explainers.diagnostics import summary_lines
from explain_engine.explainers.gradcam import gradcam_text
from explain_engine.explainers.lrp import AMPLIFICATION_LIMIT, Amplification, lrp, lrp_relevance
from explain_engine.models import build_model
from explain_engine.models.base import EncodedBatch
from explain_engine.vocab import Vocabulary

VOCAB, CLASSES = 30, 3
SMALL = {"embedding_dim": 6}
CONFIGS = {
    "cnn": {**SMALL, "num_filters": 4, "fc_size": 5},
    "lstm": {**SMALL, "hidden_size": 5},
    "bilstm": {**SMALL, "hidden_size": 4},
    "gru": {**SMALL, "hidden_size": 5},
    "bigru": {**SMALL, "hidden_size": 4},
    "lstm_attention": {**SMALL, "hidden_size": 5, "attention_size": 4},
    "bilstm_attention": {**SMALL, "hidden_size": 4, "attention_size": 4},
    "gru_attention": {**SMALL, "hidden_size": 5, "attention_size": 4},
    "bigru_attention": {**SMALL, "hidden_size": 4, "attention_size": 4},
    "qlstm": {**SMALL, "hidden_size": 4, "kernel_size": 3, "pooling": "fo"},
    "qgru": {**SMALL, "hidden_size": 4, "kernel_size": 3, "pooling": "f"},
}
RNNS = [name for name in CONFIGS if name != "cnn"]


def make_model(name: str, seed: int = 0, biases: bool = True) -> torch.nn.Module:
    """A tiny double-precision model with weights large enough to leave the linear regime."""
    torch.manual_seed(seed)
    arch = "qrnn" if name.startswith("q") else name
    model = build_model(arch, VOCAB, CLASSES, **CONFIGS[name]).double().eval()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.6)
            else:
                p.normal_(0.0, 0.3) if biases else p.zero_()
            if not biases and "bias" in pname:
                p.zero_()
        model.embedding.weight[0] = 0.0
    return model


@pytest.fixture(scope="module")
def batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Four texts of lengths 9, 5, 1 and 3, right-padded."""
    gen = torch.Generator().manual_seed(1)
    lengths = torch.tensor([9, 5, 1, 3])
    mask = torch.arange(9) < lengths[:, None]
    ids = torch.randint(1, VOCAB, (4, 9), generator=gen) * mask
    return ids, mask


def scores(model, ids, mask, embeds=None) -> torch.Tensor:
    with torch.no_grad():
        return model(ids, mask, embeds=embeds).logits


def chosen(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return logits.gather(1, target[:, None]).squeeze(1)


# ------------------------------------------------------------------ the rule-based forward passes


@pytest.mark.parametrize("name", list(CONFIGS))
def test_plain_rule_reproduces_the_model(name, batch):
    ids, mask = batch
    model = make_model(name)
    with torch.no_grad():
        got = rule_logits(model, model.embed(ids), mask, Rule())
    torch.testing.assert_close(got, scores(model, ids, mask), rtol=0, atol=1e-12)


# ------------------------------------------------------------------ ε-LRP


def _bias_parameters(model) -> list[torch.Tensor]:
    return [p for n, p in model.named_parameters() if "bias" in n]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_lrp_conserves_relevance_up_to_the_biases(name, batch):
    ids, mask = batch
    model = make_model(name)
    logits = scores(model, ids, mask)
    target = logits.argmin(1)  # any class works; the least likely one is a harder case
    embeds = model.embed(ids).detach()
    biases = _bias_parameters(model)
    relevance, grads, _ = input_times_modified_gradient(
        model, embeds, mask, target, LrpRule(1e-10), extra_inputs=tuple(biases)
    )
    absorbed = sum((b * g).sum() for b, g in zip(biases, grads, strict=True))
    total = chosen(logits, target).sum()
    assert abs(absorbed.item()) > 1e-3 * abs(total.item())  # the biases do take a share
    torch.testing.assert_close(relevance.sum() + absorbed, total, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_lrp_is_exactly_conservative_without_biases(name, batch):
    ids, mask = batch
    model = make_model(name, biases=False)
    logits = scores(model, ids, mask)
    target = logits.argmax(1)
    relevance = lrp_relevance(model, ids, mask, target, eps=1e-10, bias_factor=0)
    torch.testing.assert_close(relevance.sum(1), chosen(logits, target), rtol=1e-7, atol=1e-9)
    # at the paper's ε = 0.001 the stabilisers absorb a small share, which vanishes with ε
    errors = [
        (
            (
                lrp_relevance(model, ids, mask, target, eps=eps, bias_factor=0).sum(1)
                - chosen(logits, target)
            ).abs()
        )
        .max()
        .item()
        for eps in (1e-3, 1e-5, 1e-7)
    ]
    scale = chosen(logits, target).abs().max().item()
    assert errors[0] < 0.1 * scale
    assert errors[1] < 1e-3 * scale and errors[2] < 1e-5 * scale


def test_lrp_on_the_relu_cnn_equals_gradient_times_input(batch):
    ids, mask = batch
    model = make_model("cnn")
    embeds = model.embed(ids).detach().requires_grad_(True)
    logits = model(ids, mask, embeds=embeds).logits
    target = logits.argmax(1)
    (grad,) = torch.autograd.grad(chosen(logits, target).sum(), embeds)
    grad_x_input = (grad * embeds).sum(-1).detach() * mask
    relevance = lrp_relevance(model, ids, mask, target, eps=1e-12, bias_factor=0)
    rel_error = (relevance - grad_x_input).abs().max() / grad_x_input.abs().max()
    assert rel_error < 1e-4
    # at ε = 0.001 they differ, but only slightly
    plain = lrp_relevance(model, ids, mask, target, bias_factor=0)
    assert not torch.allclose(plain, grad_x_input, rtol=0, atol=1e-12)


def _reference_lstm_lrp(model, ids, target, eps, delta):
    """Arras et al. (2017) LRP for one text through a final-state LSTM, neuron by neuron, with
    bias factor ``delta``: a neuron's ``δ·(b + ε·sign z)`` goes in equal parts to its non-zero inputs."""
    cell = model.rnn.cells[0]
    hs = cell.hidden_size
    x = model.embed(ids).detach()
    w_ih, w_hh, b = cell.weight_ih.detach(), cell.weight_hh.detach(), (cell.bias_ih + cell.bias_hh).detach()
    h, c = [torch.zeros(hs, dtype=x.dtype)], [torch.zeros(hs, dtype=x.dtype)]
    gates, pre_g = [], []
    for t in range(len(ids)):
        z = w_ih @ x[t] + w_hh @ h[-1] + b
        i, f, o = torch.sigmoid(z[:hs]), torch.sigmoid(z[hs : 2 * hs]), torch.sigmoid(z[3 * hs :])
        g = torch.tanh(z[2 * hs : 3 * hs])
        c.append(f * c[-1] + i * g)
        h.append(o * torch.tanh(c[-1]))
        gates.append((i, f, g))
        pre_g.append(z[2 * hs : 3 * hs])

    def esign(v):
        return v + eps * (2.0 * (v >= 0).double() - 1.0)

    def live(*vs):
        return [(v != 0).double() for v in vs]

    w_out = model.classifier.weight.detach()[target]
    b_out = model.classifier.bias.detach()[target]
    out = w_out @ h[-1] + b_out
    (on,) = live(h[-1])
    r_h = (h[-1] * w_out + on * delta * (esign(out) - out + b_out) / on.sum()) * out / esign(out)
    r_c = torch.zeros(hs, dtype=x.dtype)
    r_x = torch.zeros_like(x)
    for t in range(len(ids) - 1, -1, -1):
        i, f, g = gates[t]
        r_c = r_c + r_h  # h_t = o ⊙ tanh(c_t): the output gate is a weight
        c_t = c[t + 1]
        on_c, on_g = live(c[t], g)
        spare = delta * (esign(c_t) - c_t) / (on_c + on_g).clamp(min=1)
        r_g = r_c * (i * g + on_g * spare) / esign(c_t)
        r_c = r_c * (f * c[t] + on_c * spare) / esign(c_t)
        w_x, w_h = w_ih[2 * hs : 3 * hs], w_hh[2 * hs : 3 * hs]
        share = r_g / esign(pre_g[t])
        on_x, on_h = live(x[t], h[t])
        spare = (delta * (esign(pre_g[t]) - pre_g[t] + b[2 * hs : 3 * hs]) * share).sum()
        spare = spare / (on_x.sum() + on_h.sum())
        r_x[t] = x[t] * (w_x.T @ share) + on_x * spare
        r_h = h[t] * (w_h.T @ share) + on_h * spare
    return r_x.sum(-1)


@pytest.mark.parametrize("delta", [0.0, 1.0])
def test_lrp_matches_a_neuron_by_neuron_lstm_reference(batch, delta):
    ids, mask = batch
    model = make_model("lstm")
    target = scores(model, ids, mask).argmax(1)
    relevance = lrp_relevance(model, ids, mask, target, bias_factor=delta)
    for row in range(ids.shape[0]):
        n = int(mask[row].sum())
        expected = _reference_lstm_lrp(model, ids[row, :n], int(target[row]), 1e-3, delta)
        torch.testing.assert_close(relevance[row, :n], expected, rtol=1e-9, atol=1e-12)
        assert torch.all(relevance[row, n:] == 0)


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_conservative_lrp_gives_the_words_exactly_the_class_score(name, seed, batch):
    """Arras et al. (2017 §3), δ = 1: Σ_t φ_lrp(t, k, X) = s(k, X) for every text, biases and ε included."""
    ids, mask = batch
    model = make_model(name, seed=seed)
    logits = scores(model, ids, mask)
    # A neuron with no non-zero input keeps its bias: a CNN whose ReLU layer is silent outputs its
    # bias alone, and nothing reaches the words. Recurrent states are never all zero here.
    last = model.out if name == "cnn" else model.classifier
    seen: list[torch.Tensor] = []
    handle = last.register_forward_hook(lambda _m, inp, _out: seen.append(inp[0].detach()))
    scores(model, ids, mask)
    handle.remove()
    reaches_words = (seen[0] != 0).any(1)
    assert name != "cnn" or (seed != 1 or not reaches_words.all())  # the data hold both cases
    for target in (logits.argmax(1), logits.argmin(1)):
        total = chosen(logits, target) * reaches_words
        relevance = lrp_relevance(model, ids, mask, target, eps=1e-3, bias_factor=1.0)
        torch.testing.assert_close(relevance.sum(1), total, rtol=1e-4, atol=1e-4 * total.abs().max().item())
        assert torch.all(relevance[~mask] == 0)
        # the plain ε rule leaves the biases' share out: the same check fails on it
        plain = lrp_relevance(model, ids, mask, target, eps=1e-3, bias_factor=0.0)
        assert (plain.sum(1) - total)[reaches_words].abs().max() > 1e-2 * total.abs().max()


def test_conservative_lrp_holds_on_a_float32_model_with_large_biases(batch):
    ids, mask = batch
    model = make_model("bilstm_attention", seed=3).float()
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "bias" in pname:
                p.mul_(5.0)
    logits = scores(model, ids, mask)
    target = logits.argmax(1)
    relevance = lrp_relevance(model, ids, mask, target)
    torch.testing.assert_close(relevance.sum(1).float(), chosen(logits, target), rtol=1e-4, atol=1e-4)


def test_lrp_conserves_in_double_precision_on_a_long_float32_text():
    """A float32 LSTM over 400 tokens: the propagation runs on a float64 copy, so the words' relevance sums
    to the class score to 1e-9 (float32 round-off over the time steps would not allow it)."""
    model = make_model("lstm", seed=4).float()
    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(1, VOCAB, (2, 400), generator=gen)
    mask = torch.ones_like(ids, dtype=torch.bool)
    logits = scores(model, ids, mask).double()
    target = logits.argmax(1)
    relevance = lrp_relevance(model, ids, mask, target)
    assert relevance.dtype == torch.float64
    total = model.double()(ids, mask).logits.detach().gather(1, target[:, None]).squeeze(1)
    torch.testing.assert_close(relevance.sum(1), total, rtol=1e-9, atol=1e-9)


def cancelling_lstm(up: float, down: float) -> torch.nn.Module:
    """One LSTM unit whose gates are open (i = f = o ≈ 1) and whose candidate is ``up`` for word 1 and
    ``-down`` for word 2, so that ``c_t`` climbs and falls with the words and nearly cancels."""
    model = build_model("lstm", 3, 2, embedding_dim=1, hidden_size=1).double().eval()
    cell = model.rnn.cells[0]
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.embedding.weight[1:, 0] = torch.tensor([np.arctanh(up), -np.arctanh(down)])
        cell.weight_ih[2, 0] = 1.0  # the candidate g reads the word; i, f, o sit at sigmoid(30)
        cell.bias_ih[[0, 1, 3]] = 30.0
        model.classifier.weight[:, 0] = torch.tensor([1.0, -1.0])
    return model


def test_lrp_reports_relevance_amplified_by_nearly_cancelling_cell_terms():
    """Word 1 adds 0.5 to c, word 2 takes 0.4995 away: after 60 pairs c_T = 0.03, and each word's share
    of the cancelling sums is about ±0.5 / 0.03 of the score, Σ|φ| ≈ 2000× s. The report says so, flags the
    text (and the summary line names it), while a text of word 1 alone is not flagged; the words still
    sum to the class score."""
    model = cancelling_lstm(0.5, 0.4995)
    bundle = TrainedModel.__new__(TrainedModel)
    bundle.model = model
    ids = torch.tensor([[1, 2] * 60, [1] * 120])
    mask = torch.ones_like(ids, dtype=torch.bool)
    target = torch.zeros(2, dtype=torch.long)
    out = lrp(bundle, EncodedBatch(ids, mask, [], [], []), target)
    first, second = (d["amplification"] for d in out.diagnostics)
    score = chosen(scores(model, ids, mask), target)
    assert first["score"] == pytest.approx(float(score[0]), rel=1e-9)
    torch.testing.assert_close(out.scores.sum(1), score, rtol=1e-6, atol=1e-9)
    assert (
        first["ratio"] > AMPLIFICATION_LIMIT
        and first["flagged"]
        and "amplified" in out.diagnostics[0]["warnings"][0]
    )
    assert second["ratio"] == pytest.approx(1.0, rel=1e-6) and not second["flagged"]
    assert "warnings" not in out.diagnostics[1]
    (line,) = summary_lines({"lrp": out.diagnostics}, ["cancelling", "steady"])
    assert "AMPLIFIED above 1000x, flagged: 1 of 2 (cancelling)" in line and "lrp.eps=0.1" in line
    # a stabiliser of 0.1 lets the biases' (here: ε's) share absorb it: no flag
    damped = lrp(bundle, EncodedBatch(ids, mask, [], [], []), target, eps=0.1, bias_factor=0.0)
    assert not damped.diagnostics[0]["amplification"]["flagged"]


def test_amplification_ratio_and_warning():
    check = Amplification(score=-2.0, total_abs=5000.0, eps=1e-3)
    assert check.ratio == 2500.0 and check.flagged and "2.5e+03x the class score -2" in check.warning()
    # a zero score with large relevances is amplification proper
    assert Amplification(score=0.0, total_abs=50.0, eps=1e-3).flagged
    calm = Amplification(score=2.0, total_abs=6.0, eps=1e-3)
    assert not calm.flagged and not calm.near_zero_score and calm.note() is None
    calm = Amplification(score=2.0, total_abs=6.0, eps=1e-3)
    assert not calm.flagged and calm.warning() is None and calm.to_dict()["ratio"] == 3.0


def test_a_near_zero_class_score_is_told_apart_from_amplification():
    """|s| = 1e-5 with relevances of 0.02 in all: Σ|φ| / |s| = 2,000, past the limit, yet nothing grew;
    the relevances are modest against the 0.01 floor (ratio 2). The same score with relevances of 50
    (5,000x the floor) is amplified."""
    from explain_engine.explainers.lrp import amplification_summary

    small = Amplification(score=1e-5, total_abs=0.02, eps=1e-3)
    assert small.ratio == pytest.approx(2000.0) and small.near_zero_score
    assert not small.flagged and small.warning() is None and "near zero" in small.note()
    assert small.to_dict()["near_zero_score"] and not small.to_dict()["flagged"]
    assert Amplification(score=0.0, total_abs=1.0, eps=1e-3).near_zero_score
    assert not Amplification(score=0.0, total_abs=1.0, eps=1e-3).flagged
    big = Amplification(score=1e-5, total_abs=50.0, eps=1e-3)
    assert big.flagged and big.near_zero_score and big.note() is None and "amplified" in big.warning()
    proper = Amplification(score=-2.0, total_abs=5000.0, eps=1e-3)
    reports = [{"amplification": a.to_dict()} for a in (small, big, proper, calm_check())]
    line = amplification_summary("lrp", reports, ["s", "b", "p", "c"])
    assert "flagged: 2 of 4 (b, p)" in line and "near-zero class score, not amplified: 1 of 4 (s;" in line


def calm_check() -> Amplification:
    return Amplification(score=2.0, total_abs=6.0, eps=1e-3)


# ------------------------------------------------------------------ DeepLIFT


@pytest.mark.parametrize("name", list(CONFIGS))
def test_deeplift_sums_to_the_change_from_the_zero_baseline(name, batch):
    """Summation-to-delta within 1 %: against the baseline run through the network with the
    input's gates (gates are weights); for the CNN, which has none, that is s(k, X̄) itself."""
    ids, mask = batch
    model = make_model(name)
    logits = scores(model, ids, mask)
    embeds = model.embed(ids).detach()
    for target in (logits.argmax(1), logits.argmin(1)):
        relevance, reference = deeplift_with_reference(model, embeds, mask, target)
        delta = chosen(logits, target) - chosen(reference, target)
        total = relevance.sum(1)
        assert torch.all((total - delta).abs() <= 0.01 * delta.abs() + 1e-9), (total, delta)
        assert torch.all((total - delta).abs() <= 1e-4 * delta.abs().max())
    if name == "cnn":
        torch.testing.assert_close(reference, scores(model, ids, mask, embeds=torch.zeros_like(embeds)))


def _reference_through_input_gates(model, ids) -> torch.Tensor:
    """A final-state LSTM's scores on zero embeddings when every gate keeps its value on ``ids``."""
    cell = model.rnn.cells[0]
    hs = cell.hidden_size
    x = model.embed(ids).detach()
    w_ih, w_hh, b = cell.weight_ih.detach(), cell.weight_hh.detach(), (cell.bias_ih + cell.bias_hh).detach()
    h = c = h_ref = c_ref = torch.zeros(hs, dtype=x.dtype)
    for t in range(len(ids)):
        z = w_ih @ x[t] + w_hh @ h + b
        i, f, o = torch.sigmoid(z[:hs]), torch.sigmoid(z[hs : 2 * hs]), torch.sigmoid(z[3 * hs :])
        c = f * c + i * torch.tanh(z[2 * hs : 3 * hs])
        h = o * torch.tanh(c)
        g_ref = torch.tanh(w_hh[2 * hs : 3 * hs] @ h_ref + b[2 * hs : 3 * hs])  # zero input, own signal
        c_ref = f * c_ref + i * g_ref
        h_ref = o * torch.tanh(c_ref)
    return model.classifier.weight.detach() @ h_ref + model.classifier.bias.detach()


def test_deeplift_reference_keeps_the_input_gates(batch):
    ids, mask = batch
    model = make_model("lstm")
    logits = scores(model, ids, mask)
    target = logits.argmax(1)
    embeds = model.embed(ids).detach()
    _, reference = deeplift_with_reference(model, embeds, mask, target)
    for row in range(ids.shape[0]):
        n = int(mask[row].sum())
        torch.testing.assert_close(reference[row], _reference_through_input_gates(model, ids[row, :n]))
    # the gates' share of the change: the reference is not the model's own baseline output
    own = scores(model, ids, mask, embeds=torch.zeros_like(embeds))
    assert (reference - own).abs().max() > 1e-3


def test_deeplift_rules_agree_with_captum_on_the_cnn(batch):
    ids, mask = batch
    model = make_model("cnn")
    embeds = model.embed(ids).detach()
    target = scores(model, ids, mask).argmax(1)
    with torch.no_grad():  # Captum's view of the model computes the model's own scores
        torch.testing.assert_close(CaptumKimCNN(model)(embeds, mask), scores(model, ids, mask))
    ours = deeplift_rules(model, embeds, mask, target, eps=1e-12)
    theirs = deeplift_captum_cnn(model, embeds, mask, target)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-9)
    baseline = scores(model, ids, mask, embeds=torch.zeros_like(embeds))
    delta = chosen(scores(model, ids, mask), target) - chosen(baseline, target)
    torch.testing.assert_close(theirs.sum(1), delta, rtol=1e-9, atol=1e-12)


def test_deeplift_gives_gates_no_relevance():
    """A GRU whose gates read only the past and whose candidate reads only the current token.

    With gates as weights, earlier tokens are credited only through the signal path
    ``z_T ⊙ h_{T-1}``, whose change does not depend on the last token; were the gates neurons,
    the change of ``z_T`` (driven by earlier tokens) would be credited with ``h_{T-1} − n_T``,
    which does. So replacing the last token must leave the earlier tokens' relevance unchanged.
    """
    model = make_model("gru", biases=False)
    hs = model.rnn.hidden_size
    with torch.no_grad():
        model.rnn.cells[0].weight_hh[2 * hs :] = 0.0  # n_t no longer reads h_{t-1}
        model.rnn.cells[0].weight_ih[:hs] = 0.0  # r and z depend on the past only
        model.rnn.cells[0].weight_ih[hs : 2 * hs] = 0.0
    ids = torch.tensor([[3, 7, 11, 4]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    target = torch.tensor([0])
    embeds = model.embed(ids).detach()
    relevance = deeplift_rules(model, embeds, mask, target, eps=1e-12)
    ids2 = ids.clone()
    ids2[0, 3] = 9
    relevance2 = deeplift_rules(model, model.embed(ids2).detach(), mask, target, eps=1e-12)
    assert not torch.allclose(relevance[0, 3], relevance2[0, 3])
    torch.testing.assert_close(relevance[0, :3], relevance2[0, :3], rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ shared properties


PADDED_METHODS = {
    "lrp": lambda m, ids, mask, tgt: lrp_relevance(m, ids, mask, tgt),
    "deeplift": lambda m, ids, mask, tgt: deeplift_rules(m, m.embed(ids).detach(), mask, tgt),
    "cell_decomposition": lambda m, ids, mask, tgt: decompose(m, ids, mask, tgt),
}


@pytest.mark.parametrize(
    ("method", "name"),
    [
        (m, n)
        for m in PADDED_METHODS
        for n in ("cnn", "bilstm_attention", "bigru", "qlstm")
        if (m, n) != ("cell_decomposition", "cnn")
    ],
)
def test_a_padded_batch_explains_each_text_as_alone(method, name, batch):
    ids, mask = batch
    model = make_model(name)
    target = scores(model, ids, mask).argmax(1)
    together = PADDED_METHODS[method](model, ids, mask, target)
    for row in range(ids.shape[0]):
        n = int(mask[row].sum())
        alone = PADDED_METHODS[method](
            model, ids[row : row + 1, :n], mask[row : row + 1, :n], target[row : row + 1]
        )
        torch.testing.assert_close(together[row, :n], alone[0], rtol=1e-8, atol=1e-10)
        assert torch.all(together[row, n:] == 0)


# ------------------------------------------------------------------ cell decomposition


def _naive_decomposition(cell, x: torch.Tensor, w: torch.Tensor, readout: torch.Tensor) -> torch.Tensor:
    """Poerner et al. 2018 §3.4 literally, for one direction of one text: ``φ(t) = Σ_i a_i (nl_i(t) − nl_i(t−1))``."""
    n = x.shape[0]
    state, keeps, outs, states = None, [], [], []
    for t in range(n):
        state, gates = cell(x[t : t + 1], state)
        if cell.kind == "lstm":
            keeps.append(gates["f"][0])
            outs.append(gates["o"][0])
            states.append(state[1][0])
        else:
            keeps.append(gates["z"][0])
            states.append(state[0])

    def net_load(i: int, t: int) -> torch.Tensor:
        if t < 0:
            return torch.zeros((), dtype=x.dtype)
        carried = states[t].clone()
        for j in range(t + 1, i + 1):
            carried = carried * keeps[j]
        return w @ (outs[i] * torch.tanh(carried)) if cell.kind == "lstm" else w @ carried

    return torch.stack(
        [sum(readout[i] * (net_load(i, t) - net_load(i, t - 1)) for i in range(t, n)) for t in range(n)]
    )


@pytest.mark.parametrize("name", ["lstm", "gru", "bilstm", "bigru", "lstm_attention", "bigru_attention"])
def test_cell_decomposition_follows_the_net_load_definition(name, batch):
    ids, mask = batch
    model = make_model(name)
    target = scores(model, ids, mask).argmin(1)
    relevance = decompose(model, ids, mask, target)
    hs = model.rnn.hidden_size
    with torch.no_grad():
        output = model(ids, mask)
        for row in range(ids.shape[0]):
            n = int(mask[row].sum())
            x = model.embed(ids[row, :n])
            w = model.classifier.weight[target[row]]
            if output.attention is None:  # the final state of each direction, in its reading order
                readout = backward_readout = torch.zeros(n, dtype=x.dtype)
                readout[-1] = 1.0
            else:
                readout = output.attention[row, :n]
                backward_readout = readout.flip(0)
            expected = _naive_decomposition(model.rnn.cells[0], x, w[:hs], readout)
            if model.rnn.bidirectional:
                backward = _naive_decomposition(model.rnn.cells[1], x.flip(0), w[hs:], backward_readout)
                expected = expected + backward.flip(0)
            torch.testing.assert_close(relevance[row, :n], expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", RNNS)
def test_cell_decomposition_sums_to_the_score_without_its_bias(name, batch):
    ids, mask = batch
    model = make_model(name)
    logits = scores(model, ids, mask)
    target = logits.argmax(1)
    relevance = decompose(model, ids, mask, target)
    expected = chosen(logits, target) - model.classifier.bias.detach()[target]
    torch.testing.assert_close(relevance.sum(1), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_cell_decomposition_points_at_the_one_word_the_memory_keeps(name, batch):
    """A cell that writes only at token A (input gate open / GRU update gate shut there) and then
    keeps its state unchanged (forget gate 1 / update gate 1) holds A alone: the gain is at A's position."""
    ids, mask = batch
    model = make_model(name)
    cell, hs, a = model.rnn.cells[0], model.rnn.hidden_size, 7
    ids = torch.where(ids == a, 1, ids)
    ids[0, 4], ids[1, 2] = a, a  # A in the middle of the first text, near the end of the second
    with torch.no_grad():
        model.embedding.weight[:, 0] = 0.0
        model.embedding.weight[a, 0] = 1.0
        if name == "lstm":
            rows = {"write": slice(0, hs), "keep": slice(hs, 2 * hs)}
            open_at_a = (40.0, -20.0)  # input gate σ(20) at A, σ(−20) elsewhere
            keep = (0.0, 30.0)  # forget gate σ(30) everywhere
        else:
            rows = {"write": slice(hs, 2 * hs), "keep": slice(hs, 2 * hs)}
            open_at_a = (-60.0, 30.0)  # update gate σ(−30) at A (write), σ(30) elsewhere (keep)
            keep = open_at_a
        for part, (weight_a, bias) in (("keep", keep), ("write", open_at_a)):
            cell.weight_ih[rows[part]] = 0.0
            cell.weight_hh[rows[part]] = 0.0
            cell.weight_ih[rows[part], 0] = weight_a
            cell.bias_ih[rows[part]] = bias
            cell.bias_hh[rows[part]] = 0.0
    target = scores(model, ids, mask).argmax(1)
    relevance = decompose(model, ids, mask, target)
    for row, at in ((0, 4), (1, 2)):
        others = torch.cat([relevance[row, :at], relevance[row, at + 1 : int(mask[row].sum())]])
        assert relevance[row, at].abs() > 1e-2
        assert others.abs().max() < 1e-6 * relevance[row, at].abs()


# ------------------------------------------------------------------ Grad-CAM-Text


def test_gradcam_text_spreads_filter_effects_over_their_ngrams(batch):
    ids, mask = batch
    model = make_model("cnn")
    target = scores(model, ids, mask).argmax(1)
    positive = gradcam_text(model, ids, mask, target, part="positive")
    negative = gradcam_text(model, ids, mask, target, part="negative")
    signed = gradcam_text(model, ids, mask, target)
    torch.testing.assert_close(signed, positive + negative)
    assert torch.all(positive >= 0) and torch.all(negative <= 0)
    widths = [
        w for w, conv in zip(model.filter_sizes, model.convs, strict=True) for _ in range(conv.out_channels)
    ]
    for row in range(ids.shape[0]):
        n = int(mask[row].sum())
        extras = model(ids[row : row + 1, :n], mask[row : row + 1, :n]).extras
        v = extras["features"][0].detach().requires_grad_(True)
        score = model.out(torch.relu(model.fc(v)))[target[row]]
        (grad,) = torch.autograd.grad(score, v)
        expected = torch.zeros(n, dtype=v.dtype)
        for k, width in enumerate(widths):
            effect = abs(max(grad[k].item(), 0.0)) * v[k].item()  # Lertvittayakumjorn & Toni 2019 eq. 1
            start = int(extras["argmax"][0, k])
            for t in range(start, min(start + width, n)):
                expected[t] += effect
        torch.testing.assert_close(positive[row, :n], expected, rtol=1e-10, atol=1e-12)
        assert torch.all(positive[row, n:] == 0)
    assert positive.abs().sum() > 0 and negative.abs().sum() > 0


# ------------------------------------------------------------------ decision trees


def test_correlated_class_is_the_best_pearson_match():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(200, 3))
    v[:, 2] = 1.5  # a dead filter
    s = np.stack([-v[:, 0] + 0.1 * rng.normal(size=200), v[:, 0] - 0.5 * v[:, 1], v[:, 1]], axis=1)
    assert correlated_classes(v, s).tolist() == [1, 2, 0]


def test_trees_are_pruned_on_validation_fidelity():
    rng = np.random.default_rng(0)

    def data(n):
        v = rng.uniform(size=(n, 6))
        rule = (v[:, 0] > 0.5).astype(float)
        flip = rng.uniform(size=n) < 0.15  # the CNN is noisy around the simple rule
        label = np.where(flip, 1 - rule, rule)
        return v, np.stack([1 - label, label], axis=1)

    (xt, st), (xv, sv) = data(400), data(400)
    extraction = fit_decision_trees(xt, st, xv, sv, max_candidates=30)
    full = fit_decision_trees(xt, st, xv, sv, max_candidates=1)  # only α = 0: no pruning
    for pruned, unpruned in zip(extraction.describe(), full.describe(), strict=True):
        assert pruned["ccp_alpha"] > 0 and pruned["nodes"] < unpruned["nodes"]
        assert pruned["fidelity"] >= unpruned["fidelity"]
    assert extraction.fidelity["overall"] > 0.75 > full.fidelity["overall"]
    assert extraction.predict(xv).shape == (400,)


@pytest.fixture(scope="module")
def cnn_bundle() -> TrainedModel:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(25)]
    texts = [" ".join(rng.choice(words, size=rng.integers(1, 12))) for _ in range(160)]
    vocab = Vocabulary.build(texts)
    torch.manual_seed(0)
    model = build_model("cnn", len(vocab), 2, embedding_dim=8, num_filters=5, fc_size=6)
    with torch.no_grad():
        model.embedding.weight.normal_(0, 1.0)
        model.embedding.weight[0] = 0
    bundle = TrainedModel(model, vocab, ["neg", "pos"], device="cpu")
    bundle.texts = texts
    return bundle


def _walk(tree, v: np.ndarray) -> list[tuple[int, bool]]:
    """The (feature, passed) decisions of ``v`` down ``tree``, node by node."""
    t, node, steps = tree.tree_, 0, []
    while t.children_left[node] >= 0:
        passed = np.float32(v[t.feature[node]]) > t.threshold[node]
        steps.append((int(t.feature[node]), bool(passed)))
        node = t.children_right[node] if passed else t.children_left[node]
    return steps


def test_decision_tree_relevance_follows_the_decision_path(cnn_bundle):
    texts = cnn_bundle.texts
    extraction = extract_decision_trees(cnn_bundle, texts[:100], texts[100:140])
    assert len(extraction.trees) == 2 and 0.0 <= extraction.fidelity["overall"] <= 1.0
    batch = cnn_bundle.encode(texts[140:])
    model = cnn_bundle.model
    with torch.no_grad():
        output = model(batch.ids, batch.mask)
    target = torch.tensor([0, 1] * 10)
    relevance = tree_relevance(model, extraction, batch.ids, batch.mask, target)
    widths = [
        w for w, conv in zip(model.filter_sizes, model.convs, strict=True) for _ in range(conv.out_channels)
    ]
    nonzero = 0
    for row in range(len(texts) - 140):
        k = int(target[row])
        v = output.extras["features"][row].numpy()
        passed = {f for f, ok in _walk(extraction.trees[k], v) if ok}
        n = int(batch.mask[row].sum())
        expected = np.zeros(batch.ids.shape[1])
        for f in passed:
            sign = 1.0 if extraction.correlated_class[f] == k else -1.0
            start = int(output.extras["argmax"][row, f])
            expected[start : min(start + widths[f], n)] += sign
        np.testing.assert_allclose(relevance[row].numpy(), expected)
        nonzero += bool(passed)
    assert nonzero > 0


# ------------------------------------------------------------------ the registry


def test_methods_are_registered_for_their_architectures():
    cnn, rnn, qrnn = methods_for("cnn"), methods_for("bigru_attention"), methods_for("qrnn")
    assert {"lrp", "deeplift", "gradcam", "decision_tree"} <= set(cnn) and "cell_decomposition" not in cnn
    assert {"lrp", "deeplift", "cell_decomposition"} <= set(rnn) and "gradcam" not in rnn
    assert {"lrp", "deeplift", "cell_decomposition"} <= set(qrnn)
    assert "lrp" not in methods_for("rationale")


def test_explain_runs_every_propagation_method_on_a_cnn(cnn_bundle):
    texts = cnn_bundle.texts[140:146]
    extraction = extract_decision_trees(cnn_bundle, cnn_bundle.texts[:100], cnn_bundle.texts[100:140])
    n_words = [len(t.split()) for t in texts]
    for method, params in [
        ("lrp", {}),
        ("deeplift", {}),
        ("gradcam", {}),
        ("decision_tree", {"trees": extraction}),
    ]:
        result = explain(cnn_bundle, texts, method=method, batch_size=4, **params)
        assert [len(r) for r in result] == n_words
        assert any(np.abs(r).sum() > 0 for r in result)
    # the hand-written DeepLIFT and Captum's agree through the registry too (float32 model)
    captum = explain(cnn_bundle, texts, method="deeplift", batch_size=4)
    rules = explain(cnn_bundle, texts, method="deeplift", batch_size=4, engine="rules")
    for a, b in zip(captum, rules, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="fitted trees"):
        explain(cnn_bundle, texts, method="decision_tree")


def test_captum_engine_is_for_the_cnn_only(batch):
    ids, mask = batch
    model = make_model("gru")
    bundle = TrainedModel.__new__(TrainedModel)
    bundle.model = model
    encoded = EncodedBatch(ids, mask, [], [], [])
    target = torch.zeros(ids.shape[0], dtype=torch.long)
    with pytest.raises(ValueError, match="Kim CNN only"):
        deeplift(bundle, encoded, target, engine="captum")
    torch.testing.assert_close(
        deeplift(bundle, encoded, target), deeplift_rules(model, model.embed(ids), mask, target)
    )
