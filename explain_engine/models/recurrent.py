"""LSTM and GRU written with explicit gates, one module for both.

``torch.nn.LSTM``/``GRU`` hide their gates inside fused kernels, and cuDNN refuses a backward
pass in eval mode. Writing the cell out by hand lets LRP and DeepLIFT treat the gates as
weights (Arras et al. 2017; Poerner et al. 2018 §3.2–3.3), lets cell decomposition read every gate
(Murdoch & Szlam 2017; Poerner et al. 2018 §3.4), and keeps gradients available in eval mode on any device.

Equations (gate order as in PyTorch):

* LSTM, ``G = 4`` gates ``(i, f, g, o)``: ``i, f, o = σ(·)``, ``g = tanh(·)`` of
  ``W_ih x_t + b_ih + W_hh h_{t-1} + b_hh``; ``c_t = f ⊙ c_{t-1} + i ⊙ g``, ``h_t = o ⊙ tanh(c_t)``.
* GRU, ``G = 3`` gates ``(r, z, n)``: ``r, z = σ(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z})``,
  ``n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))``, ``h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}``.

Variable lengths: each direction first gathers a text's real tokens to the front (in reading
order forward, reversed backward), runs over them, and scatters the states back to their
token positions. Steps past a text's last real token leave its state unchanged, so a padded
batch gives the same result as one text at a time, and the backward direction starts at each
text's own last real token.

Inference on the CPU without gradients (``torch.no_grad`` / ``torch.inference_mode``, no trace asked
for) runs the same weights through torch's fused one-layer ``lstm``/``gru`` kernels instead of the
Python loop over time steps: one call per direction over the gathered tokens, the same equations and
gate order, equal to the explicit loop to float precision (tested to 1e-5). Training, gradient
methods and the gate traces keep the explicit cells, and so does a GPU, where cuDNN's recurrent
kernels compute in TF32 by default and would not match to that precision.
"""

from __future__ import annotations

import math

import torch
from torch import nn

GATES = {"lstm": ("i", "f", "g", "o"), "gru": ("r", "z", "n")}


def _check_kind(kind: str) -> int:
    if kind not in GATES:
        raise ValueError(f"unknown recurrent cell {kind!r}; use 'lstm' or 'gru'")
    return len(GATES[kind])


def gate_step(
    kind: str, x_proj: torch.Tensor, h_proj: torch.Tensor, h: torch.Tensor, c: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None, dict[str, torch.Tensor]]:
    """One step of the cell from the two affine projections ``W_ih x + b_ih`` and ``W_hh h + b_hh``.

    Works on any leading dimensions; returns the new ``h``, the new ``c`` (LSTM) or ``None``
    (GRU), and the gate activations by name.
    """
    if kind == "lstm":
        i, f, g, o = (x_proj + h_proj).chunk(4, dim=-1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        assert c is not None  # an LSTM step has a cell state
        c_new = f * c + i * g
        return o * torch.tanh(c_new), c_new, {"i": i, "f": f, "g": g, "o": o}
    x_r, x_z, x_n = x_proj.chunk(3, dim=-1)
    h_r, h_z, h_n = h_proj.chunk(3, dim=-1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h, None, {"r": r, "z": z, "n": n}


class GatedCell(nn.Module):
    """One LSTM (``kind='lstm'``) or GRU (``kind='gru'``) cell with its gates in plain sight.

    Parameters: ``weight_ih (G*H, E)``, ``weight_hh (G*H, H)``, ``bias_ih (G*H,)``,
    ``bias_hh (G*H,)``. Initialised like ``torch.nn.LSTM``/``GRU`` (uniform ±1/√H); an LSTM's
    forget-gate bias starts at 1 (Jozefowicz et al. 2015) so early training keeps its memory.
    """

    def __init__(self, kind: str, input_size: int, hidden_size: int):
        super().__init__()
        self.kind = kind
        self.num_gates = _check_kind(kind)
        self.input_size = input_size
        self.hidden_size = hidden_size
        gh = self.num_gates * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(gh, input_size))
        self.weight_hh = nn.Parameter(torch.empty(gh, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(gh))
        self.bias_hh = nn.Parameter(torch.empty(gh))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)
        if self.kind == "lstm":
            with torch.no_grad():
                h = self.hidden_size
                self.bias_ih[h : 2 * h].fill_(1.0)
                self.bias_hh[h : 2 * h].zero_()

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | torch.Tensor | None = None
    ) -> tuple[tuple[torch.Tensor, torch.Tensor] | torch.Tensor, dict[str, torch.Tensor]]:
        """One step: ``x (B, E)`` and the previous state (``(h, c)`` for LSTM, ``h`` for GRU; zeros if None)."""
        zeros = x.new_zeros(x.shape[0], self.hidden_size)
        if self.kind == "lstm":
            h, c = state if state is not None else (zeros, zeros)
        else:
            h, c = (state if state is not None else zeros), None
        x_proj = nn.functional.linear(x, self.weight_ih, self.bias_ih)
        h_proj = nn.functional.linear(h, self.weight_hh, self.bias_hh)
        h_new, c_new, gates = gate_step(self.kind, x_proj, h_proj, h, c)
        return ((h_new, c_new) if c_new is not None else h_new), gates


