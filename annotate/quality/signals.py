"""Behaviour signals per response, for the admin's eye: time on task, focus changes, pastes, and
answers much faster than the study's median.

Time on task is reading plus answering time. Speed is compared per word of the item's text (an answer
to a 100-word text may take twice as long as one to a 50-word text: Sen et al. 2020 reports about 44 s for 50
words and 70 s for 100), and an answer is *fast* when it took less than ``fast_ratio`` (default one
third) of the study's median time per word. Focus changes count the page losing focus or being hidden
(``blurs`` + ``hides`` from the annotator page), pastes count paste events.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotate.models import Item, Response, Study
from annotate.quality.policy import policy_for


def _count(signals: Any, *keys: str) -> int:
    if not isinstance(signals, dict):
        return 0
    return sum(
        int(v) for k in keys if isinstance(v := signals.get(k), int | float) and not isinstance(v, bool)
    )


def fast_mask(ms_per_word: np.ndarray, ratio: float) -> tuple[np.ndarray, float]:
    """Which values lie under ``ratio`` times their median (NaN values are never fast), and the median."""
    valid = ~np.isnan(ms_per_word)
    if not valid.any():
        return np.zeros(ms_per_word.shape, dtype=bool), float("nan")
    median = float(np.median(ms_per_word[valid]))
    return valid & (np.nan_to_num(ms_per_word, nan=np.inf) < ratio * median), median


def response_signals(study: Study) -> list[dict[str, Any]]:
    """One row per response: ``response``, ``worker``, ``item``, ``time_ms``, ``words``, ``ms_per_word``,
    ``focus_changes``, ``pastes``, ``fast``."""
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
        return []
    ids, workers, items, read, answer, signals = zip(*rows, strict=True)
    read_ms = np.array([np.nan if v is None else v for v in read], dtype=float)
    answer_ms = np.array([np.nan if v is None else v for v in answer], dtype=float)
    time_ms = np.where(
        np.isnan(read_ms) & np.isnan(answer_ms), np.nan, np.nansum([read_ms, answer_ms], axis=0)
    )
    n_words = np.array([words.get(i, 1) for i in items], dtype=float)
    per_word = time_ms / n_words
    fast, _ = fast_mask(per_word, policy_for(study).fast_ratio)
    return [
        {
            "response": ids[i],
            "worker": workers[i],
            "item": items[i],
            "time_ms": None if np.isnan(time_ms[i]) else int(time_ms[i]),
            "words": int(n_words[i]),
            "ms_per_word": None if np.isnan(per_word[i]) else round(float(per_word[i]), 1),
            "focus_changes": _count(signals[i], "blurs", "hides", "focus_changes"),
            "pastes": _count(signals[i], "pastes"),
            "fast": bool(fast[i]),
        }
        for i in range(len(ids))
    ]


def worker_signals(study: Study) -> dict[int, dict[str, Any]]:
    """Per worker: ``responses``, ``median_time_ms``, ``fast`` answers, ``focus_changes``, ``pastes``."""
    out: dict[int, dict[str, Any]] = {}
    rows = response_signals(study)
    by_worker: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_worker.setdefault(row["worker"], []).append(row)
    for worker, mine in by_worker.items():
        times = [r["time_ms"] for r in mine if r["time_ms"] is not None]
        out[worker] = {
            "responses": len(mine),
            "median_time_ms": int(np.median(times)) if times else None,
            "fast": sum(r["fast"] for r in mine),
            "focus_changes": sum(r["focus_changes"] for r in mine),
            "pastes": sum(r["pastes"] for r in mine),
        }
    return out
