"""The API's errors as the schema documents them: every operation lists the error answers it can give, with a
JSON body, and an /api/ URL that matches no route is a JSON 404 (in the annotator endpoints' shape under
/api/work/), while a page URL keeps Django's page."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from annotate.api.schema import schema_patterns

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def spec() -> dict:
    generated = SchemaGenerator(patterns=schema_patterns()).get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(generated))


def test_every_operation_documents_its_errors(spec):
    missing = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            wanted = {"403", "429", "503"}
            if "requestBody" in operation:
                wanted |= {"400", "415"}
            if "{" in path:
                wanted.add("404")
            for code in sorted(wanted):
                if not responses.get(code, {}).get("content"):
                    missing.append(f"{method.upper()} {path} {code}")
            for code in ("429", "503"):
                if "Retry-After" not in responses.get(code, {}).get("headers", {}):
                    missing.append(f"{method.upper()} {path} {code} without Retry-After")
    assert not missing, missing
    assert spec["components"]["schemas"]["Error"]["type"] == "object"


def test_study_transitions_document_409(spec):
    for action in ("start", "pause", "finish"):
        assert "409" in spec["paths"][f"/api/studies/{{uid}}/{action}/"]["post"]["responses"]


def test_unmatched_api_urls_are_json_404s():
    api = Client().get("/api/no-such-thing/")
    assert api.status_code == 404 and api.json() == {"detail": "Not found."}
    work = Client().post("/api/work/not-a-uuid/next/", content_type="application/json")
    assert work.status_code == 404 and work.json() == {"errors": {"detail": ["Not found."]}}
    page = Client().get("/no-such-page/")
    assert page.status_code == 404 and not page["Content-Type"].startswith("application/json")
