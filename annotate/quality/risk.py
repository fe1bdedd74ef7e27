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
    Answers sent without a valid page token (:mod:`annotate.handout.page_tokens`): the client was never
    served that item (the token is bound to the assignment and the moment it was served).
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
(``signals.recovered``, which carries no page evidence). Both fields are the server's alone
(:data:`annotate.handout.page_tokens.SERVER_SIGNALS`): the submission drops them from what the client
sends, so no client-sent field can switch a check off.

What the score cannot see is said on the quality page (its help): a script that asks for items as the page
does, waits as a reader would and sends plausible input counts scores like a person; gold items are the
check it cannot pass.

The maths is the engine's (``explain_engine.api.risk_report``; its weights, thresholds and noisy-OR
are documented there): this module reads each counted answer's timing, page evidence, category,
fixed strategies and gold verdict, and makes one engine call. Each reason ``i`` has a strength ``s_i``
in [0, 1] and a weight ``w_i``; the score is ``1 - prod_i (1 - w_i * s_i)``. A worker is flagged when the score reaches the policy's ``risk_threshold`` (0.5 by default): speed,
missing interaction, a missing page token or failed golds on most answers flag on their own; an answer
pattern (weight under 0.5) flags only with another reason, since an honest worker may meet a skewed
sample. Only answers that count (:meth:`~annotate.models.ResponseQuerySet.counted`) are scored.
"""

from __future__ import annotations

from typing import Any

from annotate.models import Response, Study
from annotate.quality.policy import policy_for
from annotate.tasks import get_kind
from explain_engine.api import RiskReason as Reason
from explain_engine.api import (
    WorkerRisk,
    answer_entropy,
    risk_of,
    risk_report,
    words_per_minute,
    worker_reasons,
)
from explain_engine.api import combine_reasons as combine

__all__ = [
    "INPUT_EVENTS",
    "Reason",
    "WorkerRisk",
    "answer_entropy",
    "combine",
    "interaction_events",
    "risk_of",
    "study_risks",
    "worker_reasons",
    "words_per_minute",
]

#: The page's interaction counts that are real input (``frontend/src/interaction.ts``).
INPUT_EVENTS = ("pointer", "keys", "touches")


def interaction_events(signals: Any) -> int:
    """Real input events (pointer, key, touch) the page counted for one answer; 0 when it sent none."""
    block = signals.get("interaction") if isinstance(signals, dict) else None
    if not isinstance(block, dict):
        return 0
    return sum(
        int(v) for k in INPUT_EVENTS if isinstance(v := block.get(k), int | float) and not isinstance(v, bool)
    )


def _interval_ms(assigned, created) -> float | None:
    if assigned is None or created is None:
        return None
    ms = (created - assigned).total_seconds() * 1000.0
    return ms if ms >= 0 else None


def time_taken_ms(assigned, created, read_ms: int | None, answer_ms: int | None) -> float | None:
    """The server's interval from handing out to receiving, or the client's read + answer time when the
    server's is unknown."""
    server = _interval_ms(assigned, created)
    if server is not None:
        return server
    return None if read_ms is None and answer_ms is None else (read_ms or 0) + (answer_ms or 0)


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
    return risk_report(
        workers=workers,
        words=[kind.reading_words(p) if isinstance(p, dict) else 0 for p in payloads],
        time_ms=[time_taken_ms(*times) for times in zip(assigned, created, read, answer_ms, strict=True)],
        events=[interaction_events(s) for s in signals],
        page=[isinstance(s, dict) and s.get("page") is True for s in signals],
        from_page=[isinstance(s, dict) and "page" in s and not s.get("recovered") for s in signals],
        categories=[kind.agreement_value(a) if isinstance(a, dict) else None for a in answers],
        n_categories=len(kind.categories(study)),
        strategies=[kind.fixed_strategies(study, a) if isinstance(a, dict) else [] for a in answers],
        gold=[
            g if isinstance(g, bool) and gold and not gone else None
            for g, gold, gone in zip(passed, is_gold, retired, strict=True)
        ],
        max_wpm=policy.max_wpm,
        trust_threshold=policy.trust_threshold,
        risk_threshold=policy.risk_threshold,
    )
