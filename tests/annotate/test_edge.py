"""Sign-in and the edge of the app, as an attacker meets them: the Django admin's sign-in is throttled; API calls
that sign in correctly do not use up the account's sign-in budget; forwarded headers are believed from our proxy
only; bodies past the caps get 413 before anything reads them; every page carries the Content-Security-Policy."""

from __future__ import annotations

import base64
import json

import pytest
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse

from annotate.infra import throttle
from annotate.infra.edge import BodySizeLimit, TrustedProxyHeaders
from tests.annotate.conftest import PASSWORD
from tests.annotate.test_api import Annotator

pytestmark = pytest.mark.django_db


def basic(username: str, password: str, **extra):
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Basic {token}", **extra)


def test_the_admin_sign_in_is_throttled(settings, researcher):
    """The attack: guess the password at /admin/login/, where the app's own sign-in throttle did not reach."""
    settings.HATLAB_THROTTLE_LOGIN_ACCOUNT = (3, 300)
    client = Client()
    for n in range(3):
        wrong = client.post("/admin/login/", {"username": "rita", "password": f"guess{n}"})
        assert wrong.status_code == 200  # the form again
    refused = client.post("/admin/login/", {"username": "rita", "password": PASSWORD})
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 300
    assert "_auth_user_id" not in client.session
    assert Client().get("/admin/login/").status_code == 200  # looking at the form costs nothing


def test_successful_api_calls_do_not_lock_the_account(settings, researcher):
    """Ten API calls with the right password used to count as ten failed sign-ins and lock the account."""
    settings.HATLAB_THROTTLE_LOGIN_ACCOUNT = (3, 300)
    settings.HATLAB_THROTTLE_LOGIN_IP = (5, 300)
    assert [basic("rita", PASSWORD).status_code for _ in range(12)] == [200] * 12
    # failures still count, and past the limit even the right password is not tried
    assert [basic("rita", "wrong").status_code for _ in range(3)] == [403, 403, 403]
    refused = basic("rita", PASSWORD)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


def test_a_spoofed_forwarded_address_is_ignored_from_anyone_but_the_proxy(settings, researcher):
    """The attack: a client that reaches the server directly writes a new X-Forwarded-For on every guess."""
    settings.BEHIND_TLS_PROXY = True
    settings.TRUSTED_PROXIES = ["172.31.250.10"]
    settings.HATLAB_THROTTLE_LOGIN_IP = (3, 300)
    statuses = [
        Client(REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
        .post(reverse("login"), {"username": f"u{n}", "password": "x"})
        .status_code
        for n in range(5)
    ]
    assert statuses == [200, 200, 200, 429, 429]  # counted per the peer, whatever it wrote
    # through the proxy the address it sets counts
    through = Client(REMOTE_ADDR="172.31.250.10", HTTP_X_FORWARDED_FOR="203.0.113.99")
    assert through.post(reverse("login"), {"username": "v", "password": "x"}).status_code == 200


def test_forwarded_headers_are_dropped_unless_the_proxy_sent_them(settings):
    settings.BEHIND_TLS_PROXY = True
    settings.TRUSTED_PROXIES = ["172.31.250.0/24"]
    seen: dict = {}

    def view(request):
        seen.update(
            secure=request.is_secure(), address=throttle.client_address(request), meta=dict(request.META)
        )
        return HttpResponse()

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    spoofed = {"HTTP_X_FORWARDED_FOR": "10.0.0.1", "HTTP_X_FORWARDED_PROTO": "https"}
    factory = RequestFactory()
    TrustedProxyHeaders(view)(factory.get("/", REMOTE_ADDR="198.51.100.7", **spoofed))
    assert seen["address"] == "198.51.100.7" and not seen["secure"]
    assert "HTTP_X_FORWARDED_FOR" not in seen["meta"]
    TrustedProxyHeaders(view)(factory.get("/", REMOTE_ADDR="172.31.250.10", **spoofed))
    assert seen["address"] == "10.0.0.1" and seen["secure"]


def test_an_anonymous_200_mb_body_is_refused_before_it_is_read(settings, researcher):
    """The attack: an anonymous 200 MB POST. It is refused by its Content-Length; nothing reads the body (the
    payload behind the header is a few bytes, and reading it would fail)."""
    declared = {"CONTENT_LENGTH": str(200 * 1024 * 1024)}
    for path in (reverse("login"), "/admin/login/", "/api/studies/"):
        refused = Client().post(path, b"{}", content_type="application/json", **declared)
        assert refused.status_code == 413, path
    signed_in = Client()
    signed_in.force_login(researcher)
    assert (
        signed_in.post("/api/studies/", b"{}", content_type="application/json", **declared).status_code == 413
    )


def test_the_anonymous_cap_is_lower_than_a_researchers(settings, researcher, study):
    settings.HATLAB_MAX_ANONYMOUS_BODY_BYTES = 64 * 1024
    body = json.dumps({"pad": "x" * 100_000})
    annotator = Annotator(study)
    refused = annotator.client.post(
        annotator.task["next_url"], body, content_type="application/json",
        HTTP_X_CSRFTOKEN=annotator.task["csrf_token"],
    )  # fmt: skip
    assert refused.status_code == 413
    signed_in = Client()
    signed_in.force_login(researcher)
    # the same size from a signed-in researcher reaches the view (which answers for itself)
    assert signed_in.post("/api/studies/", body, content_type="application/json").status_code != 413


def test_the_body_limit_reads_only_the_declared_length(settings):
    settings.HATLAB_MAX_BODY_BYTES = 10
    settings.HATLAB_MAX_ANONYMOUS_BODY_BYTES = 5
    factory = RequestFactory()
    reached: list = []
    limit = BodySizeLimit(lambda r: reached.append(r) or HttpResponse())
    request = factory.post("/x", b"123456", content_type="text/plain")
    assert limit(request).status_code == 413 and not reached
    request = factory.post("/x", b"1234", content_type="text/plain")
    assert limit(request).status_code == 200 and reached


@pytest.mark.parametrize("path", ["/login/", "/admin/login/", "/api/schema/", "/no/such/page/", "/"])
def test_every_page_carries_the_content_security_policy(client, path):
    policy = client.get(path)["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy


def test_the_annotator_page_keeps_its_frame_ancestors(study, settings):
    annotator = Annotator(study)
    page = annotator.client.get(reverse("work-entry", args=[study.uid]))
    policy = page["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'self' " + " ".join(settings.HATLAB_FRAME_ANCESTORS) in policy
    assert "frame-ancestors 'none'" not in policy
