"""Faithfulness of word explanations: does the model depend on the words an explanation ranks first?

For a text x of n canonical words, its target class ŷ — the class the model predicts for the
unperturbed text unless a target is given — and p(·) = the model's softmax probability of ŷ:

* comprehensiveness at bin f: p(x) − p(x ∖ r_f), where r_f are the explanation's top k words;
* sufficiency at bin f: p(x) − p(r_f), the text reduced to those words (in their order);
* their AOPC: the mean of the per-bin values over the bins B = 1, 5, 10, 20 and 50 % of the words
  (DeYoung et al. 2020 §4, ERASER, after Samek et al. 2017's area over the perturbation curve);
* τ: Kendall's τ-b (``scipy.stats.kendalltau``, which corrects for ties) between the explanation's word
  scores and leave-one-word-out importance p(x) − p(x ∖ w_i) (Jain & Wallace 2019 §4; they measure a
  word's removal by the total variation distance of the output distributions, ``loo="tvd"`` here — the
  signed drop of p is the default, so that an explanation with signs is compared with a signed importance).

The top k words are the k highest word scores (ties: the earlier word first), k = ⌈f · n⌉. DeYoung et al.
name the bins as fractions without a rounding rule; rounding up gives every bin at least one word, where
rounding to the nearest would leave the 1 % bin empty (and its values 0) on every text under 50 words.

Words are **removed**, not masked: their tokens are deleted and the rest close up, as ERASER removes the
rationale tokens. A text left with no word is one all-zero embedding (:func:`.perturbation.dropped`).
For a model with a word vocabulary (every family of :mod:`explain_engine.models`) the perturbed texts are
built as token rows from one encoding of the batch — on a model with ``max_len`` they are cut from the
truncated text — and run in length-sorted chunks with the perturbation methods' machinery; any other model
bundle gets the texts themselves, its kept words joined by single spaces, through ``bundle.scores``
(there a text left with no word has no value: NaN, left out of the means and counted).

Hand-written: Captum has no ERASER metric and ferret (Attanasio et al. 2023) runs only on Hugging Face
models; computing every method's rows of a batch in one pass (the texts and their leave-one-out copies
shared by all methods) is what makes the metrics affordable for every explanation method at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.stats import kendalltau

from explain_engine.explainers.perturbation import chunk_tokens, dropped, forward_logits, unit_index
from explain_engine.explainers.registry import model_device
from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, mean_estimate
from explain_engine.metrics.ragged import Ragged, descending_ranks
from explain_engine.registry import Registry
from explain_engine.text import word_spans

BINS = (0.01, 0.05, 0.10, 0.20, 0.50)
LOO_KINDS = ("drop", "tvd")
TEXT_BATCH = 16  # texts whose perturbed rows are built and run together
ROW_BATCH = 512  # rows per forward chunk at most

Progress = Callable[[float, str], None]


def bin_sizes(n_words: np.ndarray | Sequence[int], bins: Sequence[float] = BINS) -> np.ndarray:
    """``(N, |B|)`` words removed or kept per text and bin: k = ⌈f · n⌉, at least 1, at most n.

    The product is rounded to 9 decimals first, so that 0.1 · 30 counts as 3 and not 3.0000000000000004.
    """
    n = np.asarray(n_words, dtype=np.int64)
    k = np.ceil(np.round(np.outer(n, np.asarray(bins, dtype=np.float64)), 9)).astype(np.int64)
    return np.minimum(np.maximum(k, 1), n[:, None])


@dataclass
class Faithfulness:
    """Per text faithfulness of several methods' explanations of the same texts.

    ``target``: the class index each text was measured for; ``probability``: p(ŷ | x) unperturbed;
    ``loo``: leave-one-word-out importance per text (as ``loo_kind`` defines it); per method,
    ``comprehensiveness`` and ``sufficiency`` ``(N, |B|)`` and ``tau`` ``(N,)`` (NaN for a text whose
    scores or importances are all equal, or with fewer than two words).
    """

    methods: list[str]
    ids: list[str]
    labels: list[str]
    bins: tuple[float, ...]
    loo_kind: str
    n_words: np.ndarray
    target: np.ndarray
    probability: np.ndarray
    loo: list[np.ndarray]
    comprehensiveness: dict[str, np.ndarray] = field(default_factory=dict)
    sufficiency: dict[str, np.ndarray] = field(default_factory=dict)
    tau: dict[str, np.ndarray] = field(default_factory=dict)

    def values(self, method: str, metric: str) -> np.ndarray:
        """Per text values of a registered metric (``(N, |B|)`` for a metric per bin)."""
        return FAITHFULNESS[metric](self, method)

    def per_text(self, method: str) -> list[dict]:
        """One dict per text: every registered metric (a list over the bins for one per bin), the bins,
        the target label and p(ŷ | x) — the form that is stored beside an explanation."""
        columns = {name: self.values(method, name) for name in FAITHFULNESS}
        return [
            {
                **{name: _floats(values[i]) for name, values in columns.items()},
                "bins": list(self.bins),
                "target": self.labels[int(self.target[i])] if self.labels else int(self.target[i]),
                "probability": float(self.probability[i]),
            }
            for i in range(len(self.ids))
        ]

    def summary(self, n_boot: int = N_BOOT, level: float = LEVEL, seed: int | None = 0) -> dict:
        """Per method and metric the mean over texts with n and a bootstrap interval (one per bin for a
        metric per bin); see :func:`summarize`."""
        return {m: summarize(self.per_text(m), n_boot, level, seed) for m in self.methods}

    def to_dict(self, n_boot: int = N_BOOT, seed: int | None = 0) -> dict:
        summary = self.summary(n_boot, seed=seed)
        return {
            "texts": len(self.ids),
            "bins": list(self.bins),
            "leave_one_out": self.loo_kind,
            "methods": {
                m: {name: _as_dicts(est) for name, est in figures.items()} for m, figures in summary.items()
            },
        }

    def table(self, n_boot: int = N_BOOT, seed: int | None = 0) -> str:
        """A plain-text table: per method, comprehensiveness and sufficiency per bin and their AOPC, τ;
        each as mean [95 % interval] over the texts, n the texts with a value."""
        summary = self.summary(n_boot, seed=seed)
        width = max([len("method"), *(len(m) for m in self.methods)])
        bins = [f"{f * 100:g}%" for f in self.bins]
        lines = [
            f"faithfulness of {len(self.methods)} methods on {len(self.ids)} texts: p of each text's target "
            f"class (the predicted one unless a target was given), words removed; leave-one-out: {self.loo_kind}"
        ]
        for name, what in (
            ("comprehensiveness", "p(x) − p(x without the top words); higher is more faithful"),
            ("sufficiency", "p(x) − p(only the top words); lower is more faithful"),
        ):
            lines.append(f"{name}: {what}; per share of the words, and their mean (AOPC)")
            lines.append(
                f"{'method':<{width}}  " + "  ".join(f"{b:>23}" for b in [*bins, "AOPC"]) + "      n"
            )
            for m in self.methods:
                cells = [*summary[m][name], summary[m][f"{name}_aopc"]]
                row = "  ".join(f"{_cell(e):>23}" for e in cells)
                lines.append(f"{m:<{width}}  {row}  {cells[-1].n:>5}")
        lines.append("Kendall's τ-b with leave-one-word-out importance")
        lines.append(f"{'method':<{width}}  {'τ':>23}  {'n':>5}")
        for m in self.methods:
            est = summary[m]["kendall_tau_loo"]
            lines.append(f"{m:<{width}}  {_cell(est):>23}  {est.n:>5}")
        return "\n".join(lines)


def _floats(value: Any) -> Any:
    if np.ndim(value):
        return [None if not np.isfinite(v) else float(v) for v in value]
    return None if not np.isfinite(value) else float(value)


def _as_dicts(est: Estimate | list[Estimate]) -> dict | list[dict]:
    return [e.to_dict() for e in est] if isinstance(est, list) else est.to_dict()


def _cell(est: Estimate) -> str:
    if not np.isfinite(est.value):
        return "n/a"
    if not np.isfinite(est.ci_low):
        return f"{est.value:.3f}"
    return f"{est.value:.3f} [{est.ci_low:.3f},{est.ci_high:.3f}]"


# ----------------------------------------------------------------------------------------- registry

FaithfulnessMetric = Callable[[Faithfulness, str], np.ndarray]

FAITHFULNESS: Registry[FaithfulnessMetric] = Registry("faithfulness metric")
"""Faithfulness metrics by name: ``FAITHFULNESS[name](result, method)`` gives the per text values from
a :class:`Faithfulness`. Metadata: ``per_bin`` (values per bin of :data:`BINS`), ``better`` (``"higher"``
or ``"lower"``) and ``source``."""


@FAITHFULNESS.register("comprehensiveness", per_bin=True, better="higher", source="DeYoung et al. 2020 §4")
def comprehensiveness(result: Faithfulness, method: str) -> np.ndarray:
    """p(x) − p(x without the top k words), per bin."""
    return result.comprehensiveness[method]


@FAITHFULNESS.register("sufficiency", per_bin=True, better="lower", source="DeYoung et al. 2020 §4")
def sufficiency(result: Faithfulness, method: str) -> np.ndarray:
    """p(x) − p(only the top k words), per bin."""
    return result.sufficiency[method]


@FAITHFULNESS.register(
    "comprehensiveness_aopc", per_bin=False, better="higher", source="DeYoung et al. 2020 §4"
)
def comprehensiveness_aopc(result: Faithfulness, method: str) -> np.ndarray:
    """Comprehensiveness averaged over the bins."""
    return result.comprehensiveness[method].mean(axis=1)


@FAITHFULNESS.register("sufficiency_aopc", per_bin=False, better="lower", source="DeYoung et al. 2020 §4")
def sufficiency_aopc(result: Faithfulness, method: str) -> np.ndarray:
    """Sufficiency averaged over the bins."""
    return result.sufficiency[method].mean(axis=1)


@FAITHFULNESS.register("kendall_tau_loo", per_bin=False, better="higher", source="Jain & Wallace 2019 §4")
def kendall_tau_loo(result: Faithfulness, method: str) -> np.ndarray:
    """Kendall's τ-b between the word scores and leave-one-word-out importance."""
    return result.tau[method]


