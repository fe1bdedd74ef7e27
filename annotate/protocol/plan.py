"""The time the protocol adds to each participant's session, for the study plan: the consent read at a
steady reading pace, and each question at a fixed time by type (a choice or a number is quick; free
text takes longer)."""

from __future__ import annotations

from typing import Any

#: Words of consent text read per minute (a careful reading pace of adults, about 200 wpm).
READING_WPM = 200
#: Seconds per question, by type.
QUESTION_S = {"single": 8, "multiple": 10, "likert": 8, "number": 8, "text": 30}


def added_seconds(protocol: dict[str, Any]) -> dict[str, int]:
    """Seconds the protocol adds per participant: ``consent``, ``pre_survey``, ``post_survey``, ``total``."""
    words = len(str(protocol.get("consent", "")).split())
    parts = {
        "consent": round(words / READING_WPM * 60) + (10 if words else 0),
        "pre_survey": sum(QUESTION_S.get(q.get("type"), 10) for q in protocol.get("pre_survey", [])),
        "post_survey": sum(QUESTION_S.get(q.get("type"), 10) for q in protocol.get("post_survey", [])),
    }
    return {**parts, "total": sum(parts.values())}
