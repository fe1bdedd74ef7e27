"""Inputs that must be a 400 and never a 500: JSON nested too deep or too large, NaN / Infinity, NUL and lone
surrogates in bodies (values and keys) and in query parameters, on the annotator endpoints, the DRF endpoints
and the pages."""

from __future__ import annotations

import contextlib
import json
import time

import pytest
from django.test import Client, override_settings

from annotate.infra.json_input import JSONInputError, nesting_depth, parse_json
from annotate.models import ModelRun, Response, Study
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


@pytest.mark.parametrize("sign", ["", "-"])
def test_numbers_beyond_a_float_are_refused_naming_the_field(sign):
    """``1e400`` decodes to infinity, which jsonb refuses: a 400 naming where it stood, not a 500 on save."""
    error = refused(f'{{"signals": {{"blur": [1, {sign}1e400]}}}}'.encode())
    assert error.field == "signals.blur.1" and f"{sign}1e400 is too large" in error.message
    assert parse_json(b'{"a": 1.7e308, "b": -2.5e-300}', **LIMITS) == {"a": 1.7e308, "b": -2.5e-300}


def test_utf16_bodies_are_scanned_as_text():
    """A UTF-16 body is read as text before its brackets are counted, so its bytes cannot hide nesting."""
    deep = ("[" * 6 + "]" * 6).encode("utf-16")
    assert "deeper" in refused(deep).message
    assert parse_json('{"a": ["\u5b22"]}'.encode("utf-16-le"), **LIMITS) == {"a": ["\u5b22"]}


# Bodies built to make a check slow: each is ``unit`` repeated, inside a valid or broken frame.
HOSTILE = {
    "escaped quotes in an unterminated string": (b"[" * 40 + b'"', b'\\"', b""),
    "escaped quotes in strings": (b"[", b'"\\"\\"",', b"0]"),
    "backslashes": (b'["', b"\\\\", b'"]'),
    "bare quotes": (b"[" * 40, b'"', b""),
    "flat brackets": (b"[", b"[],", b"[]]"),
    "NaN everywhere": (b"[", b"NaN,", b"0]"),
    "NUL escapes": (b'["', b"\\u0000", b'"]'),
    "lone surrogates": (b"[", b'"\\ud800",', b"0]"),
    "huge numbers": (b"[", b"1e400,", b"0]"),
}


def _hostile(parts: tuple[bytes, bytes, bytes], size: int) -> bytes:
    head, unit, tail = parts
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def _best_seconds(bodies: list[bytes]) -> float:
    def once() -> float:
        start = time.perf_counter()
        for body in bodies:
            with contextlib.suppress(JSONInputError):
                parse_json(body, max_bytes=4 * 1024 * 1024, max_depth=32)
        return time.perf_counter() - start

    return min(once() for _ in range(5))


def _linear_ratio(shape: str) -> float:
    """What one 128 KB body costs against sixteen of 8 KB: about 1 when the checks are linear, about 16
    when one is quadratic. The least of up to five tries, so that a busy machine does not fail a linear
    check (a quadratic one stays high on every try)."""
    small = [_hostile(HOSTILE[shape], 8 * 1024)] * 16
    big = [_hostile(HOSTILE[shape], 128 * 1024)]
    ratios = []
    for _ in range(5):
        ratios.append(_best_seconds(big) / _best_seconds(small))
        if ratios[-1] < 2:
            break
    return min(ratios)


@pytest.mark.parametrize("shape", list(HOSTILE))
def test_checks_are_linear_in_the_body_on_hostile_bodies(shape):
    """The old depth scan was quadratic: 31 s on 80 KB of escaped quotes."""
    ratio = _linear_ratio(shape)
    assert ratio < 5, f"{shape}: one body of 128 KB cost {ratio:.1f} times sixteen of 8 KB"


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
        ('{"blur": 1e400}', "signals.blur", "1e400 is too large"),
        ('{"blur": [-1e400]}', "signals.blur.0", "-1e400 is too large"),
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


@pytest.fixture
def parses(monkeypatch) -> list[int]:
    """The sizes of the bodies the endpoints hand to :func:`parse_json`, as they happen."""
    seen: list[int] = []

    def spy(body, **limits):
        seen.append(len(body))
        return parse_json(body, **limits)

    monkeypatch.setattr("annotate.api.work.parse_json", spy)
    monkeypatch.setattr("annotate.api.parsers.parse_json", spy)
    return seen


HOSTILE_BODY = b"[" * 40 + b'"' + b'\\"' * 40_000


def test_submit_without_a_worker_is_refused_before_the_body_is_read(study, parses):
    """No worker in the session: a 403 before the body is parsed, so a hostile body costs nothing."""
    response = Client().post(
        f"/api/work/assignments/{study.pk:08d}-0000-4000-8000-000000000000/submit/",
        HOSTILE_BODY,
        content_type="application/json",
    )
    assert response.status_code == 403 and "no worker" in response.json()["errors"]["worker"][0]
    assert parses == []
    # a worker's own session has its body read (and a deep one refused)
    annotator = Annotator(study)
    data = annotator.next().json()
    deep = _submit_raw(annotator, data["assignment"], b"[" * 50_000)
    assert deep.status_code == 400 and "deeper" in deep.json()["errors"]["detail"][0]
    assert parses == [50_000]


def _csrf_client(user) -> Client:
    """A browser session with CSRF checks on, as a real one has (the test client turns them off)."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.cookies["csrftoken"] = "a" * 32
    return client


def test_drf_checks_permissions_before_the_body_is_read(annotator_user, other_researcher, study, parses):
    """Signed in, CSRF token and all, but not allowed: refused before any parser runs (DRF's own session
    check used to parse the body while looking for a CSRF token)."""
    annotator = _csrf_client(annotator_user)
    headers = {"HTTP_X_CSRFTOKEN": "a" * 32}
    not_researcher = annotator.post("/api/studies/", HOSTILE_BODY, content_type="application/json", **headers)
    assert not_researcher.status_code == 403 and parses == []
    run = ModelRun.objects.create(name="r", owner=study.owner, dataset=study.dataset, architecture="cnn")
    stranger = _csrf_client(other_researcher)
    explain = f"/api/model-runs/{run.pk}/explain/"
    not_owner = stranger.post(explain, HOSTILE_BODY, content_type="application/json", **headers)
    assert not_owner.status_code == 404 and parses == []
    # an allowed request is read, and its hostile body refused
    owner = _csrf_client(study.owner)
    mine = owner.post(explain, HOSTILE_BODY, content_type="application/json", **headers)
    assert mine.status_code == 400 and "deeper" in mine.json()["detail"] and parses == [len(HOSTILE_BODY)]
    # and without the CSRF token the session is refused, still without reading the body
    no_token = owner.post("/api/studies/", b"[" * 50_000, content_type="application/json")
    assert no_token.status_code == 403 and "CSRF" in no_token.json()["detail"]
    assert parses == [len(HOSTILE_BODY)]


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