def summarize(
    per_text: Sequence[Mapping[str, Any]], n_boot: int = N_BOOT, level: float = LEVEL, seed: int | None = 0
) -> dict[str, Estimate | list[Estimate]]:
    """Means over texts with their n and percentile bootstrap intervals, from per text dicts as
    :meth:`Faithfulness.per_text` writes them (a list of Estimates, one per bin, for a metric per bin).

    Texts without a value (None / NaN) are left out and counted (``skipped``).
    """
    out: dict[str, Estimate | list[Estimate]] = {}
    for name in FAITHFULNESS:
        if FAITHFULNESS.meta(name)["per_bin"]:
            width = max((len(row.get(name) or ()) for row in per_text), default=0)
            table = np.full((len(per_text), width), np.nan)
            for i, row in enumerate(per_text):
                values = row.get(name) or ()
                table[i, : len(values)] = [np.nan if v is None else v for v in values]
            out[name] = [mean_estimate(table[:, b], n_boot, level, seed) for b in range(width)]
        else:
            values = np.array([np.nan if row.get(name) is None else row[name] for row in per_text], float)
            out[name] = mean_estimate(values, n_boot, level, seed)
    return out


# -------------------------------------------------------------------------------------------- rows


def _target_index(labels: Sequence[str], target: Any, n: int) -> np.ndarray | None:
    """Targets as class indices (None: the predicted class); a label name is looked up in ``labels``."""
    if target is None:
        return None
    items = [target] * n if isinstance(target, str | int) else list(target)
    if len(items) != n:
        raise ValueError(f"{len(items)} targets for {n} texts")
    out = np.empty(n, dtype=np.int64)
    for i, t in enumerate(items):
        if isinstance(t, str):
            if t not in labels:
                raise ValueError(f"target {t!r} is not one of the model's labels {list(labels)}")
            out[i] = list(labels).index(t)
        else:
            if not 0 <= int(t) < len(labels):
                raise ValueError(f"target {t!r} is not a class index of the model (0..{len(labels) - 1})")
            out[i] = int(t)
    return out


