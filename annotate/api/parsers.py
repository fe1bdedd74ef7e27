"""The DRF parser of JSON bodies: :func:`annotate.infra.json_input.parse_json` with the API's limits."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer

from annotate.infra.json_input import JSONInputError, parse_json


def json_error(exc: JSONInputError) -> ParseError:
    """A 400: ``{"detail": "..."}`` for the body as a whole, ``{"field.path": ["..."]}`` for one value."""
    if exc.field == "detail":
        return ParseError(exc.message)
    return ParseError({exc.field: [exc.message]})


class LimitedJSONParser(BaseParser):
    """JSON of at most ``HATLAB_JSON_MAX_BYTES`` bytes nested at most ``HATLAB_JSON_MAX_DEPTH`` deep, with no
    ``NaN``/``Infinity``, ``\\u0000`` or lone surrogate. It reads the stream itself (at most one byte past
    the limit) rather than ``request.body``, so a huge body is refused without being held in memory."""

    media_type = "application/json"
    renderer_class = JSONRenderer

    def parse(self, stream, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        limit = settings.HATLAB_JSON_MAX_BYTES
        body = stream.read(limit + 1) if stream is not None else b""
        try:
            return parse_json(body, max_bytes=limit, max_depth=settings.HATLAB_JSON_MAX_DEPTH)
        except JSONInputError as exc:
            raise json_error(exc) from None
