"""JSON request bodies read with limits, and values PostgreSQL cannot store refused.

:func:`parse_json` is what every endpoint reads a JSON body with (the annotator endpoints directly, the DRF
views through :class:`annotate.api.parsers.LimitedJSONParser`). It refuses, as :class:`JSONInputError`
naming the field:

* a body over ``max_bytes`` or nested deeper than ``max_depth`` (settings ``HATLAB_JSON_MAX_BYTES``,
  ``HATLAB_JSON_MAX_DEPTH``, ``HATLAB_SUBMISSION_MAX_BYTES``). The depth is found before
  :func:`json.loads` runs, so its recursive C scanner never meets a body deep enough to raise
  ``RecursionError``;
* ``NaN``, ``Infinity`` and ``-Infinity`` (:func:`json.loads` takes them; they are not JSON and
  ``jsonb`` refuses them);
* ``\\u0000`` and lone surrogates (``\\ud800`` without its pair) in any string, keys included: ``jsonb``
  and ``text`` columns refuse both.

Hand-written rather than a streaming parser from a library because a well-formed body costs only scans at
C speed besides the decoding itself (byte counts and substring searches; the bracket depth is computed only
when a body has more opening brackets than the limit); the walk that names the bad field runs only when
the scans find something suspicious.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

# Escapes that decode to a character PostgreSQL refuses: NUL, or a UTF-16 surrogate (``\\ud83d\\ude00`` is a
# valid pair, so a match only sends the body to the walk that decides). Raw surrogate bytes start with 0xED.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
# A JSON string (its escapes included): removed before brackets are counted, since they may hold brackets.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKETS_ONLY = bytes(range(256)).translate(None, b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class JSONInputError(ValueError):
    """A body refused: ``field`` is the dotted path of the bad value (``detail`` for the body as a whole)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class _Constant:
    """Where ``NaN`` or ``Infinity`` stood, kept until the walk names its field."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


# One decoder for every body (``json.loads`` with an argument builds a new one per call).
_DECODER = json.JSONDecoder(parse_constant=_Constant)


def nesting_depth(body: bytes) -> int:
    """The deepest nesting of arrays and objects in ``body``, brackets inside strings not counted.

    An upper bound for a body that is not JSON (an unterminated string's brackets count), which is
    enough: such a body is refused either way.
    """
    # without a backslash no string holds an escaped quote: the text outside strings is every other piece
    outside = b"".join(body.split(b'"')[::2]) if b"\\" not in body else _STRING.sub(b"", body)
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
            return JSONInputError(where or "detail", f"{node.name} is not a JSON number")
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


def parse_json(body: bytes | str, *, max_bytes: int, max_depth: int) -> Any:
    """``body`` decoded, or :class:`JSONInputError` (see the module docstring for what is refused)."""
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    if len(body) > max_bytes:
        raise JSONInputError("detail", f"the body is larger than the limit of {max_bytes} bytes")
    if _too_deep(body, max_depth):
        raise JSONInputError(
            "detail", f"the body nests arrays and objects deeper than the limit of {max_depth}"
        )
    try:
        data = _DECODER.decode(body.decode(json.detect_encoding(body), "surrogatepass"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise JSONInputError("detail", f"the body is not JSON ({exc})") from None
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
