"""A per-worker risk score: how likely it is that a worker's answers came from a script or from someone
who did not read, with each reason and the figure that shows it.

Unlike the relative signals of :mod:`annotate.quality.signals` (fast against the study's median, which
a study of scripts would set), these are absolute floors and patterns:

``speed``
    Answers read faster than the study's ``max_wpm`` words per minute. The default, 714 wpm, is three
    times the average silent reading rate of adults for non-fiction, 238 wpm (Brysbaert 2019, "How many
    words do we read per minute? A review and meta-analysis of reading rate", J. Memory and Language
    109): nobody reads at that rate, they skim or do not read. The time is the server's own, from
    handing out the item to receiving its answer (the client's timings can be made up; this interval
    cannot be made shorter than it was), the client's read + answer time only when the server's is
    unknown. Items without words are not timed.
``no_interaction``
    Answers with no pointer, key or touch event on the page (the page counts only events the browser
    marks as trusted, i.e. real input: ``frontend/src/interaction.ts``).
``no_page``
    Answers sent without a valid page token (:mod:`annotate.handout.page_tokens`): the client never received
    the task page for this study and worker.
``same_answer``
    Identical answer patterns: the worker's answer categories (the kind's ``agreement_value``) have
    low entropy; the strength is ``1 - H / log2(K)`` for ``K`` categories, shown from 0.5 on.
``fixed_strategy``
    At least 90 % of the answers agree with one fixed strategy of the task kind (always the first
    label, every word highlighted, none: :meth:`~annotate.tasks.base.TaskKind.fixed_strategies`).
``gold``
    Gold items failed, when the worker passes fewer than the policy's trust threshold.

The pattern reasons need :data:`MIN_PATTERN_ANSWERS` answers. ``no_interaction`` and ``no_page`` look
only at answers whose page verdict the server recorded (``signals.page``, written at every submission:
older answers have none) and that were not recovered from a crowd platform's copy
(``signals.recovered``, which carries no page evidence).

Each reason ``i`` has a strength ``s_i`` in [0, 1] (mostly the share of the worker's answers that show
it) and a weight ``w_i`` (:data:`WEIGHTS`: how much the reason alone says); the score combines them as
a noisy-OR, ``1 - prod_i (1 - w_i * s_i)``, so that independent reasons add up without passing 1. A
worker is flagged when the score reaches the policy's ``risk_threshold`` (0.5 by default): speed,
missing interaction, a missing page token or failed golds on most answers flag on their own; an answer
pattern (weight under 0.5) flags only with another reason, since an honest worker may meet a skewed
sample. Only answers that count (:meth:`~annotate.models.ResponseQuerySet.counted`) are scored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotate.models import Response, Study
from annotate.quality.policy import policy_for
from annotate.tasks import get_kind

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
#: The page's interaction counts that are real input (``frontend/src/interaction.ts``).
INPUT_EVENTS = ("pointer", "keys", "touches")


@dataclass(frozen=True)
class Reason:
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


# --------------------------------------------------------------------------- pure functions


def words_per_minute(words: np.ndarray, time_ms: np.ndarray) -> np.ndarray:
    """Reading rate of each answer; NaN where the item has no words or the time is unknown or zero
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


def interaction_events(signals: Any) -> int:
    """Real input events (pointer, key, touch) the page counted for one answer; 0 when it sent none."""
    block = signals.get("interaction") if isinstance(signals, dict) else None
    if not isinstance(block, dict):
        return 0
    return sum(
        int(v) for k in INPUT_EVENTS if isinstance(v := block.get(k), int | float) and not isinstance(v, bool)
    )


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
    show page evidence: a verdict was recorded and the answer was not recovered), ``categories``
    (answer category or None), ``strategies`` (fixed strategies each answer agrees with), ``gold`` (1
    passed, 0 failed, NaN: not a graded gold)."""
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
    checked = from_page.astype(bool)
    m = int(checked.sum())
    if m:
        quiet = int((checked & (events == 0)).sum())
        if quiet:
            reasons.append(
                Reason("no_interaction", quiet / m, f"{_of(quiet, m)} with no pointer, key or touch event")
            )
        missing = int((checked & ~page.astype(bool)).sum())
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


# --------------------------------------------------------------------------- from the database


def _interval_ms(assigned, created) -> float:
    if assigned is None or created is None:
        return float("nan")
    ms = (created - assigned).total_seconds() * 1000.0
    return ms if ms >= 0 else float("nan")


def study_risks(study: Study) -> dict[int, WorkerRisk]:
    """``{worker_id: WorkerRisk}`` for every worker with counted answers in ``study``."""
    policy = policy_for(study)
    kind = get_kind(study.kind)
    rows = list(
        Response.objects.filter(study=study)
        .counted()
        .order_by("worker_id", "id")
        .values_list(
            "worker_id",
            "item__payload",
            "item__is_gold",
            "item__retired",
            "assignment__assigned_at",
            "created",
            "read_ms",
            "answer_ms",
            "signals",
            "answer",
            "gold_passed",
        )
    )
    if not rows:
        return {}
    workers, payloads, is_gold, retired, assigned, created, read, answer_ms, signals, answers, passed = zip(
        *rows, strict=True
    )
    words = np.array([kind.reading_words(p) if isinstance(p, dict) else 0 for p in payloads], dtype=float)
    server = np.array([_interval_ms(a, c) for a, c in zip(assigned, created, strict=True)])
    client = np.array(
        [
            np.nan if r is None and a is None else (r or 0) + (a or 0)
            for r, a in zip(read, answer_ms, strict=True)
        ]
    )
    wpm = words_per_minute(words, np.where(np.isnan(server), client, server))
    events = np.array([interaction_events(s) for s in signals])
    page = np.array([isinstance(s, dict) and s.get("page") is True for s in signals])
    from_page = np.array([isinstance(s, dict) and "page" in s and not s.get("recovered") for s in signals])
    categories = [kind.agreement_value(a) if isinstance(a, dict) else None for a in answers]
    strategies = [kind.fixed_strategies(study, a) if isinstance(a, dict) else [] for a in answers]
    gold = np.array([1.0 if g is True else 0.0 if g is False else np.nan for g in passed])
    gold[~(np.array(is_gold, dtype=bool) & ~np.array(retired, dtype=bool))] = np.nan
    n_categories = len(kind.categories(study))
    worker_ids = np.array(workers)
    out: dict[int, WorkerRisk] = {}
    for worker in np.unique(worker_ids):
        idx = np.flatnonzero(worker_ids == worker)
        reasons = worker_reasons(
            wpm=wpm[idx],
            max_wpm=policy.max_wpm,
            events=events[idx],
            page=page[idx],
            from_page=from_page[idx],
            categories=[categories[i] for i in idx],
            n_categories=n_categories,
            strategies=[strategies[i] for i in idx],
            gold=gold[idx],
            trust_threshold=policy.trust_threshold,
        )
        out[int(worker)] = risk_of(int(worker), len(idx), reasons, policy.risk_threshold)
    return out
