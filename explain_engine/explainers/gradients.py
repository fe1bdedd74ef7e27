"""Gradient explanations: simple and integrated gradients of s or p, reduced by L2 or dot (Poerner et al. 2018 §3.1).

Eight methods, named ``grad_{l2|dot}_{1|int}_{s|p}``:

* ``1`` is the simple gradient ∂o(k, X)/∂e_t (eq. 4); ``int`` the integrated gradient (eq. 5) along
  the straight path from the all-zero embedding baseline to X, M = 50 points;
* ``s`` differentiates the class score s(k, X) (eq. 2), ``p`` the probability p(k | X) (eq. 3);
* ``l2`` reduces the gradient vector of word t by its L2 norm (eq. 6), ``dot`` by the dot product with
  e_t − ē_t = e_t (eq. 7 and footnote 2).

Written by hand rather than with Captum's ``IntegratedGradients``/``Saliency`` because the eight
variants share their passes: one forward pass over all path points (α = 1 included, which gives the
simple gradient) and one backward pass per output (s, p) that is asked for, instead of one full run
per variant. Captum's classes are the independent reference in the tests and the benchmark.

The path integral is approximated with ``rule``: ``"gausslegendre"`` (default, as Captum does; far
more accurate for the same M, so completeness holds within 1 %), ``"riemann_right"`` (eq. 5 exactly:
α = m/M, m = 1..M), or ``"riemann_trapezoid"``. Completeness (Σ_t φ_dot∫(t) = o(X) − o(baseline),
Sundararajan et al. 2017) is checked per text; a text whose gap exceeds ``tolerance`` (1 %) — which
happens on piecewise-linear models (ReLU CNN) whose gradient jumps along the path — is recomputed
with 2M, 4M, … points up to ``max_steps``, as Captum advises for a large convergence delta.

The rationale model's selection z is a step function of the embeddings with zero gradient; along
the path it would jump and completeness could not hold, so it is held at its value on X (a forward
hook on the generator's ``selector`` layer) and the methods explain the encoder given the rationale.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from explain_engine.explainers.registry import register_group
from explain_engine.models.base import EncodedBatch

GRADIENT_METHODS: tuple[str, ...] = tuple(
    f"grad_{reduction}_{kind}_{output}" if kind == "int" else f"grad_{reduction}_1{output}"
    for kind in ("1", "int")
    for output in ("s", "p")
    for reduction in ("l2", "dot")
)


@dataclass(frozen=True)
class GradientVariant:
    """One of the eight variants: reduction ``l2``/``dot``, ``integrated`` or not, output ``s``/``p``."""

    reduction: str
    integrated: bool
    output: str


def parse_variant(name: str) -> GradientVariant:
    """``grad_dot_int_p`` → GradientVariant('dot', True, 'p')."""
    parts = name.split("_")
    if name not in GRADIENT_METHODS:
        raise ValueError(f"not a gradient method: {name!r}; known: {', '.join(GRADIENT_METHODS)}")
    if parts[2] == "int":
        return GradientVariant(parts[1], True, parts[3])
    return GradientVariant(parts[1], False, parts[2][1])


def integration_points(steps: int = 50, rule: str = "gausslegendre") -> tuple[np.ndarray, np.ndarray]:
    """Points α ∈ [0, 1] and weights w with Σ w f(α) ≈ ∫₀¹ f(α) dα."""
    if steps < 1:
        raise ValueError("steps must be positive")
    if rule == "riemann_right":
        return np.arange(1, steps + 1) / steps, np.full(steps, 1.0 / steps)
    if rule == "riemann_trapezoid":
        alphas = np.linspace(0.0, 1.0, steps + 1)
        weights = np.full(steps + 1, 1.0 / steps)
        weights[[0, -1]] /= 2
        return alphas, weights
    if rule == "gausslegendre":
        x, w = np.polynomial.legendre.leggauss(steps)
        return (x + 1) / 2, w / 2
    raise ValueError(f"unknown integration rule {rule!r}")


@contextmanager
def frozen_selection(model: torch.nn.Module, batch: EncodedBatch) -> Iterator[None]:
    """Hold a rationale model's 0/1 selection at its value on ``batch`` (rows tiled as in the path)."""
    selector = getattr(model, "selector", None)
    if getattr(model, "architecture", "") != "rationale" or selector is None:
        yield
        return
    with torch.no_grad():
        selected = model(batch.ids, batch.mask).attention.bool()

    def hold(module: torch.nn.Module, inputs: Any, output: torch.Tensor) -> torch.Tensor:
        reps = output.shape[0] // selected.shape[0]
        logits = torch.where(selected, 30.0, -30.0).repeat(reps, 1)[:, : output.shape[1]]
        return logits.to(output.dtype).reshape(output.shape)

    handle = selector.register_forward_hook(hold)
    try:
        yield
    finally:
        handle.remove()


