"""The API documentation page, rendered on the server from the OpenAPI schema (no script, no CDN), for
researchers only."""

from __future__ import annotations

from collections.abc import Callable

from django.shortcuts import render
from drf_spectacular.generators import SchemaGenerator

from annotate.access import researcher_required

METHODS = ("get", "post", "put", "patch", "delete")


def _schema_name(ref_or_schema: dict | None) -> str:
    if not ref_or_schema:
        return ""
    if "$ref" in ref_or_schema:
        return ref_or_schema["$ref"].rsplit("/", 1)[-1]
    if ref_or_schema.get("type") == "array":
        return f"list of {_schema_name(ref_or_schema.get('items'))}"
    return ref_or_schema.get("type", "object")


def operations(schema: dict) -> list[dict]:
    """The schema's operations, flattened for the template."""
    out = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            body = op.get("requestBody", {}).get("content", {})
            out.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "id": op.get("operationId", ""),
                    "summary": op.get("summary") or "",
                    "description": op.get("description", ""),
                    "tags": op.get("tags", []),
                    "parameters": [
                        {
                            "name": p.get("name"),
                            "in": p.get("in"),
                            "required": p.get("required", False),
                            "description": p.get("description", ""),
                        }
                        for p in op.get("parameters", [])
                    ],
                    "request": [(ctype, _schema_name(c.get("schema"))) for ctype, c in body.items()],
                    "responses": [
                        (
                            code,
                            r.get("description", ""),
                            ", ".join(_schema_name(c.get("schema")) for c in r.get("content", {}).values()),
                        )
                        for code, r in op.get("responses", {}).items()
                    ],
                }
            )
    return out


def components(schema: dict) -> list[dict]:
    """The named schemas with their properties (type, required, read-only, description)."""
    out = []
    for name, comp in sorted(schema.get("components", {}).get("schemas", {}).items()):
        required = set(comp.get("required", []))
        props = [
            {
                "name": prop,
                "type": _schema_name(spec) if ("$ref" in spec or "type" in spec) else "any",
                "required": prop in required,
                "read_only": spec.get("readOnly", False),
                "description": spec.get("description", ""),
                "enum": spec.get("enum", []),
            }
            for prop, spec in comp.get("properties", {}).items()
        ]
        out.append({"name": name, "description": comp.get("description", ""), "properties": props})
    return out


@researcher_required
def api_docs(request, patterns: Callable[[], list]):
    """The API's operations and components; ``patterns`` gives the routes the schema describes (the URLconf
    passes :func:`annotate.api.schema.schema_patterns`: no page imports the API layer)."""
    schema = SchemaGenerator(patterns=patterns()).get_schema(request=None, public=True)
    return render(
        request,
        "annotate/api_docs.html",
        {"info": schema.get("info", {}), "operations": operations(schema), "components": components(schema)},
    )
