"""A database or job-queue outage answers 503 with ``Retry-After``, never a 500 page.

While PostgreSQL restarts, or the role's connection limit is full, a request fails with Django's
``OperationalError`` / ``InterfaceError``; while Redis is down, a send to it fails with kombu's or
redis-py's connection errors. None of these is the request's fault, and all pass: the answer is
``503 Service Unavailable`` with ``Retry-After`` (``HATLAB_RETRY_AFTER_S``, RFC 9110 §10.2.3) and, on
the API (``/api/`` or a client that accepts JSON), a JSON body ``{"detail": ..., "retry_after": s}``;
elsewhere a plain page. The task pages' client retries such an answer with the same body (and so the
same ``submission_key``: stored once).

:class:`OutageMiddleware` catches what views raise; :func:`server_error` (the ``handler500``) catches
what fails outside a view (a session saved in a middleware), so both paths answer the same.
"""

from __future__ import annotations

import logging
import sys
from html import escape

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

DATABASE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
QUEUE_ERRORS: tuple[type[Exception], ...] = (BrokerOperationalError, RedisConnectionError, RedisTimeoutError)
OUTAGE_ERRORS = DATABASE_ERRORS + QUEUE_ERRORS


def retry_after() -> int:
    return max(1, int(getattr(settings, "HATLAB_RETRY_AFTER_S", 2)))


def wants_json(request: HttpRequest) -> bool:
    accept = request.headers.get("Accept", "")
    return request.path.startswith("/api/") or "application/json" in accept


def outage_response(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """The 503 for ``exc`` (an outage error), JSON or a plain page as the request prefers."""
    what = "database" if isinstance(exc, DATABASE_ERRORS) else "job queue"
    seconds = retry_after()
    detail = f"The {what} is briefly unavailable; nothing was lost. Try again in {seconds} s."
    log.warning("%s %s answered 503 (%s): %s", request.method, request.path, what, exc)
    if wants_json(request):
        response: HttpResponse = JsonResponse(
            {"detail": detail, "retry_after": seconds, "unavailable": what}, status=503
        )
    else:
        response = HttpResponse(
            "<!doctype html><html lang=en><meta charset=utf-8><title>Briefly unavailable</title>"
            f"<h1>Briefly unavailable</h1><p>{escape(detail)}</p></html>",
            status=503,
            content_type="text/html; charset=utf-8",
        )
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    return response


class OutageMiddleware:
    """Turn an outage error raised by a view into :func:`outage_response`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if isinstance(exc, OUTAGE_ERRORS):
            return outage_response(request, exc)
        return None


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: an outage error raised outside a view answers 503 too; anything else is the
    plain 500 it was (no template, so it renders while the database is away)."""
    exc = sys.exc_info()[1]
    if isinstance(exc, OUTAGE_ERRORS):
        return outage_response(request, exc)
    if wants_json(request):
        return JsonResponse({"detail": "Server error."}, status=500)
    return HttpResponseServerError(
        "<!doctype html><html lang=en><meta charset=utf-8><title>Server error</title><h1>Server error</h1></html>"
    )