def _keep_rows(n: int, ranks: np.ndarray, sizes: np.ndarray, n_methods: int) -> np.ndarray:
    """The words each row of one text keeps ``(1 + n + 2·M·|B|, n)``: the text, its leave-one-out
    copies, then per method the comprehensiveness rows (top k removed) and the sufficiency rows (only
    the top k), bin after bin. ``ranks`` is ``(M, n)``."""
    rows = [np.ones((1, n), dtype=bool), ~np.eye(n, dtype=bool)]
    for m in range(n_methods):
        top = ranks[m][None, :] < sizes[:, None]  # (|B|, n)
        rows += [~top, top]
    return np.concatenate(rows, axis=0)


def _row_probabilities_tokens(bundle: Any, texts: Sequence[str], keep: list[np.ndarray]) -> torch.Tensor:
    """Softmax of every row: token rows cut from one encoding of ``texts`` (word ``keep`` per text)."""
    device = model_device(bundle)
    batch = bundle.encode(list(texts)).to(device)
    units, _ = unit_index(batch, "word")
    width = max(k.shape[1] for k in keep)
    counts = [k.shape[0] for k in keep]
    # the last column stands for tokens of no word (a model's special tokens): always kept
    words = torch.ones((sum(counts), width + 1), dtype=torch.bool)
    words[:, :width] = torch.from_numpy(
        np.concatenate([np.pad(k, ((0, 0), (0, width - k.shape[1]))) for k in keep], axis=0)
    )
    doc = torch.repeat_interleave(torch.arange(len(texts)), torch.tensor(counts)).to(device)
    words = words.to(device)
    unit = units[doc]
    unit = torch.where(unit < 0, width, unit.clamp_max(width))
    token_keep = words.gather(1, unit) & batch.mask[doc]
    perturbed = dropped(batch.ids[doc], token_keep, doc)
    logits = forward_logits(bundle.model, perturbed, ROW_BATCH, chunk_tokens(bundle.model, device))
    return torch.softmax(logits.double(), dim=-1).cpu()


