"""JSON request bodies read with limits, and values PostgreSQL cannot store refused.

:func:`parse_json` is what every endpoint reads a JSON body with (the annotator endpoints directly, the DRF
views through :class:`annotate.api.parsers.LimitedJSONParser`, the gold editor and the pages' JSON fields),
and what imports read a JSONL line or a CSV cell of JSON with (:func:`annotate.corpus.imports.read_json`). It refuses, as :class:`JSONInputError`
naming the field:

* a body over ``max_bytes`` or nested deeper than ``max_depth`` (settings ``HATLAB_JSON_MAX_BYTES``,
  ``HATLAB_JSON_MAX_DEPTH``, ``HATLAB_SUBMISSION_MAX_BYTES``). The depth is found before
  :func:`json.loads` runs, so its recursive C scanner never meets a body deep enough to raise
  ``RecursionError``;
* ``NaN``, ``Infinity`` and ``-Infinity`` (:func:`json.loads` takes them; they are not JSON and
  ``jsonb`` refuses them), and numbers beyond a float's range (``1e400``, which :func:`float` makes
  infinity), and integers past Python's digit limit (4,300), each named by its field;
* ``\\u0000`` and lone surrogates (``\\ud800`` without its pair) in any string, keys included: ``jsonb``
  and ``text`` columns refuse both.

Hand-written rather than a streaming parser from a library because a well-formed body costs only scans at
C speed besides the decoding itself (byte counts and substring searches; the bracket depth is computed only
when a body has more opening brackets than the limit); the walk that names the bad field runs only when
the scans find something suspicious. Every check is linear in the body's length, whatever the body holds
(``tests/annotate/test_input_limits.py`` times them on growing hostile bodies).
"""

from __future__ import annotations

import json
import math
import re
import sys
from itertools import accumulate
from typing import Any

