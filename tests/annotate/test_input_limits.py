"""Inputs that must be a 400 and never a 500: JSON nested too deep or too large, NaN / Infinity, NUL and lone
surrogates in bodies (values and keys) and in query parameters, on the annotator endpoints, the DRF endpoints
and the pages."""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings

from annotate.infra.json_input import JSONInputError, nesting_depth, parse_json
from annotate.models import Response, Study
from tests.annotate.test_api import Annotator, body_for

pytestmark = pytest.mark.django_db

LIMITS = {"max_bytes": 10_000, "max_depth": 5}


def refused(body: bytes | str, **limits) -> JSONInputError:
    with pytest.raises(JSONInputError) as caught:
        parse_json(body, **(LIMITS | limits))
    return caught.value


# ------------------------------------------------------------------ the parser


def test_deep_nesting_is_refused_without_recursion():
    error = refused(b"[" * 50_000, max_bytes=100_000)
    assert error.field == "detail" and "deeper than the limit of 5" in error.message
    # the limit is exact: five levels pass, six do not (objects and arrays both count)
    assert parse_json(b'[{"a": [{"b": [1]}]}]', **LIMITS) == [{"a": [{"b": [1]}]}]
    assert "deeper" in refused(b'[{"a": [{"b": [[1]]}]}]').message


def test_brackets_inside_strings_do_not_count():
    body = json.dumps({"text": '[[[[[[{{{{{{ \\" ]]]'}).encode()
    assert nesting_depth(body) == 1
    assert parse_json(body, **LIMITS) == {"text": '[[[[[[{{{{{{ \\" ]]]'}
    # many brackets side by side are not deep: only nesting counts
    assert parse_json(json.dumps([[1]] * 500).encode(), **LIMITS) == [[1]] * 500


def test_size_limit_names_the_bytes():
    error = refused(json.dumps({"a": "x" * 20_000}).encode())
    assert error.field == "detail" and "larger than the limit of 10000 bytes" in error.message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_naming_the_field(constant):
    error = refused(f'{{"signals": {{"blur": [1, {constant}]}}}}'.encode())
    assert error.field == "signals.blur.1" and f"{constant} is not a JSON number" in error.message


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        (rb'{"a": {"b": "x\u0000y"}}', "a.b", "NUL"),
        (rb'{"a": {"b\u0000": 1}}', "a", "key"),
        (rb'{"a": ["\ud800"]}', "a.0", "lone surrogate (\\ud800)"),
        (rb'{"a": "\udfff tail"}', "a", "lone surrogate (\\udfff)"),
        (b'{"a": "\xed\xa0\x80"}', "a", "lone surrogate"),  # a surrogate encoded as raw bytes
        ('{"a": "\ud800"}', "a", "lone surrogate"),  # a str body with a surrogate in it
    ],
)
def test_unstorable_strings_are_refused_naming_the_field(body, field, words):
    error = refused(body)
    assert error.field == field and words in error.message


def test_storable_lookalikes_pass():
    assert parse_json(rb'{"e": "\ud83d\ude00", "s": "\\u0000"}', **LIMITS) == {
        "e": "\U0001f600",
        "s": "\\u0000",
    }


# ------------------------------------------------------------------ the annotator endpoints


def _submit_raw(annotator: Annotator, assignment: str, raw: bytes | str):
    url = annotator.task["submit_url_template"].replace("ASSIGNMENT", assignment)
    return annotator.client.post(
        url, raw, content_type="application/json", HTTP_X_CSRFTOKEN=annotator.task["csrf_token"]
    )


@pytest.mark.parametrize(
    ("signals_json", "field", "words"),
    [
        ('{"blur": NaN}', "signals.blur", "NaN"),
        ('{"blur": Infinity}', "signals.blur", "Infinity"),
        ('{"paste": "a\\u0000b"}', "signals.paste", "NUL"),
        ('{"paste": "\\udc00"}', "signals.paste", "lone surrogate"),
        ('{"p\\u0000": 1}', "signals", "key"),
    ],
)
def test_submit_refuses_unstorable_signals(study, signals_json, field, words):
    annotator = Annotator(study)
    data = annotator.next().json()
    body = json.dumps(body_for(data["item"]["payload"]) | {"signals": "SIGNALS"})
    response = _submit_raw(annotator, data["assignment"], body.replace('"SIGNALS"', signals_json))
    assert response.status_code == 400, response.content
    assert words in response.json()["errors"][field][0]
    assert not Response.objects.exists()
    # the same answer with storable signals is taken
    good = _submit_raw(annotator, data["assignment"], body.replace('"SIGNALS"', '{"blur": 1}'))
    assert good.status_code == 201, good.content