def _row_probabilities_texts(bundle: Any, texts: Sequence[str], keep: list[np.ndarray]) -> torch.Tensor:
    """Softmax of every row: each row's kept words joined by single spaces, through ``bundle.scores``; a
    row with no word left is not scored (NaN)."""
    strings = []
    for text, k in zip(texts, keep, strict=True):
        words = [text[s:e] for s, e in word_spans(text)]
        strings += [" ".join(w for w, kept in zip(words, row, strict=True) if kept) for row in k]
    scored = [j for j, s in enumerate(strings) if s]
    probs = np.full((len(strings), len(bundle.labels)), np.nan)
    if scored:
        probs[scored] = bundle.scores([strings[j] for j in scored], batch_size=ROW_BATCH, kind="probs")
    return torch.from_numpy(probs)


def _ranks_of(ranks: Mapping[str, Ragged], i: int) -> np.ndarray:
    """``(M, n)`` the word ranks of text ``i`` under each method."""
    rows = [r.values[r.starts[i] : r.starts[i] + r.lengths[i]] for r in ranks.values()]
    return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.int64)


def _uses_tokens(bundle: Any, via: str) -> bool:
    if via not in ("auto", "tokens", "texts"):
        raise ValueError(f"unknown way {via!r}; use 'auto', 'tokens' or 'texts'")
    if via == "auto":
        return hasattr(bundle, "vocab") and hasattr(bundle, "encode")
    return via == "tokens"


def _tau(scores: np.ndarray, importance: np.ndarray) -> float:
    if len(scores) < 2 or np.ptp(scores) == 0 or np.ptp(importance) == 0:
        return float("nan")
    return float(kendalltau(scores, importance, variant="b").statistic)


def faithfulness(
    bundle: Any,
    texts: Sequence[str],
    explanations: Mapping[str, Sequence[Sequence[float]]],
    target: int | str | Sequence[int | str] | None = None,
    *,
    ids: Sequence[Any] | None = None,
    bins: Sequence[float] = BINS,
    loo: str = "drop",
    batch_size: int = TEXT_BATCH,
    via: str = "auto",
    progress: Progress | None = None,
) -> Faithfulness:
    """Comprehensiveness, sufficiency (per bin), their AOPC and τ with leave-one-word-out importance of
    every method's explanation of ``texts``.

    ``explanations`` maps a method name to one list of word scores per text (as many as the text's
    canonical words, :func:`explain_engine.text.word_spans`; higher = more important for the target).
    ``target``: None (the predicted class), a class index or label, or one per text. ``loo``: ``"drop"``
    (p(x) − p(x ∖ w)) or ``"tvd"`` (½ Σ_k |p_k(x) − p_k(x ∖ w)|, Jain & Wallace 2019). ``via``:
    ``"tokens"`` (token rows), ``"texts"`` (strings through ``bundle.scores``) or ``"auto"`` (tokens when
    the bundle has a word vocabulary). ``progress(fraction, message)`` is called after every batch.
    """
    if loo not in LOO_KINDS:
        raise ValueError(f"unknown leave-one-out importance {loo!r}; use one of {', '.join(LOO_KINDS)}")
    if any(not 0 < f <= 1 for f in bins) or not bins:
        raise ValueError(f"bins must be fractions in (0, 1], got {list(bins)}")
    methods = list(explanations)
    n_texts = len(texts)
    n_words = np.array([len(word_spans(t)) for t in texts], dtype=np.int64)
    if (n_words == 0).any():
        raise ValueError(f"text {int(np.argmin(n_words))} has no words")
    ranks = {m: _checked_ranks(m, explanations[m], n_words) for m in methods}
    labels = list(getattr(bundle, "labels", []) or [])
    given = _target_index(labels, target, n_texts)
    sizes = bin_sizes(n_words, bins)
    tokens = _uses_tokens(bundle, via)
    result = _empty_result(methods, ids, labels, bins, loo, n_words)
    was_training = getattr(bundle.model, "training", False)
    bundle.model.eval()
    try:
        for first in range(0, n_texts, batch_size):
            part = range(first, min(first + batch_size, n_texts))
            keep = [_keep_rows(int(n_words[i]), _ranks_of(ranks, i), sizes[i], len(methods)) for i in part]
            chunk = [texts[i] for i in part]
            probs = (_row_probabilities_tokens if tokens else _row_probabilities_texts)(
                bundle, chunk, keep
            ).numpy()
            start = 0
            for i, k in zip(part, keep, strict=True):
                rows = probs[start : start + k.shape[0]]
                start += k.shape[0]
                target_i = None if given is None else int(given[i])
                _measure_text(result, i, rows, target_i, explanations)
            if progress is not None:
                progress(part.stop / n_texts, f"measured {part.stop} of {n_texts} texts")
    finally:
        bundle.model.train(was_training)
    return result