def _outputs(logits: torch.Tensor, target: torch.Tensor, output: str) -> torch.Tensor:
    if output == "s":
        return logits.gather(1, target[:, None]).squeeze(1)
    return torch.softmax(logits, dim=-1).gather(1, target[:, None]).squeeze(1)


def path_gradients(
    model: torch.nn.Module,
    batch: EncodedBatch,
    target: torch.Tensor,
    outputs: Sequence[str],
    alphas: np.ndarray,
    weights: np.ndarray,
    *,
    internal_batch_size: int = 512,
) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Gradients along the path α·E for each output in ``outputs`` (``"s"``, ``"p"``).

    Returns the embeddings E ``(B, T, E)``, the weighted sum Σ_i w_i ∂o/∂E(α_i E) per output, and the
    gradient at α = 1 per output (when 1 is among ``alphas``; an extra point with weight 0 is added
    by the caller otherwise). One forward pass and ``len(outputs)`` backward passes per chunk.
    """
    ids, mask = batch.ids, batch.mask
    n, length = ids.shape
    with torch.no_grad():
        embeds = model.embed(ids).detach()
    dim = embeds.shape[-1]
    integral = {o: torch.zeros_like(embeds) for o in outputs}
    at_one = {o: torch.zeros_like(embeds) for o in outputs}
    alpha_t = torch.as_tensor(alphas, dtype=embeds.dtype, device=embeds.device)
    weight_t = torch.as_tensor(weights, dtype=embeds.dtype, device=embeds.device)
    per_chunk = max(1, internal_batch_size // max(n, 1))
    cudnn_off = torch.backends.cudnn.flags(enabled=False) if embeds.is_cuda else nullcontext()
    with torch.enable_grad(), cudnn_off, frozen_selection(model, batch):
        for start in range(0, len(alphas), per_chunk):
            a = alpha_t[start : start + per_chunk]
            w = weight_t[start : start + per_chunk]
            steps = a.shape[0]
            x = (a[:, None, None, None] * embeds[None]).reshape(steps * n, length, dim).requires_grad_(True)
            logits = model(ids.repeat(steps, 1), mask.repeat(steps, 1), embeds=x).logits
            tgt = target.repeat(steps)
            for i, o in enumerate(outputs):
                (grad,) = torch.autograd.grad(
                    _outputs(logits, tgt, o).sum(), x, retain_graph=i + 1 < len(outputs)
                )
                grad = grad.reshape(steps, n, length, dim)
                integral[o] += torch.einsum("a,abtd->btd", w, grad)
                ones = (a == 1).nonzero().flatten()
                if ones.numel():
                    at_one[o] = grad[ones[0]].clone()
    return embeds, integral, at_one


def reduce_gradient(grad: torch.Tensor, embeds: torch.Tensor, reduction: str) -> torch.Tensor:
    """Per-token relevance from gradient vectors ``(B, T, E)``: L2 norm (eq. 6) or e_t · grad (eq. 7)."""
    if reduction == "l2":
        return grad.norm(dim=-1)
    if reduction == "dot":
        return (grad * embeds).sum(-1)
    raise ValueError(f"unknown reduction {reduction!r}")


def endpoint_outputs(
    model: torch.nn.Module, batch: EncodedBatch, target: torch.Tensor, outputs: Sequence[str]
) -> dict[str, torch.Tensor]:
    """o(k, X) − o(k, baseline) per text for each output (the value completeness asks for)."""
    with torch.no_grad(), frozen_selection(model, batch):
        embeds = model.embed(batch.ids)
        both = torch.cat([embeds, torch.zeros_like(embeds)])
        logits = model(batch.ids.repeat(2, 1), batch.mask.repeat(2, 1), embeds=both).logits
    n = batch.ids.shape[0]
    return {o: _outputs(logits[:n], target, o) - _outputs(logits[n:], target, o) for o in outputs}


def subset(batch: EncodedBatch, rows: torch.Tensor) -> EncodedBatch:
    """The texts ``rows`` of a batch."""
    index = [int(i) for i in rows]
    return EncodedBatch(
        batch.ids[rows],
        batch.mask[rows],
        [batch.owners[i] for i in index],
        [batch.n_words[i] for i in index],
        [batch.texts[i] for i in index],
    )


def integrated_gradients(
    model: torch.nn.Module,
    batch: EncodedBatch,
    target: torch.Tensor,
    outputs: Sequence[str],
    *,
    steps: int = 50,
    rule: str = "gausslegendre",
    tolerance: float | None = 0.01,
    max_steps: int = 800,
    with_simple: bool = False,
    internal_batch_size: int = 512,
) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Integrated gradients (and, with ``with_simple``, the gradient at X) sharing one set of passes.

    Returns embeddings, the integrated gradient per output, and the simple gradient per output.
    Texts whose completeness gap exceeds ``tolerance`` are redone with doubled ``steps``.
    """
    alphas, weights = integration_points(steps, rule)
    if with_simple and not np.any(alphas == 1.0):
        alphas, weights = np.append(alphas, 1.0), np.append(weights, 0.0)
    embeds, integral, at_one = path_gradients(
        model, batch, target, outputs, alphas, weights, internal_batch_size=internal_batch_size
    )
    if tolerance is None:
        return embeds, integral, at_one
    expected = endpoint_outputs(model, batch, target, outputs)
    current = steps
    while True:
        bad = torch.zeros(batch.ids.shape[0], dtype=torch.bool, device=embeds.device)
        for o in outputs:
            total = (integral[o] * embeds).sum((1, 2))
            bad |= (total - expected[o]).abs() > tolerance * expected[o].abs().clamp_min(1e-6)
        if not bool(bad.any()) or current * 2 > max_steps:
            return embeds, integral, at_one
        current *= 2
        rows = bad.nonzero().flatten()
        a, w = integration_points(current, rule)
        _, redone, _ = path_gradients(
            model, subset(batch, rows), target[rows], outputs, a, w, internal_batch_size=internal_batch_size
        )
        for o in outputs:
            integral[o][rows] = redone[o]


