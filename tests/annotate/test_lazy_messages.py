"""The message storage is made on first use: a request that never uses it (the annotator API) costs none,
and a message added in one request is still shown by the next."""

from __future__ import annotations

import pytest
from django.contrib import messages
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpResponse, JsonResponse
from django.test import RequestFactory

from annotate.infra import lazy_messages
from annotate.infra.lazy_messages import LazyMessages

pytestmark = pytest.mark.django_db


def through(view, cookies: dict | None = None):
    """Run ``view`` behind the session and message middleware, as the settings order them."""
    request = RequestFactory().get("/")
    request.COOKIES.update(cookies or {})
    return SessionMiddleware(LazyMessages(view))(request)


@pytest.fixture
def made(monkeypatch) -> list:
    """Each message storage made, in order."""
    storages = []

    real = lazy_messages.default_storage

    def counting(request):
        storages.append(real(request))
        return storages[-1]

    monkeypatch.setattr(lazy_messages, "default_storage", counting)
    return storages


def test_a_request_that_never_uses_messages_makes_no_storage(made):
    response = through(lambda request: JsonResponse({"ok": True}))
    assert response.status_code == 200 and made == []
    assert "messages" not in response.cookies


def test_a_message_added_is_shown_by_the_next_request(made):
    def add(request):
        messages.success(request, "Study <b>started</b>.")
        return HttpResponse(status=302)

    first = through(add)
    assert len(made) == 1 and "messages" in first.cookies  # stored in the cookie, as Django's middleware does

    shown = []

    def show(request):
        shown.extend(str(m) for m in messages.get_messages(request))
        return HttpResponse("page")

    second = through(show, {"messages": first.cookies["messages"].value})
    assert shown == ["Study <b>started</b>."]
    assert second.cookies["messages"].value == ""  # read once: the cookie is cleared
