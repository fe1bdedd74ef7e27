"""The protocol part of a study's settings (``Study.protocol``), validated like the rest of a study:
a plain JSON object, checked field by field, refused with messages naming the field.

Shape (every key optional)::

    {"consent": "Markdown text",
     "pre_survey": [question, ...], "post_survey": [question, ...],
     "screening": [{"question": "id", "accept": ["option", ...]} | {"question": "id", "min": 1, "max": 5}],
     "training": {"items": [{"document": "r1", "explanation": "Why the answer is so"}],
                  "pass_mark": 0.5, "tries": 2},
     "skip_reasons": ["I can't judge this", "The text is broken"], "max_skips": 3,
     "back": true}

A question is ``{"id", "type", "prompt", "required"}`` plus what its type needs: ``single`` and
``multiple`` (``options``), ``likert`` (``points`` 2–11 and optional end ``labels``), ``text``
(``max_length``) and ``number`` (``min``, ``max``, ``integer``). Screening rules read the answers
of the pre-study questionnaire: a participant qualifies when every rule holds. Training items name
documents of the study's dataset that carry a gold answer in the kind's gold format; a participant
passes when the share of training items answered right in one attempt reaches ``pass_mark``, in at
most ``tries`` attempts.
"""

from __future__ import annotations

import math
import re
from typing import Any

