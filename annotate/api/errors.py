"""The error answers every API operation may give, added to the OpenAPI schema by one postprocessing hook
(drf-spectacular's ``POSTPROCESSING_HOOKS``), and the JSON 404 of an ``/api/`` URL that matches no route.

Errors are JSON objects in one of DRF's shapes (``{"detail": "..."}``, ``{"field": ["message"]}``) or the
annotator endpoints' ``{"errors": {"field": ["message"]}}``; the schema describes them as one object type.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found

ERROR_COMPONENT = "Error"
ERROR_SCHEMA = {
    "type": "object",
    "description": 'An error: {"detail": "..."}, {"field": ["message", ...]} or {"errors": {"field": [...]}}.',
    "additionalProperties": True,
}
_WHY = {
    "400": "The request's body or parameters are refused; the body names each field and what is wrong.",
    "403": "Not signed in, without the role the operation needs, or (annotator endpoints) no CSRF token or "
    "no worker in the session.",
    "404": "No such object for this user, no such page of a list, or a URL that matches no route.",
    "415": "The body's content type is not one the operation takes.",
    "429": "Too many requests: wait for the seconds that Retry-After gives.",
    "503": "The database or the job broker is unavailable for now: retry after the seconds that Retry-After "
    "gives.",
}
_RETRY_AFTER = {
    "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait before trying again."}
}


def _error(code: str, media_types: list[str]) -> dict:
    schema = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    response: dict[str, Any] = {
        "description": _WHY[code],
        "content": {media_type: {"schema": schema} for media_type in media_types},
    }
    if code in ("429", "503"):
        response["headers"] = _RETRY_AFTER
    return response


def _codes(operation: dict) -> list[str]:
    parameters = operation.get("parameters", [])
    codes = ["403", "429", "503"]
    if "requestBody" in operation or any(p["in"] == "query" for p in parameters):
        codes.append("400")
    if "requestBody" in operation:
        codes.append("415")
    if any(p["in"] in ("path", "query") for p in parameters):  # no such object; no such page of a list
        codes.append("404")
    return codes


def document_errors(result: dict, generator, request, public) -> dict:
    """Every operation documents the errors it can answer (those it already describes are kept)."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_COMPONENT] = ERROR_SCHEMA
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            # errors come in JSON, except where the answer's media type is negotiated among its own
            # renderers (the schema itself: YAML by default)
            negotiated = list(responses.get("200", {}).get("content", {}))
            media_types = negotiated if any("openapi" in m for m in negotiated) else ["application/json"]
            for code in _codes(operation):
                if code not in responses or not responses[code].get("content"):
                    responses[code] = _error(code, media_types) | {
                        k: v for k, v in responses.get(code, {}).items() if k == "description"
                    }
                elif code in ("429", "503"):  # described by the view: the wait it gives is still a header
                    responses[code].setdefault("headers", _RETRY_AFTER)
    return result


#: What a string of a request may not hold: PostgreSQL cannot store NUL, so the API refuses it everywhere.
NO_NUL = "^[^\\u0000]*$"


def _refuse_nul(schema: Any) -> None:
    """Add :data:`NO_NUL` to every plain string of ``schema`` (one without a format, enum or pattern)."""
    if isinstance(schema, list):
        for part in schema:
            _refuse_nul(part)
        return
    if not isinstance(schema, dict):
        return
    if (
        schema.get("type") == "string"
        and not {"format", "enum", "pattern"} & set(schema)
        and not schema.get("readOnly")
    ):
        schema["pattern"] = NO_NUL
    for key in ("properties", "items", "additionalProperties", "allOf", "anyOf", "oneOf"):
        value = schema.get(key)
        if isinstance(value, dict) and key == "properties":
            for child in value.values():
                _refuse_nul(child)
        elif isinstance(value, dict | list):
            _refuse_nul(value)


def refuse_nul(result: dict, generator, request, public) -> dict:
    """The schema says what the API refuses: a NUL character in any string of a request (body, query or
    path), as :func:`annotate.infra.json_input.parse_json` and the query guard refuse it. Request bodies
    have their own components (``COMPONENT_SPLIT_REQUEST``), so answers are left as they are."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request"):
            _refuse_nul(component)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                _refuse_nul(parameter.get("schema"))
            for media in operation.get("requestBody", {}).get("content", {}).values():
                _refuse_nul(media.get("schema"))
    return result


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404: JSON under ``/api/`` (the annotator endpoints' shape under ``/api/work/``), Django's page elsewhere."""
    if request.path.startswith("/api/work/"):
        return JsonResponse({"errors": {"detail": ["Not found."]}}, status=404)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)
