"""Crowd-worker quality from behaviour: a per-worker risk score with its reasons, and the speed signals of
single answers.

The risk score tells how likely it is that a worker's answers came from a script or from someone who
did not read. Its reasons are absolute floors and patterns (unlike :func:`fast_mask`, relative to the
study's median, which a study of scripts would set):

``speed``
    Answers read faster than ``max_wpm`` words per minute. The web app's default, 714 wpm, is three
    times the average silent reading rate of adults for non-fiction, :data:`SILENT_READING_WPM` = 238
    wpm (Brysbaert 2019, "How many words do we read per minute? A review and meta-analysis of reading
    rate", J. Memory and Language 109): nobody reads at that rate, they skim or do not read.
``no_interaction`` / ``no_page``
    Answers with no real input event on the page / sent without the task page's token, among the
    answers that can show such evidence.
``same_answer``
    Identical answer patterns: the answer categories have low entropy; the strength is ``1 - H /
    log2(K)`` for ``K`` categories, shown from :data:`SAME_ANSWER_STRENGTH` on.
``fixed_strategy``
    At least :data:`FIXED_SHARE` of the answers agree with one fixed strategy of the task (always the
    first label, every word highlighted, none).
``gold``
    Gold items failed, when the worker passes fewer than the trust threshold (the 70 % rule of Pappas
    & Popescu-Belis 2016 §3 and Lertvittayakumjorn & Toni 2019 §5).

The pattern reasons need :data:`MIN_PATTERN_ANSWERS` answers. Each reason ``i`` has a strength ``s_i``
in [0, 1] (mostly the share of the worker's answers that show it) and a weight ``w_i`` (:data:`WEIGHTS`:
how much the reason alone says); the score is their noisy-OR, ``1 - prod_i (1 - w_i * s_i)``, so that
independent reasons add up without passing 1. Speed, missing interaction, a missing page token or
failed golds on most answers reach 0.5 on their own; an answer pattern (weight under 0.5) only with
another reason, since an honest worker may meet a skewed sample.

Speed per answer (:func:`signal_report`) is time per word of the item's text, since a text of 100 words
takes longer than one of 50 (Sen et al. 2020 §3 reports about 44 s for 50 words and 70 s for 100); an
answer is *fast* when it took less than ``fast_ratio`` times the study's median time per word.

:func:`risk_report` and :func:`signal_report` are the reports: plain per-answer lists in, plain data out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Brysbaert 2019: average silent reading rate of English non-fiction, words per minute.
SILENT_READING_WPM = 238.0
#: How much each reason alone says (the weights of the noisy-OR).
WEIGHTS = {
    "speed": 0.8,
    "no_interaction": 0.7,
    "no_page": 0.7,
    "gold": 0.6,
    "fixed_strategy": 0.45,
    "same_answer": 0.4,
}
MIN_PATTERN_ANSWERS = 5
FIXED_SHARE = 0.9
SAME_ANSWER_STRENGTH = 0.5


@dataclass(frozen=True)
class Reason:
    """One reason of a worker's risk: its code (a key of :data:`WEIGHTS`), strength and evidence in words."""

    code: str
    strength: float
    evidence: str

    @property
    def weight(self) -> float:
        return WEIGHTS[self.code]

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "strength": round(self.strength, 3), "evidence": self.evidence}


@dataclass(frozen=True)
class WorkerRisk:
    """A worker's risk: the answers scored, the score, whether it reaches the threshold, and the reasons."""

    worker_id: int
    answers: int
    score: float
    flagged: bool
    reasons: list[Reason] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "answers": self.answers,
            "score": round(self.score, 3),
            "flagged": self.flagged,
            "reasons": [r.as_dict() for r in self.reasons],
        }


def words_per_minute(words: np.ndarray, time_ms: np.ndarray) -> np.ndarray:
    """Reading rate of each answer; NaN where the item has no words or the time is unknown or negative
    (a zero time with words is infinitely fast: ``inf``)."""
    words = np.asarray(words, dtype=float)
    time_ms = np.asarray(time_ms, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        wpm = words * 60_000.0 / time_ms
    return np.where((words > 0) & ~np.isnan(time_ms) & (time_ms >= 0), wpm, np.nan)


def combine(weights: np.ndarray, strengths: np.ndarray) -> float:
    """The noisy-OR of the reasons: ``1 - prod(1 - w * s)`` with strengths clipped to [0, 1]."""
    w = np.asarray(weights, dtype=float)
    s = np.clip(np.asarray(strengths, dtype=float), 0.0, 1.0)
    return float(1.0 - np.prod(1.0 - w * s)) if w.size else 0.0


def answer_entropy(codes: np.ndarray, n_categories: int) -> float:
    """Entropy of the answer categories ``codes`` (integers) in bits, over ``log2(n_categories)``: 0 for
    one answer throughout, 1 for all categories equally often. NaN with fewer than two categories."""
    codes = np.asarray(codes)
    if n_categories < 2 or codes.size == 0:
        return float("nan")
    p = np.bincount(codes, minlength=n_categories) / codes.size
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum() / np.log2(n_categories))


