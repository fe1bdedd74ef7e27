"""Classifiers: explicit-gate cells against PyTorch's, padding invariance, attention, gradients, training."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from explain_engine.models import ARCHITECTURES, FROM_CHECKPOINT, AttentionRNN, KimCNN, build_model
from explain_engine.models.cnn import valid_windows
from explain_engine.models.qrnn import QRNNLayer
from explain_engine.models.rationale import RationaleModel
from explain_engine.models.recurrent import GatedCell, GatedRNN, reading_order
from explain_engine.vocab import Vocabulary

TEXTS = [
    "The food was great and the staff were lovely!",
    "Terrible service.",
    "ok",
    "I would never come back here again, an awful awful place to eat",
    "Good",
]
SMALL = {"embedding_dim": 12, "hidden_size": 8}
# the families built from sizes over a word vocabulary (the transformer: test_transformer.py)
WORD_FAMILIES = sorted(set(ARCHITECTURES) - set(FROM_CHECKPOINT))
ATTENTION = ["lstm_attention", "bilstm_attention", "gru_attention", "bigru_attention"]


def small_model(name: str, vocab_size: int, num_classes: int = 2, seed: int = 0):
    torch.manual_seed(seed)
    overrides = {"embedding_dim": 12} if name == "cnn" else dict(SMALL)
    if name == "cnn":
        overrides |= {"num_filters": 6, "fc_size": 10}
    if name in ATTENTION:
        overrides["attention_size"] = 7
    return build_model(name, vocab_size, num_classes, **overrides)


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.build(TEXTS)


def copy_into_torch(cell: GatedCell, ref: nn.Module, suffix: str = "") -> None:
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(ref, name + suffix).copy_(getattr(cell, name))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_gated_cell_equals_torch_cell(kind):
    torch.manual_seed(1)
    cell = GatedCell(kind, 5, 4)
    ref = nn.LSTMCell(5, 4) if kind == "lstm" else nn.GRUCell(5, 4)
    copy_into_torch(cell, ref)
    x = torch.randn(3, 5)
    h0, c0 = torch.randn(3, 4), torch.randn(3, 4)
    if kind == "lstm":
        (h, c), gates = cell(x, (h0, c0))
        h_ref, c_ref = ref(x, (h0, c0))
        torch.testing.assert_close(c, c_ref)
        assert set(gates) == {"i", "f", "g", "o"}
    else:
        h, gates = cell(x, h0)
        h_ref = ref(x, h0)
        assert set(gates) == {"r", "z", "n"}
    torch.testing.assert_close(h, h_ref)
    assert cell.weight_ih.shape == (cell.num_gates * 4, 5) and cell.bias_hh.shape == (cell.num_gates * 4,)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_gated_rnn_equals_packed_bidirectional_torch_rnn(kind):
    torch.manual_seed(2)
    rnn = GatedRNN(kind, 5, 4, bidirectional=True)
    ref = (nn.LSTM if kind == "lstm" else nn.GRU)(5, 4, batch_first=True, bidirectional=True)
    copy_into_torch(rnn.cells[0], ref, "_l0")
    copy_into_torch(rnn.cells[1], ref, "_l0_reverse")
    lengths = torch.tensor([6, 2, 4])
    x = torch.randn(3, 6, 5)
    mask = torch.arange(6) < lengths[:, None]
    out, final = rnn(x, mask)
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out_ref, state = ref(packed)
    out_ref, _ = nn.utils.rnn.pad_packed_sequence(out_ref, batch_first=True, total_length=6)
    h_n = state[0] if kind == "lstm" else state
    torch.testing.assert_close(out, out_ref)
    torch.testing.assert_close(final, torch.cat([h_n[0], h_n[1]], dim=-1))
    assert out.shape == (3, 6, 8) and torch.all(out[1, 2:] == 0)


def test_reading_order_puts_real_tokens_first():
    mask = torch.tensor([[True, True, True, False], [False, True, False, True]])
    assert reading_order(mask).tolist() == [[0, 1, 2, 3], [1, 3, 0, 2]]
    assert reading_order(mask, reverse=True).tolist() == [[2, 1, 0, 3], [3, 1, 0, 2]]


def test_lstm_trace_follows_the_cell_equations():
    torch.manual_seed(3)
    rnn = GatedRNN("lstm", 5, 4, bidirectional=True)
    x = torch.randn(2, 5, 5)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], dtype=torch.bool)
    out, final, trace = rnn(x, mask, return_trace=True)
    for k, direction in enumerate(["forward", "backward"]):
        tr = trace[direction]
        assert set(tr) == {"i", "f", "g", "o", "c", "h", "order"}
        torch.testing.assert_close(tr["h"], tr["o"] * torch.tanh(tr["c"]))
        torch.testing.assert_close(tr["h"], out[..., 4 * k : 4 * (k + 1)])
        # c_t = f_t c_{t-1} + i_t g_t along this direction's reading order (text 1: positions 0..2)
        steps = tr["order"][1, :3].tolist()
        prev = torch.zeros(4)
        for p in steps:
            torch.testing.assert_close(tr["c"][1, p], tr["f"][1, p] * prev + tr["i"][1, p] * tr["g"][1, p])
            prev = tr["c"][1, p]
        assert torch.all(tr["f"][1, 3:] == 0)
    torch.testing.assert_close(final[1, :4], trace["forward"]["h"][1, 2])
    torch.testing.assert_close(final[1, 4:], trace["backward"]["h"][1, 0])


def test_gru_trace_follows_the_cell_equations():
    torch.manual_seed(4)
    rnn = GatedRNN("gru", 3, 4)
    x = torch.randn(1, 4, 3)
    _, final, trace = rnn(x, torch.ones(1, 4, dtype=torch.bool), return_trace=True)
    tr = trace["forward"]
    assert set(tr) == {"r", "z", "n", "h", "order"}
    prev = torch.zeros(4)
    for t in range(4):
        torch.testing.assert_close(tr["h"][0, t], (1 - tr["z"][0, t]) * tr["n"][0, t] + tr["z"][0, t] * prev)
        prev = tr["h"][0, t]
    torch.testing.assert_close(final[0], prev)


def test_qrnn_trace_follows_fo_pooling():
    torch.manual_seed(5)
    layer = QRNNLayer(3, 4, kernel_size=2, pooling="fo", bidirectional=False)
    x = torch.randn(1, 4, 3)
    _, final, trace = layer(x, torch.ones(1, 4, dtype=torch.bool), return_trace=True)
    tr = trace["forward"]
    conv = layer.convs[0]
    pre = conv(nn.functional.pad(x.transpose(1, 2), (1, 0))).transpose(1, 2)
    torch.testing.assert_close(tr["z"], torch.tanh(pre[..., :4]))
    c = torch.zeros(4)
    for t in range(4):
        c = tr["f"][0, t] * c + (1 - tr["f"][0, t]) * tr["z"][0, t]
        torch.testing.assert_close(tr["c"][0, t], c)
    torch.testing.assert_close(final[0], tr["o"][0, 3] * c)


@pytest.mark.parametrize("name", WORD_FAMILIES)
def test_padded_batch_equals_one_text_at_a_time(name, vocab):
    model = small_model(name, len(vocab)).eval()
    batch = vocab.encode(TEXTS)
    wide = torch.zeros(len(TEXTS), batch.ids.shape[1] + 3, dtype=torch.long)
    wide[:, : batch.ids.shape[1]] = batch.ids
    with torch.no_grad():
        together = model(batch.ids, batch.mask)
        padded_more = model(wide, wide != 0)
        for row, text in enumerate(TEXTS):
            one = vocab.encode([text])
            alone = model(one.ids, one.mask)
            torch.testing.assert_close(together.logits[row], alone.logits[0], atol=1e-5, rtol=1e-5)
            if alone.attention is not None:
                n = one.ids.shape[1]
                torch.testing.assert_close(
                    together.attention[row, :n], alone.attention[0], atol=1e-6, rtol=1e-5
                )
                assert torch.all(together.attention[row, n:] == 0)
        torch.testing.assert_close(padded_more.logits, together.logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ATTENTION)
def test_attention_is_a_distribution_over_real_tokens(name, vocab):
    model = small_model(name, len(vocab)).eval()
    assert isinstance(model, AttentionRNN) and model.architecture == name
    batch = vocab.encode(TEXTS)
    att = model(batch.ids, batch.mask).attention
    torch.testing.assert_close(att.sum(1), torch.ones(len(TEXTS)))
    assert torch.all(att[~batch.mask] == 0) and torch.all(att[batch.mask] > 0)
    assert model.attn_proj.in_features == model.rnn.output_size and model.attn_context.shape == (7,)


def test_rationale_attention_is_a_0_1_selection(vocab):
    model = small_model("rationale", len(vocab)).eval()
    batch = vocab.encode(TEXTS)
    out = model(batch.ids, batch.mask)
    prob = out.extras["selection_prob"]
    assert torch.equal(out.attention, ((prob > 0.5) & batch.mask).float())
    assert model.attention_pooling == "max"


@pytest.mark.parametrize("name", WORD_FAMILIES)
def test_embeddings_input_and_eval_mode_gradients(name, vocab):
    model = small_model(name, len(vocab)).eval()
    if name == "rationale":  # select every token, so that every embedding reaches the encoder
        torch.nn.init.constant_(model.selector.bias, 10.0)
    batch = vocab.encode(TEXTS)
    embeds = model.embed(batch.ids).detach().requires_grad_(True)
    by_embeds = model(batch.ids, batch.mask, embeds=embeds)
    torch.testing.assert_close(by_embeds.logits, model(batch.ids, batch.mask).logits)
    by_embeds.logits[:, 1].sum().backward()
    assert embeds.grad is not None and embeds.grad.abs().sum() > 0
    assert torch.all(embeds.grad[~batch.mask] == 0)


def tiny_task(n: int = 24, seed: int = 0) -> tuple[list[str], torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    pos, neg, filler = (
        ["great", "lovely", "tasty"],
        ["awful", "rude", "cold"],
        ["the", "food", "was", "and", "staff"],
    )
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        words = [
            filler[int(j)]
            for j in torch.randint(
                len(filler), (int(torch.randint(2, 6, (1,), generator=gen)),), generator=gen
            )
        ]
        words.insert(int(torch.randint(len(words) + 1, (1,), generator=gen)), (pos if label else neg)[i % 3])
        texts.append(" ".join(words))
        labels.append(label)
    return texts, torch.tensor(labels)


@pytest.mark.parametrize("name", WORD_FAMILIES)
def test_each_architecture_learns_a_tiny_task(name):
    texts, y = tiny_task()
    vocab = Vocabulary.build(texts)
    model = small_model(name, len(vocab), seed=1)
    batch = vocab.encode(texts)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)

    def eval_loss() -> float:
        model.eval()
        with torch.no_grad():
            return nn.functional.cross_entropy(model(batch.ids, batch.mask).logits, y).item()

    before = eval_loss()
    # the generator learns from sampled selections (REINFORCE), so the rationale model needs more steps
    for _ in range(80 if name == "rationale" else 25):
        model.train()
        out = model(batch.ids, batch.mask)
        example = nn.functional.cross_entropy(out.logits, y, reduction="none")
        loss = example.mean() + model.auxiliary_loss(out, example, batch.mask)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert eval_loss() < 0.7 * before


def test_cnn_handles_texts_shorter_than_its_widest_filter(vocab):
    model = small_model("cnn", len(vocab)).eval()
    assert isinstance(model, KimCNN) and model.filter_sizes == (2, 3, 4)
    assert [c.kernel_size[0] for c in model.convs] == [2, 3, 4]
    one = vocab.encode(["ok"])
    out = model(one.ids, one.mask)
    assert out.logits.shape == (1, 2) and torch.isfinite(out.logits).all()
    assert out.extras["features"].shape == (1, 18) and torch.all(out.extras["argmax"] == 0)


def test_valid_windows_keep_one_window_for_short_texts():
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.bool)
    assert valid_windows(mask, 3, 3).tolist() == [[True, True, True], [True, False, False]]


def test_rationale_penalties_match_their_expectations():
    model = RationaleModel(10, 2, embedding_dim=4, hidden_size=3, selection_target=None)
    prob = torch.tensor([[0.5, 1.0, 0.0, 0.2]])
    mask = torch.tensor([[True, True, True, False]])
    selection, continuity = model.penalties(prob, mask)
    torch.testing.assert_close(selection, torch.tensor([1.5 / 3]))
    torch.testing.assert_close(continuity, torch.tensor([(0.5 + 1.0) / 3]))
    model.selection_target = 0.25
    torch.testing.assert_close(model.penalties(prob, mask)[0], torch.tensor([0.5 - 0.25]))


def test_build_model_checks_names_and_presets():
    with pytest.raises(ValueError, match="unknown architecture"):
        build_model("perceptron", 10, 2)
    with pytest.raises(
        ValueError, match="'cnn' has no setting 'hidden_size'; its settings: dropout, embedding_dim"
    ):
        build_model("cnn", 10, 2, hidden_size=8)
    with pytest.raises(ValueError, match="fixes bidirectional"):
        build_model("lstm_attention", 10, 2, bidirectional=True)
    model = build_model("bigru_attention", 10, 3, hidden_size=6, embedding_dim=5)
    assert model.rnn.kind == "gru" and model.rnn.bidirectional and model.classifier.out_features == 3
    rebuilt = build_model("bigru_attention", 10, 3, **model.config)
    assert rebuilt.config == model.config
    plain = build_model("bilstm", 10, 2)
    assert plain.rnn.hidden_size == 75 and plain.embedding.embedding_dim == 300  # Poerner et al. 2018 sizes
    assert build_model("qrnn", 10, 2).rnn.hidden_size == 75
    assert build_model("bilstm_attention", 10, 2).rnn.hidden_size == 100  # Sen et al. 2020


def test_qrnn_starts_with_a_long_memory():
    layer = QRNNLayer(4, 3, kernel_size=2, pooling="f", bidirectional=True)
    for conv in layer.convs:
        assert conv.out_channels == 6 and torch.all(conv.bias[3:6] == 4.0)
    _, _, trace = layer(torch.zeros(1, 5, 4), torch.ones(1, 5, dtype=torch.bool), return_trace=True)
    torch.testing.assert_close(
        trace["backward"]["f"], torch.full((1, 5, 3), torch.sigmoid(torch.tensor(4.0)).item())
    )