def test_submit_refuses_deep_and_huge_bodies(study, settings):
    annotator = Annotator(study)
    data = annotator.next().json()
    deep = _submit_raw(annotator, data["assignment"], b"[" * 50_000)
    assert deep.status_code == 400
    assert f"deeper than the limit of {settings.HATLAB_JSON_MAX_DEPTH}" in deep.json()["errors"]["detail"][0]
    answer = body_for(data["item"]["payload"])
    huge = json.dumps(answer | {"pad": "x" * settings.HATLAB_SUBMISSION_MAX_BYTES}).encode()
    too_big = _submit_raw(annotator, data["assignment"], huge)
    assert too_big.status_code == 400
    assert f"{settings.HATLAB_SUBMISSION_MAX_BYTES} bytes" in too_big.json()["errors"]["detail"][0]
    assert not Response.objects.exists()


def test_deep_body_without_a_session_is_a_400(study):
    """No worker in the session, no login: the body is read (and refused) before the assignment is looked up."""
    response = Client().post(
        f"/api/work/assignments/{study.pk:08d}-0000-4000-8000-000000000000/submit/",
        b"[" * 50_000,
        content_type="application/json",
    )
    assert response.status_code == 400 and "deeper" in response.json()["errors"]["detail"][0]


def test_submission_limits_are_settings(study):
    annotator = Annotator(study)
    data = annotator.next().json()
    body = body_for(data["item"]["payload"]) | {"signals": {"a": {"b": {"c": 1}}}}
    with override_settings(HATLAB_JSON_MAX_DEPTH=2):
        shallow = _submit_raw(annotator, data["assignment"], json.dumps(body))
    assert shallow.status_code == 400 and "limit of 2" in shallow.json()["errors"]["detail"][0]
    with override_settings(HATLAB_SUBMISSION_MAX_BYTES=100):
        small = _submit_raw(annotator, data["assignment"], json.dumps(body))
    assert small.status_code == 400 and "limit of 100 bytes" in small.json()["errors"]["detail"][0]
    assert _submit_raw(annotator, data["assignment"], json.dumps(body)).status_code == 201


# ------------------------------------------------------------------ the DRF endpoints


@pytest.fixture
def api(researcher) -> Client:
    client = Client()
    client.force_login(researcher)
    return client


def _post_json(client: Client, url: str, raw: bytes | str):
    return client.post(url, raw, content_type="application/json")


def test_drf_refuses_deep_and_huge_bodies(api, settings):
    deep = _post_json(api, "/api/studies/", b'{"name": ' + b"[" * 50_000)
    assert deep.status_code == 400
    assert f"limit of {settings.HATLAB_JSON_MAX_DEPTH}" in deep.json()["detail"]
    settings.HATLAB_JSON_MAX_BYTES = 50
    huge = _post_json(api, "/api/datasets/", json.dumps({"name": "n" * 60}))
    assert huge.status_code == 400 and "limit of 50 bytes" in huge.json()["detail"]
    assert not Study.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ('"config": {"mode": NaN}', "config.mode", "NaN"),
        ('"provider_config": {"x": -Infinity}', "provider_config.x", "-Infinity"),
        ('"instructions": "read \\u0000 this"', "instructions", "NUL"),
        ('"config": {"labels": ["a", "\\ud801"]}', "config.labels.1", "lone surrogate"),
        ('"provider_config": {"\\u0000": 1}', "provider_config", "key"),
    ],
)
def test_drf_refuses_unstorable_values_naming_the_field(api, dataset, body, field, words):
    raw = f'{{"name": "s", "dataset": {dataset.pk}, {body}}}'
    response = _post_json(api, "/api/studies/", raw)
    assert response.status_code == 400, response.content
    assert words in response.json()[field][0]
    assert not Study.objects.exists()


def test_drf_deep_body_without_login_is_a_400_or_403_never_a_500():
    response = _post_json(Client(), "/api/model-runs/", b"[" * 50_000)
    assert response.status_code in (400, 403)


# ------------------------------------------------------------------ query parameters


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/api/explanations/?method=%00", "method"),
        ("/api/explanations/?target=a%00b", "target"),
        ("/api/predictions/?model_run=1%00", "model_run"),
        ("/api/jobs/?x=%00", "x"),
        ("/api/explanations/?%00=1", "'\\x00'"),
    ],
)
def test_nul_in_a_query_is_a_400_naming_the_parameter(api, url, name):
    response = api.get(url)
    assert response.status_code == 400, response.content
    assert "NUL" in response.json()[name][0]


def test_nul_in_a_query_elsewhere(api, study):
    similarity = api.get(f"/api/dashboards/studies/{study.uid}/similarity/?select=1:%00")
    assert similarity.status_code == 400 and "NUL" in similarity.json()["select"][0]
    annotator = Client().post(f"/api/work/{study.uid}/next/?q=%00", content_type="application/json")
    assert annotator.status_code == 400 and "NUL" in annotator.json()["errors"]["q"][0]
    page = api.get("/?next=%00")
    assert page.status_code == 400 and page["Content-Type"].startswith("text/plain")
    assert b"next" in page.content and b"\x00" not in page.content
    # the same queries without the NUL are not refused
    assert api.get("/api/explanations/?method=lime").status_code == 200
    assert api.get("/?next=x").status_code != 400
