"""A 400 for a query parameter that an API operation does not take.

What each operation takes is what the OpenAPI schema says (its ``in: query`` parameters). The schema is
built per route, on the first request with a query string that reaches it: the routes are listed once per
process (which imports nothing new: the URL patterns are loaded already), and only the matched route's
operations are described, so one request never pays for the whole schema, nor loads what another route's
views import (the machine pages' schema reaches the engine). A parameter the operation does not name is
refused, in the API's error shape, naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from django.http import HttpRequest, HttpResponse, JsonResponse

ANNOTATOR_API = "/api/work/"
UNKNOWN = "is not a parameter of this operation"


def _generator() -> object:
    """drf-spectacular's generator over the schema's patterns, its endpoints listed
    (``(path, path_regex, method, callback)``; ``_initialise_endpoints`` is how the generator lists them)."""
    from drf_spectacular.generators import SchemaGenerator

    from annotate.api.schema import schema_patterns

    generator = SchemaGenerator(patterns=schema_patterns())
    generator._initialise_endpoints()
    return generator


@cache
def _routes() -> list[tuple[re.Pattern[str], str]]:
    """``(path regex, schema path)`` for every described route, the most literal path first, so that
    ``/export/rationales-{fmt}.zip/`` is matched before ``/export/{what}.{fmt}/``."""
    paths = {endpoint[0] for endpoint in _generator().endpoints}  # type: ignore[attr-defined]
    found = []
    for path in paths:
        parts = re.split(r"\{[^}/]+\}", path)
        regex = re.compile("[^/]+".join(re.escape(part) for part in parts) + r"\Z")
        found.append((sum(map(len, parts)), path, regex))
    found.sort(key=lambda entry: (-entry[0], entry[1]))
    return [(regex, path) for _, path, regex in found]


@cache
def _taken(path: str) -> dict[str, frozenset[str]]:
    """method → the query parameter names the schema gives the operations of route ``path``."""
    generator = _generator()
    generator.endpoints = [e for e in generator.endpoints if e[0] == path]  # type: ignore[attr-defined]
    document = generator.get_schema(request=None, public=True)  # type: ignore[attr-defined]
    taken: dict[str, frozenset[str]] = {}
    for operations in document.get("paths", {}).values():
        for method, operation in operations.items():
            names = (p["name"] for p in operation.get("parameters", []) if p["in"] == "query")
            taken[method.upper()] = taken.get(method.upper(), frozenset()) | frozenset(names)
    return taken


def unknown_parameter(request: HttpRequest) -> str | None:
    """The first query parameter of ``request`` that its operation does not take, or ``None`` (also where
    the schema does not describe the operation)."""
    if not request.META.get("QUERY_STRING") or not request.path.startswith("/api/"):
        return None
    method = "GET" if request.method == "HEAD" else (request.method or "")
    for regex, path in _routes():
        if regex.match(request.path):
            taken = _taken(path)
            if method not in taken:
                return None
            return next((name for name in request.GET if name not in taken[method]), None)
    return None


class UndocumentedQueryGuard:
    """Refuses an API request with a query parameter its operation does not take: 400 in the API's error
    shape (``{"errors": {...}}`` for the annotator endpoints, DRF's ``{"name": [...]}`` for the rest)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        name = unknown_parameter(request)
        if name is None:
            return self.get_response(request)
        errors = {name: [UNKNOWN]}
        if request.path.startswith(ANNOTATOR_API):
            return JsonResponse({"errors": errors}, status=400)
        return JsonResponse(errors, status=400)