QUESTION_TYPES = ("single", "multiple", "likert", "text", "number")
SURVEYS = ("pre_survey", "post_survey")
KEYS = ("consent", *SURVEYS, "screening", "training", "attention", "skip_reasons", "max_skips", "back")
MAX_CONSENT_CHARS = 20_000
MAX_QUESTIONS = 30
MAX_OPTIONS = 20
MAX_PROMPT_CHARS = 500
MAX_OPTION_CHARS = 200
MAX_TEXT_ANSWER = 2000
MAX_SKIP_REASONS = 10
MAX_TRAINING_ITEMS = 20
MAX_EXPLANATION_CHARS = 2000
MAX_TRIES = 10
NUMBER_BOUND = 1e12
_ID = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class ProtocolInvalid(ValueError):
    """The protocol refused: ``errors`` maps dotted field names (``pre_survey.0.options``) to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


class _Errors:
    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}

    def add(self, field: str, message: str) -> None:
        self.found.setdefault(field, []).append(message)


def _text(value: Any, field: str, errors: _Errors, limit: int, *, blank: bool = False) -> str:
    if not isinstance(value, str):
        errors.add(field, "must be text")
        return ""
    value = value.strip()
    if not value and not blank:
        errors.add(field, "must not be empty")
    if len(value) > limit:
        errors.add(field, f"at most {limit} characters")
    if "\x00" in value:
        errors.add(field, "must not contain NUL characters")
    return value


def _number(value: Any, field: str, errors: _Errors) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or abs(value) > NUMBER_BOUND:
        errors.add(field, f"must be a number between -{NUMBER_BOUND:.0e} and {NUMBER_BOUND:.0e}")
        return None
    return value


def _options(value: Any, field: str, errors: _Errors) -> list[str]:
    if not isinstance(value, list) or not 2 <= len(value) <= MAX_OPTIONS:
        errors.add(field, f"must be a list of 2 to {MAX_OPTIONS} options")
        return []
    options = [_text(v, f"{field}.{i}", errors, MAX_OPTION_CHARS) for i, v in enumerate(value)]
    if len(set(options)) != len(options):
        errors.add(field, "each option must be different")
    return options


def _question(raw: Any, field: str, errors: _Errors) -> dict[str, Any]:
    """One question, cleaned (see the module docstring for its shape)."""
    if not isinstance(raw, dict):
        errors.add(field, "must be an object with id, type and prompt")
        return {}
    unknown = (
        set(raw)
        - {"id", "type", "prompt", "required", "options", "points", "labels"}
        - {
            "max_length",
            "min",
            "max",
            "integer",
        }
    )
    for key in sorted(unknown):
        errors.add(f"{field}.{key}", "is not a question setting")
    qid = raw.get("id")
    if not isinstance(qid, str) or not _ID.match(qid):
        errors.add(f"{field}.id", "must be a short name: a lowercase letter, then letters, digits or _")
    kind = raw.get("type")
    if kind not in QUESTION_TYPES:
        errors.add(f"{field}.type", f"must be one of {', '.join(QUESTION_TYPES)}")
    required = raw.get("required", True)
    if type(required) is not bool:
        errors.add(f"{field}.required", "must be true or false")
    question: dict[str, Any] = {
        "id": qid,
        "type": kind,
        "prompt": _text(raw.get("prompt"), f"{field}.prompt", errors, MAX_PROMPT_CHARS),
        "required": required is True,
    }
    if kind in ("single", "multiple"):
        question["options"] = _options(raw.get("options"), f"{field}.options", errors)
    elif kind == "likert":
        points = raw.get("points", 5)
        if type(points) is not int or not 2 <= points <= 11:
            errors.add(f"{field}.points", "must be a whole number from 2 to 11")
        question["points"] = points
        labels = raw.get("labels", [])
        if not isinstance(labels, list) or len(labels) not in (0, 2):
            errors.add(f"{field}.labels", "must be two labels: the lowest and the highest point")
            labels = []
        question["labels"] = [_text(v, f"{field}.labels.{i}", errors, 100) for i, v in enumerate(labels)]
    elif kind == "text":
        limit = raw.get("max_length", 500)
        if type(limit) is not int or not 1 <= limit <= MAX_TEXT_ANSWER:
            errors.add(f"{field}.max_length", f"must be a whole number from 1 to {MAX_TEXT_ANSWER}")
        question["max_length"] = limit
    elif kind == "number":
        low = _number(raw.get("min"), f"{field}.min", errors)
        high = _number(raw.get("max"), f"{field}.max", errors)
        if low is not None and high is not None and low > high:
            errors.add(f"{field}.max", "must not be below min")
        integer = raw.get("integer", False)
        if type(integer) is not bool:
            errors.add(f"{field}.integer", "must be true or false")
        question.update({"min": low, "max": high, "integer": integer is True})
    return question


def _survey(raw: Any, field: str, errors: _Errors) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or len(raw) > MAX_QUESTIONS:
        errors.add(field, f"must be a list of at most {MAX_QUESTIONS} questions")
        return []
    questions = [_question(q, f"{field}.{i}", errors) for i, q in enumerate(raw)]
    ids = [q.get("id") for q in questions]
    for i, qid in enumerate(ids):
        if qid in ids[:i]:
            errors.add(f"{field}.{i}.id", f"{qid!r} is used by an earlier question")
    return questions


def _rule(raw: Any, field: str, questions: dict[str, dict], errors: _Errors) -> dict[str, Any]:
    """One screening rule over a pre-study question: ``accept`` (choices) or ``min``/``max`` (numbers)."""
    if not isinstance(raw, dict):
        errors.add(field, "must be an object naming a pre-study question")
        return {}
    question = questions.get(raw.get("question"))  # type: ignore[arg-type]
    if question is None:
        errors.add(f"{field}.question", "must name a question of the pre-study questionnaire")
        return {}
    rule: dict[str, Any] = {"question": question["id"]}
    if question["type"] in ("single", "multiple"):
        accept = raw.get("accept")
        if not isinstance(accept, list) or not accept or any(a not in question["options"] for a in accept):
            errors.add(f"{field}.accept", "must list one or more of the question's options")
        rule["accept"] = accept
    elif question["type"] in ("number", "likert"):
        low = _number(raw.get("min"), f"{field}.min", errors)
        high = _number(raw.get("max"), f"{field}.max", errors)
        if low is None and high is None:
            errors.add(field, "needs min, max or both")
        rule.update({"min": low, "max": high})
    else:
        errors.add(f"{field}.question", "a text question cannot screen: use a choice, Likert or number")
    return rule


def _training(raw: Any, errors: _Errors) -> dict[str, Any]:
    """The training phase: worked examples (documents with a gold answer), the pass mark and the tries."""
    if not isinstance(raw, dict):
        errors.add("training", "must be an object with items, pass_mark and tries")
        return {}
    for key in sorted(set(raw) - {"items", "pass_mark", "tries"}):
        errors.add(f"training.{key}", "is not a training setting (known: items, pass_mark, tries)")
    items = raw.get("items")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_TRAINING_ITEMS:
        errors.add("training.items", f"must be a list of 1 to {MAX_TRAINING_ITEMS} items")
        items = []
    cleaned_items = []
    for i, entry in enumerate(items):
        where = f"training.items.{i}"
        if not isinstance(entry, dict) or set(entry) - {"document", "explanation"}:
            errors.add(where, "must be an object with document (its id in the dataset) and explanation")
            continue
        document = _text(entry.get("document"), f"{where}.document", errors, MAX_OPTION_CHARS)
        explanation = _text(
            entry.get("explanation", ""), f"{where}.explanation", errors, MAX_EXPLANATION_CHARS, blank=True
        )
        cleaned_items.append({"document": document, "explanation": explanation})
    documents = [e["document"] for e in cleaned_items]
    if len(set(documents)) != len(documents):
        errors.add("training.items", "each document may be a training item once")
    mark = raw.get("pass_mark", 1.0)
    if type(mark) not in (int, float) or not math.isfinite(mark) or not 0 <= mark <= 1:
        errors.add("training.pass_mark", "must be a share from 0 to 1 of the training items answered right")
    tries = raw.get("tries", 2)
    if type(tries) is not int or not 1 <= tries <= MAX_TRIES:
        errors.add("training.tries", f"must be a whole number from 1 to {MAX_TRIES}")
    return {"items": cleaned_items, "pass_mark": mark, "tries": tries}


def _attention(raw: Any, errors: _Errors) -> dict[str, Any]:
    """The attention checks: documents whose gold is the instructed answer, the instruction shown with
    each, and how many may be failed before the worker is handed no more items."""
    if not isinstance(raw, dict):
        errors.add("attention", "must be an object with items and max_failures")
        return {}
    for key in sorted(set(raw) - {"items", "max_failures"}):
        errors.add(f"attention.{key}", "is not an attention setting (known: items, max_failures)")
    items = raw.get("items")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_TRAINING_ITEMS:
        errors.add("attention.items", f"must be a list of 1 to {MAX_TRAINING_ITEMS} checks")
        items = []
    cleaned = []
    for i, entry in enumerate(items):
        where = f"attention.items.{i}"
        if not isinstance(entry, dict) or set(entry) - {"document", "instruction"}:
            errors.add(where, "must be an object with document (its id in the dataset) and instruction")
            continue
        cleaned.append(
            {
                "document": _text(entry.get("document"), f"{where}.document", errors, MAX_OPTION_CHARS),
                "instruction": _text(
                    entry.get("instruction"), f"{where}.instruction", errors, MAX_PROMPT_CHARS
                ),
            }
        )
    if len({c["document"] for c in cleaned}) != len(cleaned):
        errors.add("attention.items", "each document may be an attention check once")
    most = raw.get("max_failures", 0)
    if type(most) is not int or not 0 <= most <= MAX_TRAINING_ITEMS:
        errors.add("attention.max_failures", f"must be a whole number from 0 to {MAX_TRAINING_ITEMS}")
    return {"items": cleaned, "max_failures": most}


def validate_protocol(raw: Any) -> dict[str, Any]:
    """``raw`` (the protocol of a study's settings) cleaned; :class:`ProtocolInvalid` otherwise."""
    if raw in (None, ""):
        return {}
    errors = _Errors()
    if not isinstance(raw, dict):
        raise ProtocolInvalid({"protocol": ["must be an object"]})
    for key in sorted(set(raw) - set(KEYS)):
        errors.add(key, f"is not a protocol setting (known: {', '.join(KEYS)})")
    cleaned: dict[str, Any] = {}
    consent = _text(raw.get("consent", ""), "consent", errors, MAX_CONSENT_CHARS, blank=True)
    if consent:
        cleaned["consent"] = consent
    for name in SURVEYS:
        if raw.get(name):
            cleaned[name] = _survey(raw[name], name, errors)
    by_id = {q["id"]: q for q in cleaned.get("pre_survey", []) if q.get("id") and q.get("type")}
    rules = raw.get("screening") or []
    if not isinstance(rules, list):
        errors.add("screening", "must be a list of rules")
        rules = []
    if rules:
        cleaned["screening"] = [_rule(r, f"screening.{i}", by_id, errors) for i, r in enumerate(rules)]
    if raw.get("training") is not None:
        cleaned["training"] = _training(raw["training"], errors)
    if raw.get("attention") is not None:
        cleaned["attention"] = _attention(raw["attention"], errors)
    trained = {e.get("document") for e in cleaned.get("training", {}).get("items", [])}
    checked = {e.get("document") for e in cleaned.get("attention", {}).get("items", [])}
    if trained & checked:
        errors.add("attention.items", "a document cannot be both a training example and an attention check")
    reasons = raw.get("skip_reasons") or []
    if not isinstance(reasons, list) or len(reasons) > MAX_SKIP_REASONS:
        errors.add("skip_reasons", f"must be a list of at most {MAX_SKIP_REASONS} reasons")
        reasons = []
    reasons = [_text(r, f"skip_reasons.{i}", errors, MAX_OPTION_CHARS) for i, r in enumerate(reasons)]
    if len(set(reasons)) != len(reasons):
        errors.add("skip_reasons", "each reason must be different")
    if reasons:
        cleaned["skip_reasons"] = reasons
    if "max_skips" in raw:
        most = raw["max_skips"]
        if type(most) is not int or not 0 <= most <= 1000:
            errors.add("max_skips", "must be a whole number from 0 to 1000")
        cleaned["max_skips"] = most
    back = raw.get("back", False)
    if type(back) is not bool:
        errors.add("back", "must be true or false")
    if back is True:
        cleaned["back"] = True
    if errors.found:
        raise ProtocolInvalid(errors.found)
    return cleaned
