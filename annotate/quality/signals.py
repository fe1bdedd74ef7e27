"""Behaviour signals per response, for the admin's eye: time on task, focus changes, pastes, and
answers much faster than the study's median.

Time on task is reading plus answering time. Speed is compared per word of the item's text (an answer
to a 100-word text may take twice as long as one to a 50-word text: Sen et al. 2020 reports about 44 s for 50
words and 70 s for 100), and an answer is *fast* when it took less than ``fast_ratio`` (default one
third) of the study's median time per word. Focus changes count the page losing focus or being hidden
(``blurs`` + ``hides`` from the annotator page), pastes count paste events. The statistics are the
engine's (``explain_engine.api.signal_report``); this module reads the answers and counts their events.
"""

from __future__ import annotations

from typing import Any

from annotate.models import Item, Response, Study
from annotate.quality.policy import policy_for
from explain_engine.api import fast_mask, signal_report

__all__ = ["fast_mask", "response_signals", "worker_signals"]


def _count(signals: Any, *keys: str) -> int:
    if not isinstance(signals, dict):
        return 0
    return sum(
        int(v) for k in keys if isinstance(v := signals.get(k), int | float) and not isinstance(v, bool)
    )


def _signals(study: Study) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    words = {
        pk: max(1, len(payload.get("words", ()))) if isinstance(payload, dict) else 1
        for pk, payload in Item.objects.filter(study=study)
        .values_list("id", "payload")
        .iterator(chunk_size=2000)
    }
    rows = list(
        Response.objects.filter(study=study)
        .counted()
        .order_by("id")
        .values_list("id", "worker_id", "item_id", "read_ms", "answer_ms", "signals")
    )
    if not rows:
        return [], {}
    ids, workers, items, read, answer, signals = zip(*rows, strict=True)
    n_words = [words.get(i, 1) for i in items]
    report = signal_report(
        workers=workers,
        read_ms=read,
        answer_ms=answer,
        words=n_words,
        fast_ratio=policy_for(study).fast_ratio,
    )
    out = [
        {
            "response": ids[i],
            "worker": workers[i],
            "item": items[i],
            "time_ms": speed["time_ms"],
            "words": n_words[i],
            "ms_per_word": speed["ms_per_word"],
            "focus_changes": _count(signals[i], "blurs", "hides", "focus_changes"),
            "pastes": _count(signals[i], "pastes"),
            "fast": speed["fast"],
        }
        for i, speed in enumerate(report["answers"])
    ]
    return out, report["workers"]


def response_signals(study: Study) -> list[dict[str, Any]]:
    """One row per response: ``response``, ``worker``, ``item``, ``time_ms``, ``words``, ``ms_per_word``,
    ``focus_changes``, ``pastes``, ``fast``."""
    return _signals(study)[0]


def worker_signals(study: Study) -> dict[int, dict[str, Any]]:
    """Per worker: ``responses``, ``median_time_ms``, ``fast`` answers, ``focus_changes``, ``pastes``."""
    rows, summary = _signals(study)
    out = {worker: {**stats, "focus_changes": 0, "pastes": 0} for worker, stats in summary.items()}
    for row in rows:
        out[row["worker"]]["focus_changes"] += row["focus_changes"]
        out[row["worker"]]["pastes"] += row["pastes"]
    return out
