"""A 400 for query parameters PostgreSQL cannot compare with: a NUL (``%00``) or a lone surrogate in a
parameter's name or value, before any view passes it to a filter."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from annotate.infra.json_input import unstorable_reason

ANNOTATOR_API = "/api/work/"


def query_problem(request: HttpRequest) -> tuple[str, str] | None:
    """``(parameter, message)`` for the first unstorable query parameter, or ``None``."""
    if not request.META.get("QUERY_STRING"):
        return None
    for name, values in request.GET.lists():
        problem = unstorable_reason(name)
        if problem:
            return repr(name), f"the parameter's name {problem}"
        for value in values:
            problem = unstorable_reason(value)
            if problem:
                return name, problem
    return None


class QueryStringGuard:
    """Refuses a request whose query holds an unstorable parameter: 400 in the API's error shape under
    ``/api/`` (``{"errors": {...}}`` for the annotator endpoints, DRF's ``{"name": [...]}`` for the rest),
    plain text elsewhere."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        found = query_problem(request)
        if found is None:
            return self.get_response(request)
        name, message = found
        if request.path.startswith(ANNOTATOR_API):
            return JsonResponse({"errors": {name: [message]}}, status=400)
        if request.path.startswith("/api/"):
            return JsonResponse({name: [message]}, status=400)
        return HttpResponseBadRequest(f"query parameter {name}: {message}", content_type="text/plain")