def _of(k: int, n: int) -> str:
    return f"{k} of {n} answers"


def worker_reasons(
    *,
    wpm: np.ndarray,
    max_wpm: float,
    events: np.ndarray,
    page: np.ndarray,
    from_page: np.ndarray,
    categories: Sequence[Any],
    n_categories: int,
    strategies: Sequence[Sequence[str]],
    gold: np.ndarray,
    trust_threshold: float,
) -> list[Reason]:
    """The reasons one worker's answers show. Arrays have one entry per answer: ``wpm`` (NaN: not timed),
    ``events`` (input events), ``page`` (a valid page token came), ``from_page`` (whether the answer can
    show page evidence), ``categories`` (answer category or None), ``strategies`` (fixed strategies each
    answer agrees with), ``gold`` (1 passed, 0 failed, NaN: not a graded gold)."""
    wpm = np.asarray(wpm, dtype=float)
    events = np.asarray(events)
    gold = np.asarray(gold, dtype=float)
    n = len(events)
    reasons: list[Reason] = []
    timed = ~np.isnan(wpm)
    fast = timed & (np.nan_to_num(wpm, nan=0.0) > max_wpm)
    if fast.any():
        k = int(fast.sum())
        floor_s = 100 * 60 / max_wpm
        median = float(np.median(wpm[fast]))
        rate = "no measurable time" if np.isinf(median) else f"median {median:,.0f} wpm"
        reasons.append(
            Reason(
                "speed",
                k / int(timed.sum()),
                f"{_of(k, int(timed.sum()))} faster than {max_wpm:,.0f} words per minute "
                f"(under {floor_s:.1f} s per 100 words; {rate})",
            )
        )
    checked = np.asarray(from_page).astype(bool)
    m = int(checked.sum())
    if m:
        quiet = int((checked & (events == 0)).sum())
        if quiet:
            reasons.append(
                Reason("no_interaction", quiet / m, f"{_of(quiet, m)} with no pointer, key or touch event")
            )
        missing = int((checked & ~np.asarray(page).astype(bool)).sum())
        if missing:
            reasons.append(
                Reason("no_page", missing / m, f"{_of(missing, m)} sent without the task page's token")
            )
    known = [c for c in categories if c is not None]
    if len(known) >= MIN_PATTERN_ANSWERS and n_categories >= 2:
        values, codes = np.unique(np.array([str(c) for c in known]), return_inverse=True)
        entropy = answer_entropy(codes, max(n_categories, len(values)))
        strength = 1.0 - entropy
        if strength >= SAME_ANSWER_STRENGTH:
            top = Counter(str(c) for c in known).most_common(1)[0]
            reasons.append(
                Reason(
                    "same_answer",
                    strength,
                    f"{top[1]} of {len(known)} answers are {top[0]!r} "
                    f"(answer entropy {entropy:.2f} of the most possible)",
                )
            )
    if n >= MIN_PATTERN_ANSWERS:
        counts = Counter(name for names in strategies for name in set(names))
        if counts:
            name, k = counts.most_common(1)[0]
            if k / n >= FIXED_SHARE:
                reasons.append(Reason("fixed_strategy", k / n, f"{_of(k, n)} agree with '{name}'"))
    graded = ~np.isnan(gold)
    seen = int(graded.sum())
    if seen:
        failed = int((graded & (gold == 0)).sum())
        if failed and (seen - failed) / seen < trust_threshold:
            reasons.append(Reason("gold", failed / seen, f"{failed} of {seen} gold items failed"))
    return reasons


def risk_of(worker_id: int, answers: int, reasons: list[Reason], threshold: float) -> WorkerRisk:
    """The worker's score (:func:`combine` over ``reasons``) and whether it reaches ``threshold``."""
    score = combine(np.array([r.weight for r in reasons]), np.array([r.strength for r in reasons]))
    return WorkerRisk(worker_id, answers, score, score >= threshold, reasons)


