"""Cell decomposition for gated RNNs (Murdoch & Szlam 2017; Poerner et al. 2018 §3.4).

The class score of a final-state LSTM is split into additive contributions of the time steps:
the *net load* of step ``t`` is what of ``c_t`` survives to the end, i.e. ``c_t`` through all
later forget gates, the final ``tanh`` and output gate, and the class weights ``w_k``,

    nl(t, k, X) = w_k · (o_T ⊙ tanh((∏_{j=t+1..T} f_j) ⊙ c_t)),
    φ_decomp(t, k, X) = nl(t, k, X) − nl(t − 1, k, X).

For a GRU (Poerner et al. 2018's adaptation) ``nl(t, k, X) = w_k · ((∏_{j=t+1..T} z_j) ⊙ h_t)`` with the
update gates ``z``. Since ``∏_{j=t..T} f_j ⊙ c_{t-1}`` is the net load of ``t − 1``, the
contributions telescope: ``Σ_t φ(t) = w_k · h_T = s(k, X) − b_k``.

Extensions, each keeping that telescoping sum:

* **Attention models**: the document vector is ``Σ_i α_i h_i``, so the decomposition is applied
  to every ``h_i`` (net loads up to step ``i`` instead of ``T``) and weighted by the attention
  weights (treated as constants): ``φ(t) = Σ_{i ≥ t} α_i [nl_i(t) − nl_i(t − 1)]``, which sums
  to ``w_k · Σ_i α_i h_i = s(k, X) − b_k``. A final-state model is the case α = one-hot at T.
* **Bidirectional models**: each direction is decomposed along its own reading order (the
  backward direction reads each text's real tokens reversed) with its half of ``w_k``; a token's
  relevance is the sum over directions.
* **QRNN** (Poerner et al. 2018 evaluates decomposition on QLSTM/QGRU too): fo-pooling
  ``c_t = f_t ⊙ c_{t-1} + (1 − f_t) ⊙ z_t``, ``h_t = o_t ⊙ c_t`` has no final ``tanh``, so
  ``nl_i(t) = w_k · (o_i ⊙ ∏_{j=t+1..i} f_j ⊙ c_t)``; f-pooling is the GRU form with ``f`` for ``z``.

Only the additive pathway through ``c`` (GRU: ``h``) is credited (Poerner et al. 2018 §5): what a
cell forgets and writes again from ``h_{t-1}`` (the recurrent input of ``g_t``, or of the GRU's
``n_t``) counts as the gain of the step that rewrote it. A model whose keep gates sit well below 1
(e.g. a small GRU with update gates near 0.5 on the agreement paradigm) therefore places its
relevance on the last steps, not on the subject that decided the prediction, although the
decomposition is exact; with a memory that keeps its state it points at the word written there.

Written by hand: no library implements it. The gate values come from the models' own traces
(``return_trace=True``). Linear cases (GRU, QRNN) run one backward recursion over time; the LSTM's
``tanh`` needs the net load of every step for every later readout step (O(T²) per text, vectorised
over texts and steps).
"""

from __future__ import annotations

from typing import Any

import torch

from explain_engine.explainers.registry import register
from explain_engine.models.attention_rnn import AttentionRNN, RecurrentClassifier, masked_softmax
from explain_engine.models.base import EncodedBatch
from explain_engine.models.qrnn import QRNN
from explain_engine.models.recurrent import gather_time, scatter_time

DECOMPOSITION_ARCHITECTURES: tuple[str, ...] = (
    "lstm",
    "bilstm",
    "gru",
    "bigru",
    "lstm_attention",
    "bilstm_attention",
    "gru_attention",
    "bigru_attention",
    "qrnn",
)


def _shift(x: torch.Tensor) -> torch.Tensor:
    """``x`` one step later in time (axis 1): the previous step's value, zeros at step 0."""
    return torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)


def _lstm_direction(f, o, c, readout, w, n_steps):
    """φ over one direction's steps for ``c_t = f c_{t-1} + …``, ``h_t = o ⊙ tanh(c_t)``.

    All of ``f, o, c`` are ``(B, T, H)`` in reading order, ``readout (B, T)``, ``w (B, H)``.
    """
    b, t, h = c.shape
    carried_prev = f * _shift(c)  # ∏ f_{t..} starts with f_t on c_{t-1}
    phi = c.new_zeros(b, t)
    survive = c.new_ones(b, t, h)  # survive[:, t] = ∏_{j=t+1..i} f_j for the current i
    for i in range(n_steps):
        if i:
            survive[:, :i] = survive[:, :i] * f[:, i : i + 1]
        if not bool(readout[:, i].any()):  # a final-state model reads out one step per text
            continue
        weight = (w * o[:, i]).unsqueeze(1)  # (B, 1, H)
        keep = survive[:, : i + 1]
        gain = torch.tanh(keep * c[:, : i + 1]) - torch.tanh(keep * carried_prev[:, : i + 1])
        phi[:, : i + 1] += readout[:, i : i + 1] * (weight * gain).sum(-1)
    return phi


