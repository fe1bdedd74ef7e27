"""The pre- and post-study questionnaires: a participant's answers read from the form and checked
against the questions (hostile input refused with a message per question), the screening verdict,
storing the answers once, and the summary the results page and the datasheet show."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Protocol

from django.db import IntegrityError, transaction

from annotate.models import Study, SurveyAnswers
from annotate.protocol.config import MAX_TEXT_ANSWER, NUMBER_BOUND

PHASES = {"pre": "pre_survey", "post": "post_survey"}
MAX_FIELD_CHARS = 50  # a choice, a number or a Likert point sent by the form


class FormData(Protocol):
    def get(self, key: str, default: Any = None) -> Any: ...
    def getlist(self, key: str) -> list[Any]: ...


def questions(study: Study, phase: str) -> list[dict[str, Any]]:
    """The questions of ``phase`` (``pre`` or ``post``) of the study's protocol."""
    return list((study.protocol or {}).get(PHASES[phase], []))


def _one(data: FormData, name: str) -> str:
    value = data.get(name, "")
    return value.strip() if isinstance(value, str) else ""


def _answer(question: dict[str, Any], data: FormData) -> tuple[Any, str | None]:
    """``(answer or None, error or None)`` for one question; ``None`` answers an optional question
    left empty."""
    name, kind = question["id"], question["type"]
    if kind == "multiple":
        chosen = [v for v in data.getlist(name) if isinstance(v, str)]
        if len(chosen) > len(question["options"]) or any(v not in question["options"] for v in chosen):
            return None, "choose among the options shown"
        picked = [o for o in question["options"] if o in chosen]
        return (picked or None), None
    raw = _one(data, name)
    if not raw:
        return None, None
    if kind == "single":
        return (raw, None) if raw in question["options"] else (None, "choose one of the options shown")
    if kind == "text":
        limit = min(question.get("max_length", MAX_TEXT_ANSWER), MAX_TEXT_ANSWER)
        if len(raw) > limit:
            return None, f"at most {limit} characters"
        return (None, "remove the NUL character") if "\x00" in raw else (raw, None)
    if len(raw) > MAX_FIELD_CHARS:
        return None, "enter a number"
    if kind == "likert":
        points = question["points"]
        if not raw.isdigit() or not 1 <= int(raw) <= points:
            return None, f"choose a point from 1 to {points}"
        return int(raw), None
    return _number_answer(question, raw)


def _number_answer(question: dict[str, Any], raw: str) -> tuple[Any, str | None]:
    try:
        value = float(raw)
    except ValueError:
        return None, "enter a number"
    if not math.isfinite(value) or abs(value) > NUMBER_BOUND:
        return None, "enter a number"
    if question.get("integer"):
        if value != int(value):
            return None, "enter a whole number"
        value = int(value)
    low, high = question.get("min"), question.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"from {_fmt(low)} to {_fmt(high)}" if low is not None and high is not None else ""
        bounds = bounds or (f"at least {_fmt(low)}" if low is not None else f"at most {_fmt(high)}")
        return None, f"enter a number {bounds}"
    return value, None


def _fmt(value: float | None) -> str:
    return "" if value is None else (str(int(value)) if float(value).is_integer() else str(value))


def read_answers(qs: list[dict[str, Any]], data: FormData) -> tuple[dict[str, Any], dict[str, str]]:
    """The answers to ``qs`` in the posted form ``data``: ``(answers, errors)``, errors keyed by the
    question's id. A required question left empty is an error; other fields of the form are ignored."""
    answers: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for question in qs:
        value, error = _answer(question, data)
        if error is None and value is None and question.get("required"):
            error = "this question needs an answer"
        if error is not None:
            errors[question["id"]] = error
        elif value is not None:
            answers[question["id"]] = value
    return answers, errors


def qualifies(rules: list[dict[str, Any]], answers: dict[str, Any]) -> bool:
    """Whether a participant with the pre-study ``answers`` passes every screening rule: a choice among
    ``accept`` (any of them, for a multiple choice), or a number within ``min``/``max``. An unanswered
    screening question does not qualify."""
    for rule in rules:
        value = answers.get(rule["question"])
        if value is None:
            return False
        if "accept" in rule:
            chosen = value if isinstance(value, list) else [value]
            if not set(chosen) & set(rule["accept"]):
                return False
            continue
        low, high = rule.get("min"), rule.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            return False
    return True


def stored(study: Study, worker_id: int, ref: str, phase: str) -> SurveyAnswers | None:
    return SurveyAnswers.objects.filter(study=study, worker_id=worker_id, ref=ref, phase=phase).first()


def store_answers(
    study: Study, worker_id: int, ref: str, phase: str, answers: dict[str, Any]
) -> SurveyAnswers:
    """Store a participant's answers to ``phase`` once (a second post keeps the first answers), with
    the screening verdict for the pre-study questionnaire."""
    qualified = qualifies(study.protocol.get("screening", []), answers) if phase == "pre" else None
    try:
        with transaction.atomic():
            return SurveyAnswers.objects.create(
                study=study, worker_id=worker_id, ref=ref, phase=phase, answers=answers, qualified=qualified
            )
    except IntegrityError:
        found = stored(study, worker_id, ref, phase)
        assert found is not None
        return found


def summary(study: Study, phase: str, counted_workers: set[int] | None = None) -> list[dict[str, Any]]:
    """Per question of ``phase``: how many answered, and the counts of each choice (choices, Likert
    points) or the mean, lowest and highest (numbers); text answers are counted, not shown. With
    ``counted_workers``, only those workers' answers."""
    rows = SurveyAnswers.objects.filter(study=study, phase=phase)
    if counted_workers is not None:
        rows = rows.filter(worker_id__in=counted_workers)
    all_answers = [r.answers for r in rows]
    out = []
    for question in questions(study, phase):
        values = [a[question["id"]] for a in all_answers if question["id"] in a]
        entry: dict[str, Any] = {"id": question["id"], "prompt": question["prompt"], "type": question["type"]}
        entry["answered"] = len(values)
        if question["type"] in ("single", "multiple"):
            counts = Counter(v for value in values for v in (value if isinstance(value, list) else [value]))
            entry["counts"] = [(o, counts.get(o, 0)) for o in question["options"]]
        elif question["type"] == "likert":
            counts = Counter(values)
            entry["counts"] = [(str(p), counts.get(p, 0)) for p in range(1, question["points"] + 1)]
        elif question["type"] == "number" and values:
            entry.update({"mean": sum(values) / len(values), "min": min(values), "max": max(values)})
        out.append(entry)
    return out