def _checked_ranks(method: str, scores: Sequence[Sequence[float]], n_words: np.ndarray) -> Ragged:
    """The descending word ranks of ``method``'s explanations, once they are one finite score per word
    of every text."""
    scores = list(scores)
    n_texts = len(n_words)
    if len(scores) != n_texts:
        raise ValueError(f"method {method!r}: {len(scores)} explanations for {n_texts} texts")
    for i, s in enumerate(scores):
        if len(s) != n_words[i]:
            raise ValueError(f"method {method!r}, text {i}: {len(s)} word scores for {n_words[i]} words")
    ragged = Ragged.from_lists(scores)
    if not np.isfinite(ragged.values).all():
        bad = int(ragged.segments[~np.isfinite(ragged.values)][0])
        raise ValueError(f"method {method!r}, text {bad}: a word score is not a finite number")
    return descending_ranks(ragged)


def _empty_result(
    methods: list[str],
    ids: Sequence[Any] | None,
    labels: list,
    bins: Sequence[float],
    loo: str,
    n_words: np.ndarray,
) -> Faithfulness:
    """A :class:`Faithfulness` of the right shapes, to be filled text by text."""
    n_texts, n_bins = len(n_words), len(bins)
    return Faithfulness(
        methods,
        [str(i) for i in ids] if ids is not None else [str(i) for i in range(n_texts)],
        labels,
        tuple(float(f) for f in bins),
        loo,
        n_words,
        np.zeros(n_texts, dtype=np.int64),
        np.zeros(n_texts),
        [],
        {m: np.zeros((n_texts, n_bins)) for m in methods},
        {m: np.zeros((n_texts, n_bins)) for m in methods},
        {m: np.full(n_texts, np.nan) for m in methods},
    )


def _measure_text(
    result: Faithfulness,
    i: int,
    rows: np.ndarray,
    target: int | None,
    explanations: Mapping[str, Sequence[Sequence[float]]],
) -> None:
    """Fill text ``i`` of ``result`` from its probability rows (the full text, each word left out, then per
    method and bin the text without and with only the top words): the explained class (``target``, or
    the predicted one) and its probability, leave-one-out importance, comprehensiveness, sufficiency
    and τ."""
    methods, n_bins = result.methods, len(result.bins)
    n_methods = len(methods)
    full = rows[0]
    t = int(full.argmax()) if target is None else target
    p = full[t]
    n = int(result.n_words[i])
    out = rows[1 + n :, t].reshape(max(n_methods, 0), 2, n_bins) if n_methods else None
    if result.loo_kind == "drop":
        importance = p - rows[1 : 1 + n, t]
    else:
        importance = 0.5 * np.abs(rows[1 : 1 + n] - full).sum(axis=1)
    result.target[i], result.probability[i] = t, p
    result.loo.append(importance)
    for j, m in enumerate(methods):
        assert out is not None  # there are methods
        result.comprehensiveness[m][i] = p - out[j, 0]
        result.sufficiency[m][i] = p - out[j, 1]
        scores = np.asarray(explanations[m][i], dtype=np.float64)
        result.tau[m][i] = _tau(scores, importance)


__all__ = [
    "BINS",
    "FAITHFULNESS",
    "Faithfulness",
    "bin_sizes",
    "comprehensiveness",
    "comprehensiveness_aopc",
    "faithfulness",
    "kendall_tau_loo",
    "sufficiency",
    "sufficiency_aopc",
    "summarize",
]
