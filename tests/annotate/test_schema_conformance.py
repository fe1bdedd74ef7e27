"""Requests the OpenAPI schema forbids are refused, and the schema says what the API refuses: an empty or
non-numeric ``page``, a non-string ``instructions`` or ``name``, a non-boolean ``gpu``; a 405 names the
allowed methods (``Allow``); every string of a request carries the pattern that refuses NUL."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from annotate.api.errors import NO_NUL
from annotate.models import Job, ModelRun, Study
from tests.annotate.conftest import TINY_PARAMS, tiny_dataset
from tests.annotate.test_api_fuzz import openapi_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


@pytest.mark.parametrize("page", ["", "abc", "0", "-1", "1.5", "١"])
def test_a_page_that_is_not_a_page_number_is_a_400_naming_it(api, page):
    response = api.get("/api/studies/", {"page": page})
    assert response.status_code == 400, response.content
    assert "page number" in response.json()["page"][0]


def test_good_pages_still_work(api, study):
    assert api.get("/api/studies/", {"page": "1"}).status_code == 200
    assert api.get("/api/studies/", {"page": "9"}).status_code == 404  # past the last page
    assert api.get("/api/studies/").status_code == 200


@pytest.mark.parametrize(
    ("field", "value"), [("instructions", 12), ("instructions", ["read"]), ("name", 5), ("name", True)]
)
def test_study_text_fields_take_only_strings(api, dataset, field, value):
    body = {"name": "s", "dataset": dataset.pk, "instructions": "Read.", field: value}
    response = api.post("/api/studies/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "must be a string" in response.json()[field][0]
    assert not Study.objects.exists()


@pytest.mark.parametrize("gpu", ["yes", 1, 0, "1"])
def test_gpu_takes_only_true_or_false(api, researcher, gpu):
    dataset = tiny_dataset(researcher)
    body = {"dataset": dataset.pk, "architecture": "cnn", "params": TINY_PARAMS, "gpu": gpu}
    response = api.post("/api/model-runs/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "true or false" in response.json()["gpu"][0]
    assert not ModelRun.objects.exists() and not Job.objects.exists()


def test_405_names_the_allowed_methods(api, study):
    work = api.get(f"/api/work/{study.uid}/next/")
    assert work.status_code == 405 and work["Allow"] == "POST"
    drf = api.put("/api/studies/", {}, content_type="application/json")
    assert drf.status_code == 405 and set(drf["Allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


def _strings(schema, where: str):
    if isinstance(schema, dict):
        if (
            schema.get("type") == "string"
            and not {"format", "enum"} & set(schema)
            and not schema.get("readOnly")
        ):
            yield where, schema
        for key, value in schema.items():
            if key == "properties":
                for name, child in value.items():
                    yield from _strings(child, f"{where}.{name}")
            elif key in ("items", "additionalProperties", "allOf", "anyOf", "oneOf"):
                yield from _strings(value, f"{where}[{key}]")
    elif isinstance(schema, list):
        for part in schema:
            yield from _strings(part, where)


def test_the_schema_says_nul_is_refused_in_every_request_string():
    document = openapi_document()
    found = []
    for name, component in document["components"]["schemas"].items():
        if name.endswith("Request"):
            found += list(_strings(component, name))
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                found += list(_strings(parameter["schema"], f"{method} {path} {parameter['name']}"))
    assert len(found) > 20
    plain = [where for where, schema in found if "pattern" not in schema]
    assert not plain, f"request strings without a pattern: {plain}"
    assert sum(schema["pattern"] == NO_NUL for _, schema in found) > 10
    # the patterns the routes bring themselves refuse NUL too (a NUL cannot follow an id or a name)
    for where, schema in found:
        assert not re.search(schema["pattern"], "\x00"), where
    select = [schema for where, schema in found if where.endswith("select[items]")]
    assert select and all(re.search(s["pattern"], "1:occlusion") for s in select)
    assert not any(re.search(s["pattern"], "1:occ\x00lusion") for s in select)
