"""One registry, one call signature for every explanation method φ(t, k, X) (Poerner et al. 2018 §3).

A method is registered under a name with :func:`register`; it receives the model bundle, an
:class:`~explain_engine.models.base.EncodedBatch` already on the model's device, and the target
class of each text, and returns token relevance ``(B, T)`` (zeros, or anything, on padding), or an
:class:`Attribution` that adds counter-evidence scores or per-text diagnostics::

    @register("attention", architectures=("lstm_attention", ...), pooling="model")
    def attention(bundle, batch, target, **params) -> torch.Tensor: ...

Methods whose passes can be shared (the eight gradient variants) are registered together with
:func:`register_group`: one function computes any subset of the names from one set of passes.
:func:`explain` and :func:`explain_many` encode texts, choose the target (the predicted class by
default), run the methods batch by batch, and pool token scores onto canonical words (sum).

:data:`METHODS` is an :class:`explain_engine.registry.Registry` of :class:`MethodSpec`; its metadata
(``architectures``, ``pooling``, ``group``, ``samples``, ``fitted_with``) is what callers such as the
CLI read instead of knowing methods by name. Every method module of this package registers itself
when :mod:`explain_engine.explainers` is imported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from explain_engine.explainers._forward import run_chunk
from explain_engine.method_names import STORED as _STORED
from explain_engine.method_names import TRAINING_ATTENTION as TRAINING_ATTENTION
from explain_engine.method_names import MethodInfo
from explain_engine.models.base import EncodedBatch
from explain_engine.registry import Registry
from explain_engine.text import pool_to_words

TokenScores = torch.Tensor | np.ndarray


@dataclass(frozen=True)
class Attribution:
    """Token relevance ``(B, T)`` with what a method reports beside it.

    ``counter``: token scores ``(B, T)`` from which counter-evidence is ranked (lowest first) when a
    method ranks it apart from the evidence (Grad-CAM-Text's min part, Lertvittayakumjorn & Toni
    2019 eq. 1); ``diagnostics``: one JSON-ready dict per text (e.g. integrated gradients'
    completeness, with a ``warnings`` list when a check failed); ``ngrams``: per text, the token
    spans ``[start, end)`` evidence may be chosen from when a method detects its own n-grams (the
    n-grams Grad-CAM-Text's filters detected, Lertvittayakumjorn & Toni 2019 §4.3.1).
    """

    scores: TokenScores
    counter: TokenScores | None = None
    diagnostics: list[dict] | None = None
    ngrams: list[list[tuple[int, int]]] | None = None


class Explained(dict):
    """``{method: [word relevance per text]}`` as :func:`explain_many` returns it, and beside it
    ``counter`` (``{method: [word counter-evidence scores per text]}``, methods that rank
    counter-evidence apart), ``diagnostics`` (``{method: [dict per text]}``, methods that report
    any) and ``ngrams`` (``{method: [word ranges (first_word, end_word) per text]}``, methods that
    detect the n-grams their evidence is chosen from) and ``seconds`` (wall seconds spent per method,
    or per group for methods that share their passes, keyed by the group's name)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.seconds: dict[str, float] = {}
        self.counter: dict[str, list[np.ndarray]] = {}
        self.diagnostics: dict[str, list[dict]] = {}
        self.ngrams: dict[str, list[list[tuple[int, int]]]] = {}

    def warnings(self, method: str) -> list[tuple[int, list[str]]]:
        """``(text index, warnings)`` of every text whose diagnostics for ``method`` carry any."""
        return [
            (i, d["warnings"]) for i, d in enumerate(self.diagnostics.get(method, [])) if d.get("warnings")
        ]


@dataclass(frozen=True)
class Param:
    """One parameter a method takes from its caller, with the values it may have: ``kind`` (``int``,
    ``float``, ``str`` or ``bool``; a ``list`` of ``int`` with ``item_kind``), an inclusive range
    ``low``..``high`` for numbers (a list's items), the ``choices`` of a string, and whether ``None``
    is allowed (``optional``). The bounds keep one request's work bounded: a method's cost grows with
    its samples and steps, so their ranges are part of the method's registration."""

    kind: type
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    optional: bool = False
    max_items: int = 20

    def describe(self) -> str:
        if self.choices is not None:
            return f"one of {list(self.choices)}"
        if self.kind is bool:
            return "true or false"
        what = "a whole number" if self.kind is int else "a number"
        if self.kind is list:
            what = f"a list of at most {self.max_items} whole numbers"
        if self.low is not None and self.high is not None:
            what += f" from {self.low:g} to {self.high:g}"
        return what + (" or null" if self.optional else "")

    def check(self, value: Any) -> Any:
        """``value`` when it is allowed; ``ValueError`` saying what is allowed otherwise."""
        if value is None and self.optional:
            return None
        if self.kind is list:
            if not isinstance(value, list) or len(value) > self.max_items:
                raise ValueError(f"must be {self.describe()}")
            return [Param(int, self.low, self.high).check(v) for v in value]
        ok = {
            bool: isinstance(value, bool),
            int: isinstance(value, int) and not isinstance(value, bool),
            float: isinstance(value, int | float) and not isinstance(value, bool),
            str: isinstance(value, str),
        }[self.kind]
        if ok and self.choices is not None:
            ok = value in self.choices
        if ok and self.kind in (int, float):
            ok = (self.low is None or value >= self.low) and (self.high is None or value <= self.high)
        if not ok:
            raise ValueError(f"must be {self.describe()}")
        return value


class ParamError(ValueError):
    """A method parameter refused: ``field`` is ``method.param`` (or ``method`` for the whole object)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


#: Parameters several methods share.
SEED = Param(int, 0, 2**31 - 1)
UNIT = Param(str, choices=("word", "token"))
OUTPUT = Param(str, choices=("s", "p"))
FORWARD_BATCH = Param(int, 1, 8192)


Method = Callable[..., TokenScores | Attribution]
GroupMethod = Callable[..., Mapping[str, TokenScores | Attribution]]


@dataclass(frozen=True)
class Fitting:
    """What a method must be fitted with before it can explain.

    ``params``: the method's parameters that carry a fit (one of them must be given); ``what``: the fit
    in words, for messages; ``fit(bundle, train_texts, valid_texts)``: fits it from the model's
    training and validation texts (its result is passed as ``params[0]``), or None when the caller
    must always supply it; ``summary(fitted)``: a line describing a fit, for logs.
    """

    params: tuple[str, ...]
    what: str
    fit: Callable[[Any, Sequence[str], Sequence[str]], Any] | None = None
    summary: Callable[[Any], str] | None = None


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its name, function, and what callers need to know about it.

    ``title``: the method in words, for pages and tables (``"Integrated gradients of s, dot product"``);
    ``source``: where it is defined (``"Poerner et al. 2018 §3.1"``); ``architectures``: the architectures it applies to (None = all); ``group``: the shared-pass group
    it belongs to; ``pooling``: how its token scores become word scores; ``samples``: whether it draws
    random samples (it takes a ``seed``); ``fitted_with``: what it must be fitted with, if anything;
    ``params``: the parameters a caller may set, with their types and ranges (:class:`Param`).
    """

    name: str
    fn: Method
    architectures: tuple[str, ...] | None = None
    group: str | None = None
    doc: str = field(default="", compare=False)
    pooling: str = "sum"
    samples: bool = False
    fitted_with: Fitting | None = None
    title: str = field(default="", compare=False)
    source: str = field(default="", compare=False)
    params: Mapping[str, Param] = field(default_factory=dict, compare=False)

    def applies_to(self, architecture: str) -> bool:
        return self.architectures is None or architecture in self.architectures


METHODS: Registry[MethodSpec] = Registry("explanation method")
GROUPS: Registry[tuple[GroupMethod, tuple[str, ...]]] = Registry("method group")


def _first_line(fn: Callable) -> str:
    return (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""


def _add(spec: MethodSpec) -> None:
    if not (spec.title and spec.source):
        raise ValueError(f"explanation method {spec.name!r} needs a title and a source")
    METHODS.add(
        spec.name,
        spec,
        architectures=spec.architectures,
        pooling=spec.pooling,
        group=spec.group,
        samples=spec.samples,
        fitted_with=spec.fitted_with,
        title=spec.title,
        source=spec.source,
        params=spec.params,
    )


def register(
    name: str,
    *,
    title: str,
    source: str,
    architectures: tuple[str, ...] | None = None,
    pooling: str = "sum",
    samples: bool = False,
    fitted_with: Fitting | None = None,
    params: Mapping[str, Param] | None = None,
) -> Callable[[Method], Method]:
    """Decorator: register ``fn(bundle, batch, target, **params) -> (B, T)`` under ``name``, shown as
    ``title`` and defined in ``source`` (both required).

    ``pooling`` is how token scores become word scores: ``sum`` (default), ``max``, ``mean``, or
    ``model`` for the model's own ``attention_pooling`` (attention maps pool as the model reads them).
    ``samples``: the method draws random samples and takes a ``seed``. ``fitted_with``: what the
    method must be fitted with (:class:`Fitting`); such a method is left out of ``"all"``. ``params``:
    the keyword arguments a caller may set (:class:`Param`); :func:`check_params` refuses any other.
    """

    def decorate(fn: Method) -> Method:
        arch = tuple(architectures) if architectures else None
        _add(
            MethodSpec(
                name,
                fn,
                arch,
                None,
                _first_line(fn),
                pooling,
                samples,
                fitted_with,
                title,
                source,
                dict(params or {}),
            )
        )
        return fn

    return decorate


def register_group(
    group: str,
    names: Sequence[str],
    *,
    title: Callable[[str], str],
    source: str,
    architectures: tuple[str, ...] | None = None,
    samples: bool = False,
    params: Mapping[str, Param] | None = None,
) -> Callable[[GroupMethod], GroupMethod]:
    """Decorator: ``fn(bundle, batch, target, names, **params) -> {name: (B, T)}`` computes any of ``names``.

    ``title(name)`` is each name's title; ``source`` where the family is defined. Each name is also
    registered on its own (calling the group with that one name), so
    :func:`explain` works for it; :func:`explain_many` calls the group once for all requested names.
    """

    def decorate(fn: GroupMethod) -> GroupMethod:
        taken = [name for name in names if name in METHODS]
        if taken:
            raise ValueError(f"explanation method {taken[0]!r} is already registered")
        GROUPS.add(group, (fn, tuple(names)))
        arch = tuple(architectures) if architectures else None
        for name in names:

            def single(bundle, batch, target, _name=name, **params):
                return fn(bundle, batch, target, [_name], **params)[_name]

            _add(
                MethodSpec(
                    name,
                    single,
                    arch,
                    group,
                    _first_line(fn),
                    samples=samples,
                    title=title(name),
                    source=source,
                    params=dict(params or {}),
                )
            )
        return fn

    return decorate


def describe_method(code: str) -> MethodInfo:
    """The title, source and one-line description of the method ``code``: a registered method or the
    stored training attention (:data:`TRAINING_ATTENTION`); an unknown code is titled as it is, with no
    source and no description."""
    if code in _STORED:
        return _STORED[code]
    if code in METHODS:
        spec = METHODS[code]
        return MethodInfo(spec.title, spec.source, spec.doc)
    return MethodInfo(code, "", "")


def get(name: str) -> MethodSpec:
    """The registered method ``name`` (:class:`~explain_engine.registry.UnknownName`, a ``ValueError``
    listing the known names, otherwise)."""
    return METHODS[name]


def check_params(key: str, values: Any) -> dict[str, Any]:
    """``values`` for the method or method group ``key``, checked against the parameters it declares:
    an unknown key, a wrong type or a value out of range is a :class:`ParamError` naming it."""
    if key in METHODS:
        declared = METHODS[key].params
    elif key in GROUPS:
        declared = METHODS[GROUPS[key][1][0]].params
    else:
        raise ParamError(key, "not an explanation method or method group")
    if not isinstance(values, Mapping):
        raise ParamError(key, "must be an object of the method's parameters")
    cleaned = {}
    for name, value in values.items():
        if name not in declared:
            allowed = ", ".join(sorted(declared)) or "none"
            raise ParamError(f"{key}.{name}", f"not a parameter of {key} (its parameters: {allowed})")
        try:
            cleaned[name] = declared[name].check(value)
        except ValueError as exc:
            raise ParamError(f"{key}.{name}", str(exc)) from None
    return cleaned


def methods_for(architecture: str, standalone: bool = False) -> list[str]:
    """Names of the methods that apply to ``architecture``, sorted (``standalone``: only those that
    need not be fitted first)."""
    return sorted(
        n
        for n, spec in METHODS.items()
        if spec.applies_to(architecture) and not (standalone and spec.fitted_with)
    )


def resolve_methods(names: str | Iterable[str], architecture: str) -> list[str]:
    """Expand ``"all"`` to every method for the architecture that need not be fitted first; check that
    every other name exists and applies."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    names = list(names)
    if names == ["all"]:
        return methods_for(architecture, standalone=True)
    for name in names:
        spec = get(name)
        if not spec.applies_to(architecture):
            raise ValueError(f"method {name!r} does not apply to architecture {architecture!r}")
    return names


def model_device(bundle: Any) -> torch.device:
    """The device the bundle's model lives on."""
    device = getattr(bundle, "device", None)
    if device is not None:
        return torch.device(device)
    return next(bundle.model.parameters()).device


def predicted_target(bundle: Any, batch: EncodedBatch) -> torch.Tensor:
    """The predicted class of each text of ``batch`` ``(B,)``."""
    with torch.no_grad():
        return run_chunk(bundle.model, batch.ids, batch.mask, None).argmax(-1)


def target_tensor(
    bundle: Any, batch: EncodedBatch, target: int | str | Sequence[int | str] | torch.Tensor | None
) -> torch.Tensor:
    """Targets as a ``(B,)`` long tensor: None → predicted class; a label name → its index."""
    n = batch.ids.shape[0]
    if target is None:
        return predicted_target(bundle, batch)
    if isinstance(target, torch.Tensor):
        t = target.to(batch.ids.device).long().reshape(-1)
        return t.expand(n).clone() if t.numel() == 1 else t
    labels = list(getattr(bundle, "labels", []) or [])

    def index(k: int | str) -> int:
        if isinstance(k, str):
            if k not in labels:
                raise ValueError(f"unknown label {k!r}; labels are {labels}")
            return labels.index(k)
        return int(k)

    if isinstance(target, int | str | np.integer):
        return torch.full((n,), index(target), dtype=torch.long, device=batch.ids.device)
    values = [index(k) for k in target]
    if len(values) != n:
        raise ValueError(f"{len(values)} targets for {n} texts")
    return torch.tensor(values, dtype=torch.long, device=batch.ids.device)


def to_numpy(scores: TokenScores) -> np.ndarray:
    if isinstance(scores, torch.Tensor):
        return scores.detach().to("cpu", torch.float64).numpy()
    return np.asarray(scores, dtype=np.float64)


def pool_batch(scores: TokenScores, batch: EncodedBatch, how: str = "sum") -> list[np.ndarray]:
    """Token relevance ``(B, T)`` → one word-relevance array per text (sum over each word's tokens)."""
    arr = to_numpy(scores)
    out = []
    for b, owners in enumerate(batch.owners):
        out.append(pool_to_words(arr[b, : len(owners)], owners, batch.n_words[b], how))
    return out


def word_ranges(spans: Sequence[tuple[int, int]], owners: Sequence[int]) -> list[tuple[int, int]]:
    """Token spans ``[start, end)`` of one text → the word ranges ``(first_word, end_word)`` they
    cover (tokens of no word left out), each once, in order."""
    out = set()
    for start, end in spans:
        words = [w for w in owners[start:end] if w >= 0]
        if words:
            out.add((min(words), max(words) + 1))
    return sorted(out)


def _batches(n: int, batch_size: int) -> Iterable[slice]:
    for start in range(0, n, max(1, batch_size)):
        yield slice(start, min(n, start + batch_size))


def _slice_target(target: Any, part: slice) -> Any:
    if target is None or isinstance(target, int | str | np.integer):
        return target
    if isinstance(target, torch.Tensor) and target.numel() == 1:
        return target
    return target[part]


def explain_many(
    bundle: Any,
    texts: Sequence[str],
    methods: Sequence[str],
    target: int | str | Sequence[int | str] | torch.Tensor | None = None,
    *,
    batch_size: int = 16,
    params: dict[str, dict[str, Any]] | None = None,
    progress: Callable[[int, int, Explained], None] | None = None,
    **shared: Any,
) -> Explained:
    """Run several methods on ``texts``; methods of one group share their passes.

    ``params`` maps a method (or group) name to its own keyword arguments; ``shared`` keyword
    arguments go to every method. Returns ``{method: [word relevance per text]}`` as an
    :class:`Explained`, which also holds the methods' counter-evidence scores, diagnostics and the
    seconds each took. ``progress(done, total, so_far)`` is called after each batch.
    """
    specs = [get(name) for name in methods]
    params = params or {}
    arch = getattr(bundle.model, "architecture", "")
    for spec in specs:
        if not spec.applies_to(arch):
            raise ValueError(f"method {spec.name!r} does not apply to architecture {arch!r}")
    device = model_device(bundle)
    out = Explained({spec.name: [] for spec in specs})

    def keep(name: str, result: TokenScores | Attribution, batch: EncodedBatch, how: str = "sum") -> None:
        if not isinstance(result, Attribution):
            out[name].extend(pool_batch(result, batch, how))
            return
        out[name].extend(pool_batch(result.scores, batch, how))
        if result.counter is not None:
            out.counter.setdefault(name, []).extend(pool_batch(result.counter, batch, how))
        if result.diagnostics is not None:
            out.diagnostics.setdefault(name, []).extend(result.diagnostics)
        if result.ngrams is not None:
            ranges = [word_ranges(s, owners) for s, owners in zip(result.ngrams, batch.owners, strict=True)]
            out.ngrams.setdefault(name, []).extend(ranges)

    was_training = bundle.model.training
    bundle.model.eval()
    try:
        for part in _batches(len(texts), batch_size):
            batch = bundle.encode(list(texts[part])).to(device)
            tgt = target_tensor(bundle, batch, _slice_target(target, part))
            done: set[str] = set()
            for spec in specs:
                if spec.name in done:
                    continue
                started = time.perf_counter()
                if spec.group is not None:
                    fn, _ = GROUPS[spec.group]
                    names = [s.name for s in specs if s.group == spec.group]
                    kwargs = {**shared, **params.get(spec.group, {})}
                    for name in names:
                        kwargs.update(params.get(name, {}))
                    result = fn(bundle, batch, tgt, names, **kwargs)
                    for name in names:
                        keep(name, result[name], batch)
                        done.add(name)
                else:
                    scores = spec.fn(bundle, batch, tgt, **{**shared, **params.get(spec.name, {})})
                    how = spec.pooling
                    if how == "model":
                        how = getattr(bundle.model, "attention_pooling", "sum")
                    keep(spec.name, scores, batch, how)
                    done.add(spec.name)
                key = spec.group if spec.group is not None else spec.name
                out.seconds[key] = out.seconds.get(key, 0.0) + time.perf_counter() - started
            if progress is not None:
                progress(part.stop, len(texts), out)
    finally:
        bundle.model.train(was_training)
    return out


def explain(
    bundle: Any,
    texts: Sequence[str],
    target: int | str | Sequence[int | str] | torch.Tensor | None = None,
    method: str = "grad_l2_1s",
    *,
    batch_size: int = 16,
    **params: Any,
) -> list[np.ndarray]:
    """Relevance of every canonical word of each text for ``target`` (default: the predicted class)."""
    return explain_many(bundle, texts, [method], target, batch_size=batch_size, **params)[method]
