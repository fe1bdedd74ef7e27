"""A 400 for a query parameter that an API operation does not take.

What each operation takes is what the OpenAPI schema says (its ``in: query`` parameters): the schema is
generated once per process, on the first API request that has a query string, and a parameter it does not
name is refused, in the API's error shape, naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from django.http import HttpRequest, HttpResponse, JsonResponse

ANNOTATOR_API = "/api/work/"
UNKNOWN = "is not a parameter of this operation"


@cache
def _operations() -> list[tuple[re.Pattern[str], dict[str, frozenset[str]]]]:
    """``(path regex, method → query parameter names)`` for every path of the schema, the most literal
    path first, so that ``/export/rationales-{fmt}.zip/`` is matched before ``/export/{what}.{fmt}/``."""
    from drf_spectacular.generators import SchemaGenerator

    from annotate.api.schema import schema_patterns

    document = SchemaGenerator(patterns=schema_patterns()).get_schema(request=None, public=True)
    found = []
    for path, operations in document.get("paths", {}).items():
        parts = re.split(r"\{[^}/]+\}", path)
        regex = re.compile("[^/]+".join(re.escape(part) for part in parts) + r"\Z")
        taken = {
            method.upper(): frozenset(
                p["name"] for p in operation.get("parameters", []) if p["in"] == "query"
            )
            for method, operation in operations.items()
        }
        found.append((sum(map(len, parts)), regex, taken))
    found.sort(key=lambda entry: -entry[0])
    return [(regex, taken) for _, regex, taken in found]


def unknown_parameter(request: HttpRequest) -> str | None:
    """The first query parameter of ``request`` that its operation does not take, or ``None`` (also where
    the schema does not describe the operation)."""
    if not request.META.get("QUERY_STRING") or not request.path.startswith("/api/"):
        return None
    method = "GET" if request.method == "HEAD" else (request.method or "")
    for regex, taken in _operations():
        if regex.match(request.path):
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