@register_group("gradients", GRADIENT_METHODS)
def gradients(
    bundle: Any,
    batch: EncodedBatch,
    target: torch.Tensor,
    names: Sequence[str],
    *,
    steps: int = 50,
    rule: str = "gausslegendre",
    tolerance: float | None = 0.01,
    max_steps: int = 800,
    internal_batch_size: int = 512,
) -> dict[str, torch.Tensor]:
    """Simple and integrated gradients of s or p, L2 or dot (Poerner et al. 2018 eq. 4–7), sharing passes."""
    variants = {name: parse_variant(name) for name in names}
    simple = sorted({v.output for v in variants.values() if not v.integrated}, reverse=True)
    integrated = sorted({v.output for v in variants.values() if v.integrated}, reverse=True)
    model = bundle.model
    if integrated:
        outputs = sorted(set(simple) | set(integrated), reverse=True)
        embeds, integral, at_one = integrated_gradients(
            model,
            batch,
            target,
            outputs,
            steps=steps,
            rule=rule,
            tolerance=tolerance,
            max_steps=max_steps,
            with_simple=bool(simple),
            internal_batch_size=internal_batch_size,
        )
    else:
        embeds, integral, at_one = path_gradients(
            model, batch, target, simple, np.ones(1), np.zeros(1), internal_batch_size=internal_batch_size
        )
    result = {}
    for name, v in variants.items():
        grad = integral[v.output] if v.integrated else at_one[v.output]
        result[name] = reduce_gradient(grad, embeds, v.reduction) * batch.mask
    return result