def _floats(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def risk_report(
    *,
    workers: Sequence[int],
    words: Sequence[float],
    time_ms: Sequence[float | None],
    events: Sequence[int],
    page: Sequence[bool],
    from_page: Sequence[bool],
    categories: Sequence[Any],
    n_categories: int,
    strategies: Sequence[Sequence[str]],
    gold: Sequence[bool | None],
    max_wpm: float,
    trust_threshold: float,
    risk_threshold: float,
) -> dict[int, WorkerRisk]:
    """``{worker: WorkerRisk}`` from one entry per answer: the answering ``workers``, the item's reading
    ``words`` (0: not timed), ``time_ms`` (None: unknown), real input ``events``, whether a valid
    ``page`` token came and whether the answer can show page evidence (``from_page``), the answer
    category (None: none), the fixed ``strategies`` it agrees with, and ``gold`` (True passed, False
    failed, None: not a graded gold). A worker is flagged when the score reaches ``risk_threshold``."""
    wpm = words_per_minute(np.asarray(words, dtype=float), _floats(time_ms))
    events_ = np.asarray(events, dtype=float)
    page_ = np.asarray(page, dtype=bool)
    from_page_ = np.asarray(from_page, dtype=bool)
    gold_ = np.array([np.nan if g is None else float(bool(g)) for g in gold], dtype=float)
    worker_ids = np.asarray(workers)
    out: dict[int, WorkerRisk] = {}
    for worker in np.unique(worker_ids):
        idx = np.flatnonzero(worker_ids == worker)
        reasons = worker_reasons(
            wpm=wpm[idx],
            max_wpm=max_wpm,
            events=events_[idx],
            page=page_[idx],
            from_page=from_page_[idx],
            categories=[categories[int(i)] for i in idx],
            n_categories=n_categories,
            strategies=[strategies[int(i)] for i in idx],
            gold=gold_[idx],
            trust_threshold=trust_threshold,
        )
        out[int(worker)] = risk_of(int(worker), len(idx), reasons, risk_threshold)
    return out


def fast_mask(ms_per_word: np.ndarray, ratio: float) -> tuple[np.ndarray, float]:
    """Which values lie under ``ratio`` times their median (NaN values are never fast), and the median."""
    ms_per_word = np.asarray(ms_per_word, dtype=float)
    valid = ~np.isnan(ms_per_word)
    if not valid.any():
        return np.zeros(ms_per_word.shape, dtype=bool), float("nan")
    median = float(np.median(ms_per_word[valid]))
    return valid & (np.nan_to_num(ms_per_word, nan=np.inf) < ratio * median), median


def signal_report(
    *,
    workers: Sequence[int],
    read_ms: Sequence[float | None],
    answer_ms: Sequence[float | None],
    words: Sequence[int],
    fast_ratio: float,
) -> dict[str, Any]:
    """Speed signals from one entry per answer: ``{"answers": [{time_ms, ms_per_word, fast}, ...],
    "workers": {worker: {responses, median_time_ms, fast}}}``. Time on task is reading plus answering
    time (None when both are unknown); ``ms_per_word`` is rounded to 0.1 ms."""
    read = _floats(read_ms)
    answer = _floats(answer_ms)
    both_unknown = np.isnan(read) & np.isnan(answer)
    time_ms = np.where(both_unknown, np.nan, np.nansum([read, answer], axis=0)) if len(read) else read
    per_word = time_ms / np.asarray(words, dtype=float) if len(read) else read
    fast, _ = fast_mask(per_word, fast_ratio)
    answers = [
        {
            "time_ms": None if np.isnan(time_ms[i]) else int(time_ms[i]),
            "ms_per_word": None if np.isnan(per_word[i]) else round(float(per_word[i]), 1),
            "fast": bool(fast[i]),
        }
        for i in range(len(time_ms))
    ]
    by_worker: dict[int, list[dict[str, Any]]] = {}
    for worker, row in zip(workers, answers, strict=True):
        by_worker.setdefault(worker, []).append(row)
    summary = {}
    for worker, mine in by_worker.items():
        times = [r["time_ms"] for r in mine if r["time_ms"] is not None]
        summary[worker] = {
            "responses": len(mine),
            "median_time_ms": int(np.median(times)) if times else None,
            "fast": sum(r["fast"] for r in mine),
        }
    return {"answers": answers, "workers": summary}
