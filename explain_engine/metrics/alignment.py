"""Importance alignment (the NLI importance-alignment paper, §3): do a model's token importances match what a human explanation says?

* Model importance I(x) = |IG(x)| (eq. 1): absolute attributions per token.
* Hard oracle (eq. 2): 1 where the token occurs in the explanation and is not a stop word.
* Expert oracle (eq. 4): the share of N annotators who marked the token (``token_marking`` responses).
* C(x) = arctanh(r(I(x), O(x))) (eq. 5); C_R(x) the same with the oracle built from the
  explanation of a different, randomly chosen example (eq. 6).
* ΔA = tanh(mean(C − C_R)) over the data set, tested with a paired t-test of C against C_R (one-sided:
  ΔA > 0).

A token-marking results page (Prasad et al. 2021 §4) makes two calls: :func:`marking_report` (expert
oracles, top words, Fleiss κ over words) and, with a model, :func:`alignment_report` (ΔA).

Per-example Pearson correlations of all examples come from segment sums (no loop over examples).
The stop words are NLTK's English list, as Prasad et al. 2021 used (kept in :mod:`explain_engine.stopwords`);
``stop_words`` takes another list by name (``"sklearn"``) or as words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import ttest_rel

from explain_engine.metrics.bootstrap import LEVEL, N_BOOT, Estimate, bootstrap
from explain_engine.metrics.ragged import Ragged, as_ragged
from explain_engine.metrics.ratings import marking_agreement
from explain_engine.stopwords import DEFAULT_STOP_WORDS
from explain_engine.stopwords import stop_words as named_stop_words

_WORD = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)
R_CLIP = 1.0 - 1e-7  # |r| is clipped below 1 so that arctanh stays finite (a perfect r gives C ≈ 8.4)


def default_stop_words() -> frozenset[str]:
    """NLTK's English stop words (Prasad et al. 2021's list)."""
    return named_stop_words(DEFAULT_STOP_WORDS)


def resolve_stop_words(stop_words: str | Iterable[str] | None) -> frozenset[str]:
    """A stop-word list given by name (:data:`explain_engine.stopwords.STOP_WORD_LISTS`), as words, or
    ``None`` for the default (NLTK's)."""
    if stop_words is None:
        return default_stop_words()
    if isinstance(stop_words, str):
        return named_stop_words(stop_words)
    return frozenset(w.lower() for w in stop_words)


def _normalise(token: str) -> str:
    m = _WORD.search(token.lower())
    return m.group() if m else ""


def hard_oracle(
    tokens: Sequence[str], explanation: str, stop_words: str | Iterable[str] | None = None
) -> np.ndarray:
    """The NLI importance-alignment paper eq. 2: 1.0 for each input token (lower-cased, punctuation stripped) that occurs among
    the explanation's words and is not a stop word, else 0.0."""
    stops = resolve_stop_words(stop_words)
    words = {w for w in _WORD.findall(explanation.lower()) if w not in stops}
    return np.array([1.0 if (t := _normalise(tok)) and t in words else 0.0 for tok in tokens])


def hard_oracles(
    inputs: Sequence[Sequence[str]],
    explanations: Sequence[str],
    pairing: Sequence[int] | None = None,
    stop_words: str | Iterable[str] | None = None,
) -> Ragged:
    """Hard oracles of many examples: input ``i`` against ``explanations[pairing[i]]`` (default ``i``)."""
    stops = resolve_stop_words(stop_words)
    idx = range(len(inputs)) if pairing is None else pairing
    return Ragged.from_lists([hard_oracle(inputs[i], explanations[j], stops) for i, j in enumerate(idx)])


def expert_oracle(markings: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    """The NLI importance-alignment paper eq. 4: share of the N annotators (rows) who marked each token (columns)."""
    m = np.asarray(markings, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError("markings must be annotators × tokens with at least one annotator")
    return m.mean(axis=0)


def random_derangement(n: int, seed: int | None = 0) -> np.ndarray:
    """A random permutation of ``range(n)`` with no fixed point: example ``i`` gets ``pairing[i] != i``."""
    if n < 2:
        raise ValueError("a random other example needs at least two examples")
    rng = np.random.default_rng(seed)
    while True:
        perm = rng.permutation(n)
        if not (perm == np.arange(n)).any():
            return perm


def fisher_correlations(
    x: Ragged | Sequence[Sequence[float] | np.ndarray], y: Ragged | Sequence[Sequence[float] | np.ndarray]
) -> np.ndarray:
    """Per example arctanh(Pearson r(x, y)); NaN where either vector is constant (r undefined)."""
    a, b = as_ragged(x), as_ragged(y)
    a.same_shape(b, "importance and oracle")
    n = a.lengths.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        da = a.values - (a.sums() / n)[a.segments]
        db = b.values - (a.sums(b.values) / n)[a.segments]
        va, vb = a.sums(da * da), a.sums(db * db)
        r = a.sums(da * db) / np.sqrt(va * vb)
    # a constant vector leaves only rounding noise in its variance: r is undefined there
    degenerate = (va <= 1e-12 * a.sums(a.values * a.values)) | (vb <= 1e-12 * a.sums(b.values * b.values))
    r[degenerate] = np.nan
    return np.arctanh(np.clip(r, -R_CLIP, R_CLIP))


@dataclass(frozen=True)
class AlignmentResult:
    """Per-example C and C_R, ΔA with a bootstrap interval, and the paired t-test."""

    c: np.ndarray
    c_random: np.ndarray
    delta_a: Estimate
    t_statistic: float
    p_value: float

    def to_dict(self) -> dict:
        ok = np.isfinite(self.c) & np.isfinite(self.c_random)
        return {
            "delta_a": self.delta_a.to_dict(),
            "mean_c": float(np.mean(self.c[ok])) if ok.any() else None,
            "mean_c_random": float(np.mean(self.c_random[ok])) if ok.any() else None,
            "t_statistic": None if math.isnan(self.t_statistic) else self.t_statistic,
            "p_value": None if math.isnan(self.p_value) else self.p_value,
            "test": "paired t-test of C against C_R, one-sided (C > C_R)",
        }


def importance_alignment(
    attributions: Ragged | Sequence[Sequence[float] | np.ndarray],
    oracle: Ragged | Sequence[Sequence[float] | np.ndarray],
    random_oracle: Ragged | Sequence[Sequence[float] | np.ndarray],
    absolute: bool = True,
    n_boot: int = N_BOOT,
    level: float = LEVEL,
    seed: int | None = 0,
) -> AlignmentResult:
    """ΔA of the NLI importance-alignment paper (eqs. 5–7) from token attributions (e.g. IG), the oracle of each example's own
    explanation and the oracle of a random other explanation.

    ``absolute``: take |attributions| (eq. 1). Examples where C or C_R is undefined (a constant vector)
    are left out of ΔA and the test and counted in ``delta_a.extra["skipped"]``.
    """
    imp = as_ragged(attributions)
    if absolute:
        imp = imp.with_values(np.abs(imp.values))
    c = fisher_correlations(imp, oracle)
    c_r = fisher_correlations(imp, random_oracle)
    ok = np.isfinite(c) & np.isfinite(c_r)
    diff = (c - c_r)[ok]

    def stat(w: np.ndarray) -> np.ndarray:
        return np.tanh((w @ diff) / w.sum(axis=1))

    extra = {"skipped": int((~ok).sum()), "examples": int(c.shape[0])}
    delta = bootstrap(stat, int(diff.shape[0]), n_boot, level, seed, extra=extra)
    t, p = math.nan, math.nan
    if diff.shape[0] >= 2 and np.ptp(diff) > 0:
        res = ttest_rel(c[ok], c_r[ok], alternative="greater")
        t, p = float(res.statistic), float(res.pvalue)
    return AlignmentResult(c, c_r, delta, t, p)


def marking_alignment(
    words: Sequence[Sequence[str]],
    explanations: Sequence[str],
    markings: Sequence[Sequence[Sequence[int]]],
    attributions: Sequence[Sequence[float]],
    n_boot: int = N_BOOT,
    seed: int | None = 0,
    *,
    random_explanations: Sequence[str] | None = None,
    random_markings: Sequence[Sequence[Sequence[int]]] | None = None,
) -> dict:
    """Importance alignment (§3.3) over examples that have token markings and model attributions.

    For each example ``i``: the expert oracle is the share of annotators who marked each word (eq. 4);
    the hard oracle is the overlap of the words with its explanation (eq. 2). The random baseline C_R
    (eq. 6) of every oracle is the *same* oracle of input ``i`` paired with the explanation of a random
    other example: ``random_explanations[i]`` (default: a seeded derangement of ``explanations``) for
    the hard oracle, and for the expert oracle the marks annotators made on input ``i`` shown with that
    explanation (``random_markings[i]``, e.g. the control items of a token-marking study). Without
    ``random_markings`` the expert oracle has no C_R: ``expert`` is ``None`` and ``expert_unavailable``
    says why (another oracle's C_R is never put in its place). ΔA = tanh(mean(C − C_R)) with a paired
    t-test (eq. 7).

    Returns ``{"expert", "hard", "pairing", "examples": [{"c_expert", "c_random_expert", "c_hard",
    "c_random_hard"}]}`` with each oracle's :meth:`AlignmentResult.to_dict`; ``pairing`` is the
    derangement's partner indices, ``None`` when ``random_explanations`` were given.
    """
    n = len(words)
    if not (n == len(explanations) == len(markings) == len(attributions)):
        raise ValueError("words, explanations, markings and attributions need one entry per example")
    for name, values in (("random_explanations", random_explanations), ("random_markings", random_markings)):
        if values is not None and len(values) != n:
            raise ValueError(f"{name} needs one entry per example")
    if random_markings is not None and random_explanations is None:
        raise ValueError("random_markings need the random_explanations they were made against")
    for i in range(n):
        if len(attributions[i]) != len(words[i]) or np.asarray(markings[i]).shape[-1] != len(words[i]):
            raise ValueError(f"example {i}: attributions and markings need one value per word")
        if random_markings is not None and (
            len(random_markings[i]) == 0 or np.asarray(random_markings[i]).shape[-1] != len(words[i])
        ):
            raise ValueError(f"example {i}: random_markings need at least one map of one value per word")
    pairing = None
    if random_explanations is None:
        pairing = random_derangement(n, seed=seed)
        random_explanations = [explanations[j] for j in pairing]
    attr = [np.asarray(a, dtype=np.float64) for a in attributions]
    hard = [hard_oracle(words[i], explanations[i]) for i in range(n)]
    hard_random = [hard_oracle(words[i], random_explanations[i]) for i in range(n)]
    by_hard = importance_alignment(attr, hard, hard_random, n_boot=n_boot, seed=seed)
    out: dict = {"hard": by_hard.to_dict(), "pairing": None if pairing is None else pairing.tolist()}
    by_expert = None
    if random_markings is None:
        out["expert"] = None
        out["expert_unavailable"] = (
            "C_R of the expert oracle needs marks made against a random explanation (control items); "
            "there are none"
        )
    else:
        expert = [expert_oracle(m) for m in markings]
        expert_random = [expert_oracle(m) for m in random_markings]
        by_expert = importance_alignment(attr, expert, expert_random, n_boot=n_boot, seed=seed)
        out["expert"] = by_expert.to_dict()
    out["examples"] = [
        {
            "c_expert": None if by_expert is None else _finite(by_expert.c[i]),
            "c_random_expert": None if by_expert is None else _finite(by_expert.c_random[i]),
            "c_hard": _finite(by_hard.c[i]),
            "c_random_hard": _finite(by_hard.c_random[i]),
        }
        for i in range(n)
    ]
    return out


def _finite(value) -> float | None:
    """A finite float, or ``None`` (NaN and infinities are not JSON)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def gold_attributions(example_id: str, attributions, label) -> np.ndarray:
    """The attributions of an example with respect to its gold ``label`` (Prasad et al. 2021 eq. 1):
    ``attributions`` is one list per word, or ``{target: list}`` by target. A dict without the gold label
    is an error that names the example (another target's attributions are never used in its place)."""
    if isinstance(attributions, dict):
        if str(label) not in {str(k) for k in attributions}:
            raise ValueError(
                f"example {example_id!r}: no attributions for its gold label {label!r} "
                f"(targets present: {sorted(map(str, attributions))})"
            )
        attributions = next(v for k, v in attributions.items() if str(k) == str(label))
    try:
        values = np.asarray(attributions, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"example {example_id!r}: attributions must be numbers, one per word") from None
    if values.ndim != 1:
        raise ValueError(f"example {example_id!r}: attributions must be one number per word")
    return values


def oracle_alignments(
    attributions: Sequence[Sequence[float]],
    oracles: dict[str, tuple[Sequence[Sequence[float]], Sequence[Sequence[float]]]],
    n_boot: int = N_BOOT,
    seed: int | None = 0,
) -> dict[str, AlignmentResult]:
    """ΔA per oracle (eqs. 5–7): ``oracles[name] = (oracle of each example's own explanation, the SAME
    oracle of its random explanation)``, so that C_R of every oracle comes from that oracle."""
    attr = [np.asarray(a, dtype=np.float64) for a in attributions]
    out = {}
    for name, (own, random_) in oracles.items():
        if not (len(own) == len(random_) == len(attr)):
            raise ValueError(f"oracle {name!r}: one own and one random oracle per example")
        out[name] = importance_alignment(attr, own, random_, n_boot=n_boot, seed=seed)
    return out


def marking_report(
    words: Sequence[Sequence[str]],
    markings: Sequence[Sequence[Sequence[int]]],
    n_boot: int = N_BOOT,
    top: int = 5,
) -> dict:
    """Per example its expert oracle (eq. 4, rounded to 6 places; None without markings) and its ``top``
    words by the share of annotators who marked them, and the Fleiss κ over words of the examples marked
    by at least two annotators (``agreement``: ``{"fleiss_kappa", "items"}``, None without such an
    example). ``words``: per example its words; ``markings``: per example, annotators × words 0/1."""
    examples: list[dict[str, Any]] = []
    for example_words, marked in zip(words, markings, strict=True):
        if not len(marked):
            examples.append({"oracle": None, "top_words": []})
            continue
        oracle = expert_oracle(marked)
        order = np.argsort(-oracle, kind="stable")[:top]
        examples.append(
            {
                "oracle": [round(float(v), 6) for v in oracle],
                "top_words": [
                    {"word": example_words[i], "share": round(float(oracle[i]), 3)}
                    for i in order
                    if oracle[i] > 0
                ],
            }
        )
    marked_examples = [m for m in markings if len(m)]
    estimate = marking_agreement(marked_examples, n_boot=n_boot)
    agreement = None
    if estimate is not None:
        agreement = {
            "fleiss_kappa": estimate.to_dict(),
            "items": sum(1 for m in marked_examples if len(m) >= 2),
        }
    return {"examples": examples, "agreement": agreement}


def alignment_report(
    words: Sequence[Sequence[str]],
    explanations: Sequence[str],
    markings: Sequence[Sequence[Sequence[int]]],
    attributions: Sequence[Sequence[float | None]],
    n_boot: int = N_BOOT,
    seed: int | None = 0,
    *,
    random_explanations: Sequence[str] | None = None,
    random_markings: Sequence[Sequence[Sequence[int]]] | None = None,
) -> dict:
    """:func:`marking_alignment` of attributions as stored (a missing or non-finite score counts as 0),
    with ``attributions`` beside it: each example's scores as used, rounded to 6 places."""
    cleaned = [
        np.nan_to_num(np.array([np.nan if v is None else v for v in a], dtype=float)) for a in attributions
    ]
    scored = marking_alignment(
        words,
        explanations,
        markings,
        cleaned,
        n_boot=n_boot,
        seed=seed,
        random_explanations=random_explanations,
        random_markings=random_markings,
    )
    return {**scored, "attributions": [[round(float(v), 6) for v in a] for a in cleaned]}