# Escapes that decode to a character PostgreSQL refuses: NUL, or a UTF-16 surrogate (``\\ud83d\\ude00`` is a
# valid pair, so a match only sends the body to the walk that decides). Raw surrogate bytes start with 0xED.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
# A backslash and the byte after it: inside a string that is an escape, and removing every one of them leaves
# strings with no quote inside, so the text outside strings is every other piece between quotes. One pass
# of a pattern that matches at every backslash it tries: linear in the body, whatever the body holds.
_ESCAPE = re.compile(rb"\\.?", re.S)
_BRACKETS_ONLY = bytes(range(256)).translate(None, b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class JSONInputError(ValueError):
    """A body refused: ``field`` is the dotted path of the bad value (``detail`` for the body as a whole)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class _Constant:
    """Where ``NaN``, ``Infinity`` or a number too large for a float stood, kept until the walk names its
    field."""

    __slots__ = ("message",)

    def __init__(self, name: str, message: str = "is not a JSON number"):
        self.message = f"{name} {message}"


class _Overflow(Exception):
    """A number beyond a float's range (``1e400``): :func:`float` makes it infinity, which ``jsonb`` refuses."""


_TOO_LARGE = "is too large: a number must lie within ±1.7e308"


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Overflow(text)
    return value


def _float_or_constant(text: str) -> float | _Constant:
    value = float(text)
    return _Constant(text, _TOO_LARGE) if math.isinf(value) else value


def _int_or_constant(text: str) -> int | _Constant:
    digits = len(text.lstrip("-"))
    if digits > sys.get_int_max_str_digits():
        return _Constant(
            f"a number of {digits} digits", f"is too long (at most {sys.get_int_max_str_digits()})"
        )
    return int(text)


# One decoder for every body (``json.loads`` with an argument builds a new one per call); the second, which
# keeps an overflowing or over-long number where it stood, only decodes a body the first refused for one.
_DECODER = json.JSONDecoder(parse_constant=_Constant, parse_float=_finite_float)
_NAMING_DECODER = json.JSONDecoder(
    parse_constant=_Constant, parse_float=_float_or_constant, parse_int=_int_or_constant
)


def nesting_depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in ``body``, brackets inside strings not counted.

    Linear in the body's length (C-speed passes: escapes removed, a split at quotes, a translate, one
    running sum). For a body that is not JSON the count is exact up to the first byte the decoder refuses
    (a backslash outside a string, an unterminated string), which is as far as the decoder recurses, so a
    body is never deeper for the decoder than for this count.
    """
    unescaped = _ESCAPE.sub(b"", body) if b"\\" in body else body
    outside = b"".join(unescaped.split(b'"')[::2])
    brackets = outside.translate(None, _BRACKETS_ONLY)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _too_deep(body: bytes, max_depth: int) -> bool:
    # The hot path: fewer opening brackets than the limit cannot nest past it (two C-speed counts).
    if body.count(b"[") + body.count(b"{") <= max_depth:
        return False
    return nesting_depth(body) > max_depth


def unstorable_reason(text: str) -> str | None:
    """Why ``text`` cannot be stored in PostgreSQL (a NUL or a lone surrogate), or ``None``."""
    match = _BAD_CHAR.search(text)
    if match is None:
        return None
    if match.group() == "\x00":
        return "holds a NUL character (\\u0000), which cannot be stored"
    return f"holds a lone surrogate (\\u{ord(match.group()):04x}), which is not Unicode text"


def find_unstorable(value: Any, path: str = "") -> JSONInputError | None:
    """The first value under ``value`` that PostgreSQL cannot store, as an error naming its path."""
    pending: list[tuple[str, Any]] = [(path, value)]
    while pending:
        where, node = pending.pop()
        if isinstance(node, _Constant):
            return JSONInputError(where or "detail", node.message)
        if isinstance(node, str):
            problem = unstorable_reason(node)
            if problem:
                return JSONInputError(where or "detail", problem)
        elif isinstance(node, dict):
            for key, child in node.items():
                problem = unstorable_reason(key)
                if problem:
                    return JSONInputError(where or "detail", f"the key {key!r} {problem}")
                pending.append((f"{where}.{key}" if where else key, child))
        elif isinstance(node, list):
            pending.extend((f"{where}.{i}" if where else str(i), child) for i, child in enumerate(node))
    return None


def _transcoded(body: bytes, encoding: str, what: str) -> bytes:
    try:
        return body.decode(encoding, "surrogatepass").encode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise JSONInputError("detail", f"{what} is not valid JSON ({exc})") from None


def parse_json(body: bytes | str, *, max_bytes: int, max_depth: int, what: str = "the body") -> Any:
    """``body`` decoded, or :class:`JSONInputError` (see the module docstring for what is refused).
    ``what`` names the text in messages about it as a whole (``the line``, ``the cell``)."""
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    if len(body) > max_bytes:
        raise JSONInputError("detail", f"{what} is larger than the limit of {max_bytes} bytes")
    encoding = json.detect_encoding(body)
    if encoding != "utf-8":
        # UTF-16/32 (or a BOM): the scans below read bytes as UTF-8, where a quote or bracket is one byte
        body = _transcoded(body, encoding, what)
    if _too_deep(body, max_depth):
        raise JSONInputError(
            "detail", f"{what} nests arrays and objects deeper than the limit of {max_depth}"
        )
    try:
        text = body.decode("utf-8", "surrogatepass")
        data = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise JSONInputError(
            "detail", f"{what} is not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})"
        ) from None
    except UnicodeDecodeError as exc:
        raise JSONInputError("detail", f"{what} is not valid JSON ({exc})") from None
    except (_Overflow, ValueError):  # a float past its range, an integer past Python's digits
        raise find_unstorable(_NAMING_DECODER.decode(text)) or JSONInputError(
            "detail", f"{what} holds a number out of range"
        ) from None
    if (
        b"NaN" in body
        or b"Infinity" in body
        or b"\xed" in body
        or (b"\\u" in body and _SUSPECT_ESCAPE.search(body))
    ):
        problem = find_unstorable(data)
        if problem is not None:
            raise problem
    return data