def _linear_direction(keep_gate, state, readout, w, n_steps, out_gate=None):
    """φ for ``state_t = κ_t ⊙ state_{t-1} + …`` read out through ``out_gate ⊙ state`` (or ``state``).

    Backward recursion ``A_t = a_t w ⊙ o_t + κ_{t+1} ⊙ A_{t+1}``, ``φ_t = A_t · (state_t − κ_t ⊙ state_{t-1})``.
    """
    b, t, h = state.shape
    gain = state - keep_gate * _shift(state)
    phi = state.new_zeros(b, t)
    carry = state.new_zeros(b, h)
    for s in range(n_steps - 1, -1, -1):
        direct = w if out_gate is None else w * out_gate[:, s]
        carry = readout[:, s : s + 1] * direct + (keep_gate[:, s + 1] * carry if s + 1 < t else 0)
        phi[:, s] = (carry * gain[:, s]).sum(-1)
    return phi


def decompose(
    model: AttentionRNN | RecurrentClassifier | QRNN,
    ids: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
) -> torch.Tensor:
    """Cell-decomposition relevance ``(B, T)`` of ``target`` (zeros on padding)."""
    mask = mask.bool()
    with torch.no_grad():
        embeds = model.embed(ids)
        outputs, _, trace = model.rnn(embeds, mask, return_trace=True)
        if isinstance(model, AttentionRNN):
            u = torch.tanh(model.attn_proj(outputs))
            attention = masked_softmax(u @ model.attn_context, mask).to(embeds.dtype)
        elif isinstance(model, RecurrentClassifier | QRNN):
            attention = None
        else:
            raise TypeError(
                f"cell decomposition needs an LSTM, GRU or QRNN classifier, not {type(model).__name__}"
            )
        weights = model.classifier.weight[target.to(model.classifier.weight.device)]  # (B, D*H)
        lengths = mask.sum(1)
        t = mask.shape[1]
        steps = torch.arange(t, device=mask.device)
        n_steps = int(lengths.max().item()) if lengths.numel() else 0
        relevance = embeds.new_zeros(mask.shape)
        if isinstance(model, QRNN):
            kind, hidden = ("qlstm" if model.rnn.pooling == "fo" else "qgru"), model.rnn.hidden_size
        else:
            kind, hidden = model.rnn.kind, model.rnn.hidden_size
        for d, name in enumerate(["forward", "backward"][: len(trace)]):
            entry = trace[name]
            order = entry["order"]
            seq = {key: gather_time(v, order) for key, v in entry.items() if key != "order"}
            if attention is None:
                readout = (steps == (lengths - 1).unsqueeze(1)).to(embeds.dtype)
            else:
                readout = gather_time(attention, order) * (steps < lengths.unsqueeze(1))
            w = weights[:, d * hidden : (d + 1) * hidden]
            if kind == "lstm":
                phi = _lstm_direction(seq["f"], seq["o"], seq["c"], readout, w, n_steps)
            elif kind == "gru":
                phi = _linear_direction(seq["z"], seq["h"], readout, w, n_steps)
            elif kind == "qlstm":
                phi = _linear_direction(seq["f"], seq["c"], readout, w, n_steps, out_gate=seq["o"])
            else:
                phi = _linear_direction(seq["f"], seq["h"], readout, w, n_steps)
            relevance = relevance + scatter_time(phi, order)
    return relevance * mask


@register(
    "cell_decomposition",
    title="Cell decomposition",
    source="Murdoch & Szlam 2017; Poerner et al. 2018 §3.4",
    architectures=DECOMPOSITION_ARCHITECTURES,
)
def cell_decomposition(bundle: Any, batch: EncodedBatch, target: torch.Tensor, **_: Any) -> torch.Tensor:
    """Cell decomposition of s(k, X) into per-step gains of net load (Poerner et al. 2018 §3.4)."""
    return decompose(bundle.model, batch.ids, batch.mask, target)
