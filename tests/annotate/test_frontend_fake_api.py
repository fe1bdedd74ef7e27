"""The frontend tests' fake API (``frontend/tests/helpers.ts``, ``server``) against the app's own OpenAPI
schema (``/api/schema/``): the vitest files that use it run with ``HATLAB_FAKE_API_LOG`` set, so every
answer the fake gives is logged, and each one must be an operation of the schema (path and method), with
a status the schema documents for it and a body of the documented shape (field names, types, required
fields, no field the schema does not have). The requests the pages sent are checked against the
operation's request body the same way. String formats (uuid, date-time) are not checked: the tests use
short readable ids."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from annotate.access import RESEARCHER_GROUP
from tests.annotate.conftest import make_user

#: The schema fixture reads the API as a researcher: the test database must exist for it (pytest-django
#: creates it only for a run whose tests ask for it).
pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
FAKE_API_USERS = ["tests/task_loop.test.ts", "tests/kinds"]
TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
}


def resolve(schema: dict, spec: dict) -> dict:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def problems(value: Any, schema: dict, spec: dict, where: str = "body") -> list[str]:
    """How ``value`` departs from the OpenAPI ``schema`` (the subset drf-spectacular writes)."""
    schema = resolve(schema, spec)
    if value is None:
        return [] if schema.get("nullable") else [f"{where}: null where the schema allows none"]
    if "allOf" in schema:
        return [p for part in schema["allOf"] for p in problems(value, part, spec, where)]
    if "oneOf" in schema or "anyOf" in schema:
        options = schema.get("oneOf") or schema.get("anyOf")
        found = [problems(value, option, spec, where) for option in options]
        return (
            [] if any(not f for f in found) else [f"{where}: matches none of {len(options)} shapes: {found}"]
        )
    kind = schema.get("type")
    if kind is None:
        return []  # any value
    want = TYPES[kind]
    if not isinstance(value, want) or (kind in ("integer", "number") and isinstance(value, bool)):
        return [f"{where}: want {kind}, got {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    out: list[str] = []
    if kind == "array":
        for i, v in enumerate(value):
            out += problems(v, schema.get("items", {}), spec, f"{where}[{i}]")
    if kind == "object":
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out += [
            f"{where}.{name}: required, missing" for name in schema.get("required", []) if name not in value
        ]
        for name, v in value.items():
            if name in properties:
                out += problems(v, properties[name], spec, f"{where}.{name}")
            elif isinstance(extra, dict):
                out += problems(v, extra, spec, f"{where}.{name}")
            elif properties and not extra:
                out.append(f"{where}.{name}: not in the schema")
    return out


def operation(spec: dict, url: str, method: str = "post") -> tuple[str, dict] | None:
    path = url.split("?", 1)[0]
    for template, item in spec["paths"].items():
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path) and method in item:
            return template, item[method]
    return None


@pytest.fixture(scope="module")
def spec(django_db_setup, django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        # the schema is for researchers; this module-wide account is removed again (no transaction holds it)
        reader = make_user("schema-reader", RESEARCHER_GROUP)
        client = Client()
        client.force_login(reader)
        reply = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
        reader.delete()
    assert reply.status_code == 200
    return json.loads(reply.content)


@pytest.fixture(scope="module")
def exchanges(tmp_path_factory) -> list[dict]:
    vitest = FRONTEND / "node_modules" / ".bin" / "vitest"
    if not vitest.exists() or shutil.which("node") is None:
        reason = "frontend/node_modules (npm ci) and node are needed"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("fake-api") / "exchanges.jsonl"
    done = subprocess.run(
        [str(vitest), "run", *FAKE_API_USERS],
        cwd=FRONTEND,
        env={**os.environ, "HATLAB_FAKE_API_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = log.read_text().splitlines()
    assert lines, (
        "the fake API logged nothing: is HATLAB_FAKE_API_LOG still read in frontend/tests/helpers.ts?"
    )
    return [json.loads(line) for line in lines]


def test_every_answer_of_the_fake_api_is_in_the_schema(spec, exchanges):
    wrong = []
    for n, x in enumerate(exchanges):
        found = operation(spec, x["url"])
        if found is None:
            wrong.append(f"#{n} POST {x['url']}: no such operation in /api/schema/")
            continue
        template, op = found
        if x["status"] >= 500:  # a server failure the page must survive: no schema describes those
            continue
        response = op["responses"].get(str(x["status"]))
        if response is None:
            wrong.append(
                f"#{n} POST {template}: status {x['status']} not documented ({sorted(op['responses'])})"
            )
            continue
        body_schema = response.get("content", {}).get("application/json", {}).get("schema", {})
        wrong += [f"#{n} POST {template} {x['status']}: {p}" for p in problems(x["body"], body_schema, spec)]
        request_schema = (
            op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        )
        if request_schema is not None:
            wrong += [
                f"#{n} POST {template} request: {p}" for p in problems(x["request"], request_schema, spec)
            ]
    assert not wrong, "\n".join(wrong)


def test_the_fake_api_covers_the_work_routes(spec, exchanges):
    served = {found[0] for x in exchanges if (found := operation(spec, x["url"]))}
    assert served == {
        "/api/work/{study_uid}/next/",
        "/api/work/assignments/{assignment_uid}/submit/",
        "/api/work/assignments/{assignment_uid}/skip/",
        "/api/work/assignments/{assignment_uid}/edit/",
        "/api/work/{study_uid}/previous/",
        "/api/work/{study_uid}/training/next/",
        "/api/work/{study_uid}/training/{item_id}/answer/",
    }


def test_the_shape_check_can_fail(spec):
    nxt = {"$ref": "#/components/schemas/Next"}
    assert problems({"progress": {"done": 1, "total": 2}, "assignment": "a"}, nxt, spec) == []
    assert problems({"done": True}, nxt, spec) == ["body.progress: required, missing"]
    assert problems({"progress": {"done": "1", "total": 2}, "extra": 1}, nxt, spec) == [
        "body.progress.done: want integer, got '1'",
        "body.extra: not in the schema",
    ]