def reading_order(mask: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """Per text, the token positions in processing order: real tokens first, padding after.

    ``order[b, s]`` is the position of the token processed at step ``s``; real tokens come in
    reading order (or reversed when ``reverse``), padded positions follow in their own order.
    """
    t = mask.shape[1]
    pos = torch.arange(t, device=mask.device).expand_as(mask)
    key = torch.where(mask, -pos if reverse else pos, pos + 2 * t)
    return torch.argsort(key, dim=1, stable=True)


def gather_time(x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """``x[b, order[b, s]]`` for ``x`` of shape ``(B, T, ...)``."""
    idx = order.view(*order.shape, *([1] * (x.dim() - 2))).expand(*order.shape, *x.shape[2:])
    return x.gather(1, idx)


def inverse_order(order: torch.Tensor) -> torch.Tensor:
    """The inverse permutation of each row of ``order`` ``(B, T)``: ``gather_time(y, inverse_order(o))``
    equals ``scatter_time(y, o)``."""
    steps = torch.arange(order.shape[1], device=order.device).expand_as(order)
    return torch.empty_like(order).scatter_(1, order, steps)


def scatter_time(y: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`gather_time`: put step ``s`` back at position ``order[b, s]``."""
    idx = order.view(*order.shape, *([1] * (y.dim() - 2))).expand_as(y)
    return torch.zeros_like(y).scatter(1, idx, y)


class GatedRNN(nn.Module):
    """A one-layer (Bi)LSTM or (Bi)GRU over a padded batch.

    ``cells`` holds the forward cell, then the backward cell when ``bidirectional``. Both
    directions run in one loop over time (their weights stacked), which halves the number of
    small operations on CPU.
    """

    def __init__(self, kind: str, input_size: int, hidden_size: int, bidirectional: bool = False):
        super().__init__()
        _check_kind(kind)
        self.kind = kind
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bidirectional = bidirectional
        self.num_directions = 2 if bidirectional else 1
        self.cells = nn.ModuleList(
            GatedCell(kind, input_size, hidden_size) for _ in range(self.num_directions)
        )

    @property
    def output_size(self) -> int:
        return self.num_directions * self.hidden_size

    def forward(self, x: torch.Tensor, mask: torch.Tensor, return_trace: bool = False):
        """Run over ``x (B, T, E)`` with ``mask (B, T)`` (True on real tokens).

        Returns ``outputs (B, T, D*H)`` (hidden states at each token's position, zeros on padding,
        forward half first) and ``final (B, D*H)`` (forward state after the last real token,
        backward state after the first). With ``return_trace=True`` a third value is a dict
        ``{"forward": {...}, "backward": {...}}``; each direction maps every gate name
        (``i, f, g, o`` or ``r, z, n``) and ``h`` (and ``c`` for LSTM) to a ``(B, T, H)`` tensor at
        the tokens' own positions (zeros on padding), and ``order`` to the ``(B, T)`` processing
        order from :func:`reading_order` (step ``s`` of that direction read position ``order[:, s]``).
        """
        mask = mask.bool()
        if not return_trace and not torch.is_grad_enabled() and x.device.type == "cpu":
            return self._fused(x, mask)
        b, t, _ = x.shape
        d, hs = self.num_directions, self.hidden_size
        orders = [reading_order(mask, reverse=(k == 1)) for k in range(d)]
        steps_mask = torch.arange(t, device=x.device) < mask.sum(1, keepdim=True)  # (B, T) prefix
        xs = torch.stack([gather_time(x, o) for o in orders])  # (D, B, T, E)
        w_ih = torch.stack([c.weight_ih for c in self.cells])  # type: ignore[misc]  # torch types a ModuleList's items as Module
        w_hh = torch.stack([c.weight_hh for c in self.cells])  # type: ignore[misc]  # torch types a ModuleList's items as Module
        b_ih = torch.stack([c.bias_ih for c in self.cells])  # type: ignore[misc]  # torch types a ModuleList's items as Module
        b_hh = torch.stack([c.bias_hh for c in self.cells])  # type: ignore[misc]  # torch types a ModuleList's items as Module
        x_proj = torch.einsum("dbte,dge->dbtg", xs, w_ih) + b_ih[:, None, None, :]
        h = x.new_zeros(d, b, hs)
        c = x.new_zeros(d, b, hs) if self.kind == "lstm" else None
        hs_steps: list[torch.Tensor] = []
        trace_steps: list[dict[str, torch.Tensor]] = []
        n_steps = int(steps_mask.sum(1).max().item()) if b else 0
        x_steps = x_proj[:, :, :n_steps].unbind(2)  # one backward node for all steps, not one per step
        for s in range(n_steps):
            h_proj = torch.baddbmm(b_hh[:, None, :], h, w_hh.transpose(1, 2))
            h_new, c_new, gates = gate_step(self.kind, x_steps[s], h_proj, h, c)
            live = steps_mask[:, s].view(1, b, 1)
            h = torch.where(live, h_new, h)
            if c is not None and c_new is not None:
                c = torch.where(live, c_new, c)
            hs_steps.append(h)
            if return_trace:
                step = dict(gates, h=h_new)
                if c_new is not None:
                    step["c"] = c_new
                trace_steps.append(step)
        pad_steps = t - n_steps
        live_all = steps_mask.view(1, b, t, 1)
        seq = self._stack_steps(hs_steps, pad_steps, (d, b, hs), x) * live_all  # (D, B, T, H)
        outputs = torch.cat([scatter_time(seq[k], orders[k]) for k in range(d)], dim=-1)
        final = torch.cat(list(h), dim=-1)
        if not return_trace:
            return outputs, final
        names = [*GATES[self.kind], "h"] + (["c"] if self.kind == "lstm" else [])
        trace = {}
        for k, direction in enumerate(["forward", "backward"][:d]):
            entry = {}
            for name in names:
                stacked = self._stack_steps([st[name][k] for st in trace_steps], pad_steps, (b, hs), x)
                entry[name] = scatter_time(stacked * steps_mask.unsqueeze(-1), orders[k])
            entry["order"] = orders[k]
            trace[direction] = entry
        return outputs, final, trace

    def _fused(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``forward`` without gradients or trace, through torch's fused recurrent kernels.

        Each direction reads its tokens time-major (real tokens first, in its processing order) with
        one call of ``torch.lstm``/``torch.gru``; steps past a text's last real token are discarded,
        and the final state is the output after that token (zeros for an empty text). Reordering
        and transposing happen in one row gather each way.
        """
        b, t, _ = x.shape
        hs = self.hidden_size
        lengths = mask.sum(1)
        live = torch.arange(t, device=x.device) < lengths[:, None]  # (B, T) prefix of real steps
        prefix = bool(torch.equal(live, mask))  # real tokens already come first (the usual padding)
        batch = torch.arange(b, device=x.device)[:, None]
        flat_x = x.reshape(b * t, -1)
        out = x.new_empty(b, t, self.num_directions * hs)
        finals = []
        for k, cell in enumerate(self.cells):
            if k == 0 and prefix:
                order = torch.arange(t, device=x.device).expand(b, t)
                back = order
            else:
                order = reading_order(mask, reverse=(k == 1))
                back = inverse_order(order)
            xs = flat_x.index_select(0, (batch * t + order).T.reshape(-1)).view(t, b, -1)  # (T, B, E)
            h0 = x.new_zeros(1, b, hs)
            params: list[torch.Tensor] = [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh]  # type: ignore[list-item]  # torch types a ModuleList's items as Module
            if self.kind == "lstm":
                seq = torch.lstm(xs, (h0, h0), params, True, 1, 0.0, False, False, False)[0]
            else:
                seq = torch.gru(xs, h0, params, True, 1, 0.0, False, False, False)[0]
            seq = seq.reshape(t * b, hs)
            finals.append(seq.index_select(0, (lengths - 1).clamp_min(0) * b + batch[:, 0]))
            steps = seq.index_select(0, (back * b + batch).reshape(-1)).view(b, t, hs)
            torch.mul(steps, mask.unsqueeze(-1), out=out[..., k * hs : (k + 1) * hs])
        final = torch.cat(finals, dim=-1) * (lengths > 0).unsqueeze(-1)
        return out, final

    @staticmethod
    def _stack_steps(steps: list[torch.Tensor], pad_steps: int, shape: tuple[int, ...], like: torch.Tensor):
        """Stack per-step tensors along a new time axis (dim -2), padding with zeros to ``T``."""
        if pad_steps:
            steps = steps + [like.new_zeros(shape)] * pad_steps
        return torch.stack(steps, dim=-2)
