"""Model forward passes written against a propagation *rule*, shared by ε-LRP and DeepLIFT.

ε-LRP (Poerner et al. 2018 §3.2, eq. 8; Bach et al. 2015) and DeepLIFT with the rescale rule (Poerner et al. 2018
§3.3; Shrikumar et al. 2017, in the form of Ancona et al. 2018, eq. 4) both pass relevance
backwards through each neuron ``j`` in proportion to what every input ``i`` contributed to its
pre-activation ``a'_j``. Both are computed here as "input × modified gradient": every operation
keeps its forward value, but its backward pass multiplies by a ratio ``k`` chosen by the rule,

* a neuron ``y = φ(z)`` over a weighted sum ``z``: ``k = y / (z + ε·sign z)`` for LRP,
  ``k = Δy / (Δz + ε·sign Δz)`` for DeepLIFT (``Δ`` = value minus its value on the reference);
* gates as weights (LSTM/GRU/QRNN gates and the attention weights; Arras et al. 2017, Poerner et al. 2018
  §3.2–3.3): a term ``g ⊙ s`` of a sum passes nothing to the gate ``g`` and weight ``g`` to
  the signal ``s``, so gates receive no relevance;
* an element-wise squashing not preceded by a sum (``tanh(c_t)`` in ``h_t = o_t ⊙ tanh(c_t)``):
  relevance passes unchanged (``k = y / z``; DeepLIFT ``Δy / Δz``);
* max-pooling over time: the winner takes all (DeepLIFT: ``k = Δmax / Δx_argmax``).

Then ``R(e_t) = Σ_j (e_t − ē_t)_j · ∂̃s(k)/∂e_{t,j}`` (``ē = 0`` for LRP) is exactly the
layer-by-layer rule applied from ``R(L_k) = s(k, X)`` (resp. ``Δs(k, X)``) down to the
embeddings, and the relevance absorbed by a bias ``b`` is ``b · ∂̃s/∂b``.

**DeepLIFT's reference pass with gates as weights.** If the gates are weights of the network
being explained, they are the same in the reference pass: the all-zero baseline is run with the
gates (and attention weights) that the input ``X`` produced, every gated product is then linear
in its signal (``Δ(g ⊙ s) = g ⊙ Δs``), all multipliers stay bounded by the non-linearities'
slopes, and the attributions sum exactly to ``s(k, X) − s_X(k, X̄)``, the class score minus that
of the baseline through the network with ``X``'s gates. (Running the baseline with its own gates
instead leaves the gates' share of the change nowhere to go but to the signals, with
multipliers ``Δ(g ⊙ s)/Δs`` that explode wherever ``Δs`` is small — on trained-size LSTMs
attributions of 1e8 that cancel out.) On the CNN there are no gates and the reference is the
model's own output on the baseline.

Written by hand because the gated cells here (:mod:`explain_engine.models.recurrent`,
:mod:`explain_engine.models.qrnn`) are custom modules and the rules must treat their gates and
the attention weights as weights, which no library does (Captum's ``DeepLift``/``LRP`` hook
standard ``nn`` activation modules only).

The forward passes below mirror each model's ``encode`` in eval mode (no dropout); the tests
check that the plain rule reproduces the model's logits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from explain_engine.models.attention_rnn import AttentionRNN, RecurrentClassifier, masked_softmax
from explain_engine.models.cnn import KimCNN, valid_windows
from explain_engine.models.qrnn import POOLING_GATES, QRNN, QRNNLayer
from explain_engine.models.recurrent import GatedCell, GatedRNN, gather_time, reading_order, scatter_time


def stabilise(d: torch.Tensor, eps: float) -> torch.Tensor:
    """``d + ε·sign(d)`` with ``sign(0) = +1`` (Poerner et al. 2018: esign)."""
    one = torch.ones_like(d)
    return d + eps * torch.where(d >= 0, one, -one)


def _route(value: torch.Tensor, x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Forward: ``value``; backward: the gradient reaching ``x`` is multiplied by ``k``."""
    xk = x * k.detach()
    return value.detach() + xk - xk.detach()


def _masked_max(a: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Max over the last axis of ``a (B, F, W)`` restricted to ``valid (B, W)``; values and argmax."""
    return a.masked_fill(~valid.unsqueeze(1), float("-inf")).max(dim=2)


Term = torch.Tensor | tuple[torch.Tensor, torch.Tensor]
Squash = Callable[[torch.Tensor], torch.Tensor] | None
Log = list[tuple[torch.Tensor, torch.Tensor]]


class Spread:
    """Where the bias and stabiliser share of a neuron goes under Arras et al. (2017 §3) with δ > 0.

    ``ratio`` is ``Σ_{k→j} y_k / ȳ_k`` (``ȳ`` detached, so its value is the number of inputs but its
    gradient towards ``y_k`` is ``1 / y_k``) over the non-zero inputs ``y_k`` feeding neuron ``j``;
    ``count`` is that number ``N_j``. Both broadcast to the neuron's shape. Inputs equal to zero
    (the initial states, padding, silent ReLUs) cannot carry relevance in the input × gradient
    form and are left out of ``N_j``, so the share reaches the inputs that do.
    """

    def __init__(self, ratio: torch.Tensor, count: torch.Tensor) -> None:
        self.ratio = ratio
        self.count = count


def _ratio(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``y / ȳ`` where ``y ≠ 0`` (0 elsewhere) and the indicator of ``y ≠ 0``."""
    nonzero = y != 0
    safe = torch.where(nonzero, y.detach(), torch.ones_like(y))
    return torch.where(nonzero, y / safe, torch.zeros_like(y)), nonzero.to(y.dtype)


def _total(values: Iterable[torch.Tensor]) -> torch.Tensor:
    """``sum(values)`` of one or more tensors, typed as the tensor it is."""
    return sum(values)  # type: ignore[return-value]  # typeshed's sum() starts from Literal[0]


def dense_spread(*inputs: torch.Tensor) -> Spread:
    """Every unit of a dense layer sees every entry of ``inputs`` (each ``(..., D_i)``)."""
    parts = [_ratio(y) for y in inputs]
    return Spread(
        _total(r.sum(-1, keepdim=True) for r, _ in parts), _total(c.sum(-1, keepdim=True) for _, c in parts)
    )


def elementwise_spread(*signals: torch.Tensor) -> Spread:
    """Unit ``j`` sees entry ``j`` of each signal (a gated sum such as ``f ⊙ c + i ⊙ g``)."""
    parts = [_ratio(y) for y in signals]
    return Spread(_total(r for r, _ in parts), _total(c for _, c in parts))


def time_spread(states: torch.Tensor) -> Spread:
    """Unit ``j`` of ``Σ_t α_t h_t`` sees ``h_{t,j}`` at every step of ``states (B, T, D)``."""
    ratio, count = _ratio(states)
    return Spread(ratio.sum(1), count.sum(1))


def window_spread(x: torch.Tensor, width: int) -> Spread:
    """A convolution of ``width`` over ``x (B, E, T)`` (already padded): output ``w`` sees the
    ``E × width`` entries of positions ``w … w + width − 1``; shapes ``(B, 1, T − width + 1)``."""
    ratio, count = _ratio(x)
    return Spread(
        ratio.sum(1).unfold(1, width, 1).sum(-1).unsqueeze(1),
        count.sum(1).unfold(1, width, 1).sum(-1).unsqueeze(1),
    )


def _value(term: Term) -> torch.Tensor:
    return term[0] * term[1] if isinstance(term, tuple) else term


def _linear(terms: Sequence[Term]) -> torch.Tensor:
    """The sum with gates detached: its gradient reaches the signals only, weighted by the gates."""
    return _total(t[0].detach() * t[1] if isinstance(t, tuple) else t for t in terms)


class Rule:
    """The plain forward pass: every operation returns its value and differentiates normally.

    A *neuron* is built with :meth:`node` from terms that are either tensors (weighted sums of
    signals, biases included) or pairs ``(g, s)``, a gate ``g`` acting as weight on a signal
    ``s``. Every gate or attention weight is passed through :meth:`weight` when it is computed.
    """

    def weight(self, g: torch.Tensor) -> torch.Tensor:
        """A gate or attention weight, as computed from the current input."""
        return g

    def node(
        self,
        terms: Sequence[Term],
        squash: Squash = None,
        *,
        bias: torch.Tensor | float = 0.0,
        spread: Spread | None = None,
    ) -> torch.Tensor:
        """``squash(Σ terms)`` (identity when ``squash`` is None).

        ``bias`` is the part of ``Σ terms`` that is the neuron's bias (it is already in the terms)
        and ``spread`` names the inputs the neuron sees; only the conservative LRP rule reads them.
        """
        z = _total(_value(t) for t in terms)
        return z if squash is None else squash(z)

    def through(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """An element-wise non-linearity ``value = φ(x)`` applied to a neuron already summed."""
        return value

    def gate(self, g: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        """A lone product ``g ⊙ s`` (no sum after it) with the gate ``g`` as weight."""
        return g * s

    def max_pool(self, a: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Max over time (last axis) of ``a (B, F, W)`` among the ``valid (B, W)`` windows."""
        return _masked_max(a, valid)[0]


class GateRecorder(Rule):
    """The plain forward pass on the input, remembering its gates and attention weights."""

    def __init__(self) -> None:
        self.gates: list[torch.Tensor] = []

    def weight(self, g):
        self.gates.append(g.detach())
        return g


class ReferenceRecorder(Rule):
    """The plain forward pass on the baseline, with the input's gates (from a :class:`GateRecorder`)
    in place of its own, remembering every neuron's pre-activation and value for :class:`DeepLiftRule`."""

    def __init__(self, gates: Sequence[torch.Tensor]) -> None:
        self._gates = iter(gates)
        self.log: Log = []

    def weight(self, g):
        try:
            frozen = next(self._gates)
        except StopIteration:
            raise RuntimeError("the reference pass computed more gates than the input's pass") from None
        if frozen.shape != g.shape:
            raise RuntimeError(
                f"gate shapes differ between passes: {tuple(frozen.shape)} vs {tuple(g.shape)}"
            )
        return frozen

    def node(self, terms, squash=None, *, bias=0.0, spread=None):
        z = sum(_value(t) for t in terms)
        y = z if squash is None else squash(z)
        self.log.append((z.detach(), y.detach()))
        return y

    def through(self, x, value):
        self.log.append((x.detach(), value.detach()))
        return value

    def max_pool(self, a, valid):
        value = _masked_max(a, valid)[0]
        self.log.append((a.detach(), value.detach()))
        return value


class LrpRule(Rule):
    """ε-LRP (Poerner et al. 2018 eq. 8) with gates as weights and the bias factor δ of Arras et al. (2017 §3).

    A neuron ``z_j = Σ_k y_k w_kj + b_j`` passes to each input ``y_k`` it sees
    ``R_{k←j} = (y_k w_kj + δ·(b_j + ε·sign z_j)/N_j) / (z_j + ε·sign z_j) · R_j``; a pair
    ``(g, s)`` passes its share to the signal ``s``. With ``bias_factor`` δ = 0 the bias and the
    stabiliser keep their share (the plain ε rule); with δ = 1 it is spread evenly over the ``N_j``
    non-zero inputs and every neuron hands on exactly its relevance. In input × gradient form the
    spread is the gradient of ``δ·(b_j + ε·sign z_j)/N_j · Σ_k y_k/ȳ_k`` (see :class:`Spread`).
    A neuron built without ``spread`` keeps the plain rule.
    """

    def __init__(self, eps: float = 1e-3, bias_factor: float = 0.0) -> None:
        self.eps = eps
        self.bias_factor = bias_factor

    def node(self, terms, squash=None, *, bias=0.0, spread=None):
        z = sum(_value(t) for t in terms).detach()
        y = z if squash is None else squash(z)
        denom = stabilise(z, self.eps)
        linear = _linear(terms)
        if spread is not None and self.bias_factor != 0.0:
            absorbed = torch.as_tensor(bias, dtype=z.dtype, device=z.device).detach() + (denom - z)
            share = self.bias_factor * absorbed / spread.count.clamp(min=1.0)
            linear = linear + share * spread.ratio
        return _route(y, linear, y / denom)

    def through(self, x, value):
        nonzero = x != 0
        ratio = torch.where(nonzero, value, torch.zeros_like(value)) / torch.where(
            nonzero, x, torch.ones_like(x)
        )
        return _route(value, x, ratio)

    def gate(self, g, s):
        return g.detach() * s

    def max_pool(self, a, valid):
        return a.gather(2, _masked_max(a, valid)[1].unsqueeze(2)).squeeze(2)


class DeepLiftRule(Rule):
    """DeepLIFT rescale rule (Poerner et al. 2018 §3.3) against the reference pass logged by a :class:`ReferenceRecorder`.

    The forward pass must make the same rule calls, in the same order, as the recorded one (the
    passes below depend on the mask only, which both share).
    """

    def __init__(self, log: Log, eps: float = 1e-6) -> None:
        self._ref: Iterator[tuple[torch.Tensor, torch.Tensor]] = iter(log)
        self.eps = eps

    def _pop(self) -> tuple[torch.Tensor, torch.Tensor]:
        try:
            return next(self._ref)
        except StopIteration:
            raise RuntimeError("the DeepLIFT pass made more rule calls than its reference pass") from None

    def _rescale(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """``Δvalue / (Δx + ε·sign Δx)`` against the next recorded reference."""
        x_ref, value_ref = self._pop()
        return (value - value_ref).detach() / stabilise((x - x_ref).detach(), self.eps)

    def node(self, terms, squash=None, *, bias=0.0, spread=None):
        z = sum(_value(t) for t in terms).detach()
        y = z if squash is None else squash(z)
        return _route(y, _linear(terms), self._rescale(z, y))

    def through(self, x, value):
        return _route(value, x, self._rescale(x, value))

    def gate(self, g, s):
        return g.detach() * s

    def max_pool(self, a, valid):
        a_ref, value_ref = self._pop()
        value, where = _masked_max(a, valid)
        picked = a.gather(2, where.unsqueeze(2)).squeeze(2)
        picked_ref = a_ref.gather(2, where.unsqueeze(2)).squeeze(2)
        k = (value - value_ref).detach() / stabilise((picked - picked_ref).detach(), self.eps)
        return _route(value, picked, k)


# --------------------------------------------------------------------------- models


def _lstm_step(x_proj, h_proj, c, rule: Rule, bias: torch.Tensor, inputs: Spread):
    i, f, g, o = (x_proj + h_proj).chunk(4, dim=-1)
    i, f, o = (rule.weight(torch.sigmoid(v)) for v in (i, f, o))
    g = rule.node([g], torch.tanh, bias=bias.chunk(4)[2], spread=inputs)
    c_new = rule.node([(f, c), (i, g)], spread=elementwise_spread(c, g))
    h_new = rule.gate(o, rule.through(c_new, torch.tanh(c_new)))
    return h_new, c_new


def _gru_step(x_proj, h_proj, h, rule: Rule, cell: GatedCell, inputs: Spread):
    x_r, x_z, x_n = x_proj.chunk(3, dim=-1)
    h_r, h_z, h_n = h_proj.chunk(3, dim=-1)
    r = rule.weight(torch.sigmoid(x_r + h_r))
    z = rule.weight(torch.sigmoid(x_z + h_z))
    bias = cell.bias_ih.chunk(3)[2] + r.detach() * cell.bias_hh.chunk(3)[2]
    n = rule.node([x_n, (r, h_n)], torch.tanh, bias=bias, spread=inputs)
    return rule.node([(1 - z, n), (z, h)], spread=elementwise_spread(n, h))


def gated_rnn(
    rnn: GatedRNN, x: torch.Tensor, mask: torch.Tensor, rule: Rule
) -> tuple[torch.Tensor, torch.Tensor]:
    """:meth:`GatedRNN.forward` under ``rule``: ``outputs (B, T, D*H)`` and ``final (B, D*H)``."""
    mask = mask.bool()
    b, t, _ = x.shape
    steps_mask = torch.arange(t, device=x.device) < mask.sum(1, keepdim=True)
    n_steps = int(steps_mask.sum(1).max().item()) if b else 0
    outputs, finals = [], []
    for k, cell in enumerate(rnn.cells):
        order = reading_order(mask, reverse=(k == 1))
        xs = gather_time(x, order)
        x_proj = F.linear(xs, cell.weight_ih, cell.bias_ih)  # type: ignore[arg-type]  # torch types a ModuleList's items as Module
        h = x.new_zeros(b, rnn.hidden_size)
        c = x.new_zeros(b, rnn.hidden_size)
        states = []
        for s in range(n_steps):
            h_proj = F.linear(h, cell.weight_hh, cell.bias_hh)  # type: ignore[arg-type]  # torch types a ModuleList's items as Module
            live = steps_mask[:, s : s + 1]
            inputs = dense_spread(xs[:, s], h)
            if rnn.kind == "lstm":
                bias = cell.bias_ih + cell.bias_hh  # type: ignore[operator]  # torch types a ModuleList's items as Module
                h_new, c_new = _lstm_step(x_proj[:, s], h_proj, c, rule, bias, inputs)
                c = torch.where(live, c_new, c)
            else:
                h_new = _gru_step(x_proj[:, s], h_proj, h, rule, cell, inputs)  # type: ignore[arg-type]  # torch types a ModuleList's items as Module
            h = torch.where(live, h_new, h)
            states.append(h)
        states += [x.new_zeros(b, rnn.hidden_size)] * (t - n_steps)
        seq = torch.stack(states, dim=1) * steps_mask.unsqueeze(-1).to(x.dtype)
        outputs.append(scatter_time(seq, order))
        finals.append(h)
    return torch.cat(outputs, dim=-1), torch.cat(finals, dim=-1)


def qrnn_layer(
    layer: QRNNLayer, x: torch.Tensor, mask: torch.Tensor, rule: Rule
) -> tuple[torch.Tensor, torch.Tensor]:
    """:meth:`QRNNLayer.forward` under ``rule``; ``Z``, ``F`` and ``O`` are weights, ``c``/``h`` signals."""
    mask = mask.bool()
    b, t, _ = x.shape
    lengths = mask.sum(1)
    steps_mask = torch.arange(t, device=x.device) < lengths.unsqueeze(1)
    n_gates = len(POOLING_GATES[layer.pooling])
    outputs, finals = [], []
    for k, conv in enumerate(layer.convs):
        order = reading_order(mask, reverse=(k == 1))
        xs = gather_time(x, order) * steps_mask.unsqueeze(-1).to(x.dtype)
        xs = F.pad(xs.transpose(1, 2), (layer.kernel_size - 1, 0))
        gates = conv(xs).transpose(1, 2).chunk(n_gates, dim=-1)
        window = window_spread(xs, layer.kernel_size)
        z = rule.node(
            [gates[0]],
            torch.tanh,
            bias=conv.bias.chunk(n_gates)[0],  # type: ignore[operator]  # torch types a ModuleList's items as Module
            spread=Spread(window.ratio.transpose(1, 2), window.count.transpose(1, 2)),
        )
        f = rule.weight(torch.sigmoid(gates[1]))
        c = x.new_zeros(b, layer.hidden_size)
        cs = []
        for s in range(t):
            c_new = rule.node([(f[:, s], c), (1 - f[:, s], z[:, s])], spread=elementwise_spread(c, z[:, s]))
            c = torch.where(steps_mask[:, s : s + 1], c_new, c)
            cs.append(c)
        c_seq = torch.stack(cs, dim=1) if cs else x.new_zeros(b, 0, layer.hidden_size)
        h_seq = rule.gate(rule.weight(torch.sigmoid(gates[2])), c_seq) if layer.pooling == "fo" else c_seq
        last = (lengths - 1).clamp(min=0)
        final = h_seq[torch.arange(b, device=x.device), last] * (lengths > 0).unsqueeze(1).to(x.dtype)
        outputs.append(scatter_time(h_seq * steps_mask.unsqueeze(-1).to(x.dtype), order))
        finals.append(final)
    return torch.cat(outputs, dim=-1), torch.cat(finals, dim=-1)


def _linear_out(layer: nn.Linear, x: torch.Tensor, rule: Rule) -> torch.Tensor:
    """The output layer: a weighted sum whose ε-stabiliser (LRP) also applies (Poerner et al. 2018 eq. 8)."""
    return rule.node([layer(x)], bias=layer.bias, spread=dense_spread(x))


def kim_cnn(model: KimCNN, embeds: torch.Tensor, mask: torch.Tensor, rule: Rule) -> torch.Tensor:
    """:meth:`KimCNN.encode` under ``rule``; returns the logits."""
    mask = mask.bool()
    x = embeds * mask.unsqueeze(-1).to(embeds.dtype)
    short = max(model.filter_sizes) - x.shape[1]
    if short > 0:
        x = F.pad(x, (0, 0, 0, short))
    x = x.transpose(1, 2)
    pooled = []
    for width, conv in zip(model.filter_sizes, model.convs, strict=True):
        fmap = rule.node([conv(x)], torch.relu, bias=conv.bias.unsqueeze(-1), spread=window_spread(x, width))  # type: ignore[operator]  # torch types a ModuleList's items as Module
        pooled.append(rule.max_pool(fmap, valid_windows(mask, width, fmap.shape[2])))
    features = torch.cat(pooled, dim=1)
    hidden = rule.node([model.fc(features)], torch.relu, bias=model.fc.bias, spread=dense_spread(features))
    return _linear_out(model.out, hidden, rule)


def attention_rnn(model: AttentionRNN, embeds: torch.Tensor, mask: torch.Tensor, rule: Rule) -> torch.Tensor:
    """:meth:`AttentionRNN.encode` under ``rule``; the attention weights act as weights."""
    mask = mask.bool()
    states, _ = gated_rnn(model.rnn, embeds, mask, rule)
    u = torch.tanh(model.attn_proj(states))
    alpha = rule.weight(masked_softmax(u @ model.attn_context, mask))
    context = rule.node([rule.gate(alpha.unsqueeze(-1), states).sum(1)], spread=time_spread(states))
    return _linear_out(model.classifier, context, rule)


def recurrent_classifier(
    model: RecurrentClassifier | QRNN, embeds: torch.Tensor, mask: torch.Tensor, rule: Rule
) -> torch.Tensor:
    """:meth:`RecurrentClassifier.encode` / :meth:`QRNN.encode` under ``rule`` (final state → classifier)."""
    if isinstance(model, QRNN):
        _, final = qrnn_layer(model.rnn, embeds, mask, rule)
    else:
        _, final = gated_rnn(model.rnn, embeds, mask, rule)
    return _linear_out(model.classifier, final, rule)


SUPPORTED = (KimCNN, AttentionRNN, RecurrentClassifier, QRNN)


def rule_logits(model: nn.Module, embeds: torch.Tensor, mask: torch.Tensor, rule: Rule) -> torch.Tensor:
    """The model's class scores ``(B, K)`` from ``embeds`` computed under ``rule``."""
    if isinstance(model, KimCNN):
        return kim_cnn(model, embeds, mask, rule)
    if isinstance(model, AttentionRNN):
        return attention_rnn(model, embeds, mask, rule)
    if isinstance(model, RecurrentClassifier | QRNN):
        return recurrent_classifier(model, embeds, mask, rule)
    raise TypeError(
        f"no propagation rules for {type(model).__name__}; supported: {[c.__name__ for c in SUPPORTED]}"
    )


def input_times_modified_gradient(
    model: nn.Module,
    embeds: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
    rule: Rule,
    baseline: torch.Tensor | None = None,
    extra_inputs: tuple[torch.Tensor, ...] = (),
) -> tuple[torch.Tensor, tuple[torch.Tensor, ...], torch.Tensor]:
    """Per-token relevance ``Σ_j (e − ē)_{t,j} ∂̃s(k)/∂e_{t,j}`` ``(B, T)`` (zeros on padding), the
    modified gradients of ``extra_inputs`` and the target's class scores ``s(k, X)`` ``(B,)``.

    ``extra_inputs`` (e.g. bias parameters) get their modified gradients returned, so the relevance a
    bias absorbs, ``b · ∂̃s/∂b``, can be measured. The rules keep every forward value, so the scores
    are the model's own.
    """
    with torch.enable_grad():
        x = embeds.detach().requires_grad_(True)
        logits = rule_logits(model, x, mask, rule)
        chosen = logits.gather(1, target.view(-1, 1).to(logits.device)).squeeze(1)
        grads = torch.autograd.grad(chosen.sum(), (x, *extra_inputs), allow_unused=True)
    delta = x.detach() if baseline is None else x.detach() - baseline
    relevance = (delta * grads[0]).sum(-1) * mask.to(x.dtype)
    extra = tuple(
        torch.zeros_like(p) if g is None else g for p, g in zip(extra_inputs, grads[1:], strict=True)
    )
    return relevance, extra, chosen.detach()
