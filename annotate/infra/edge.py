"""What every request meets at the edge of the app: forwarded headers believed only from our own proxy, bodies
capped before anything reads them, and a Content-Security-Policy on every response.

* :class:`TrustedProxyHeaders` drops ``X-Forwarded-For`` and ``X-Forwarded-Proto`` unless the peer is one of
  ``DJANGO_TRUSTED_PROXIES`` (docker-compose: its nginx), so a client that reaches the server directly can
  neither pose as another address to the throttles nor as HTTPS.
* :class:`BodySizeLimit` answers 413 to a body over ``HATLAB_MAX_BODY_BYTES`` (an import's cap and room for
  its form), and over ``HATLAB_MAX_ANONYMOUS_BODY_BYTES`` for a request of nobody signed in (the annotator API
  and the sign-in forms need little); it reads ``Content-Length`` only, before any view or middleware reads
  the body. The proxy caps bodies too (``client_max_body_size``); Django's own ``DATA_UPLOAD_MAX_*``
  settings cap what a form may hold.
* :class:`ContentSecurityPolicy` sends ``HATLAB_CSP`` (scripts, styles, images and connections from this
  site only, no plugins) with ``form-action`` naming this site and the hosts a finished MTurk page may post
  its externalSubmit form to (``HATLAB_MTURK_SUBMIT_HOSTS``, as the MTurk adapter reads it: MTurk's worker
  sites, or a local stand-in in tests); a page that may be framed by a crowd platform
  (:func:`annotate.views.framing.crowd_frameable`) keeps its ``frame-ancestors``, every other page gets
  ``frame-ancestors 'none'``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse

FORWARDED = ("HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST", "HTTP_X_REAL_IP")


def trusted_proxy(peer: str) -> bool:
    """Whether ``peer`` is one of our proxies (``DJANGO_TRUSTED_PROXIES``: addresses or networks)."""
    return _trusted(tuple(settings.TRUSTED_PROXIES), peer)


@lru_cache(maxsize=1024)
def _trusted(networks: tuple[str, ...], peer: str) -> bool:
    """:func:`trusted_proxy` for these networks, kept per peer: asked twice on every request (the forwarded
    headers, the throttles' client address), and parsing addresses costs more than the rest of it."""
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(net, strict=False) for net in networks)


class TrustedProxyHeaders:
    """Forget the forwarded headers of a request that did not come through our proxy."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not (settings.BEHIND_TLS_PROXY and trusted_proxy(request.META.get("REMOTE_ADDR", ""))):
            for header in FORWARDED:
                request.META.pop(header, None)
        return self.get_response(request)


def _declared_length(request: HttpRequest) -> int:
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def _signed_in(request: HttpRequest) -> bool:
    """Whether the request may be a signed-in user's: a session user, or API credentials still to be checked
    (DRF checks them before it reads the body)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return True
    return request.path.startswith("/api/") and bool(request.META.get("HTTP_AUTHORIZATION"))


def too_large(limit: int, who: str) -> HttpResponse:
    return HttpResponse(
        f"The request body is larger than the {limit} bytes allowed {who}.\n",
        status=413,
        content_type="text/plain; charset=utf-8",
    )


class BodySizeLimit:
    """413 for a body over the cap, before anything reads it (after the authentication middleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = _declared_length(request)
        if length > settings.HATLAB_MAX_BODY_BYTES:
            return too_large(settings.HATLAB_MAX_BODY_BYTES, "for any request")
        if length > settings.HATLAB_MAX_ANONYMOUS_BODY_BYTES and not _signed_in(request):
            return too_large(settings.HATLAB_MAX_ANONYMOUS_BODY_BYTES, "without signing in")
        return self.get_response(request)


def _frame_ancestors(response: HttpResponse) -> str:
    """The ``frame-ancestors`` directive the view set (a page a crowd platform may frame), else ``'none'``."""
    for directive in response.get("Content-Security-Policy", "").split(";"):
        if directive.strip().startswith("frame-ancestors"):
            return directive.strip()
    return "frame-ancestors 'none'"


def _form_action() -> str:
    """Forms go to this site, or to where MTurk's externalSubmit is posted (``HATLAB_MTURK_SUBMIT_HOSTS``,
    the MTurk adapter's ``submit_hosts``)."""
    return " ".join(["form-action 'self'", *(h.rstrip("/") for h in settings.HATLAB_MTURK_SUBMIT_HOSTS)])


class ContentSecurityPolicy:
    """Send ``HATLAB_CSP`` with every response, with ``form-action`` and the page's own ``frame-ancestors``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response["Content-Security-Policy"] = (
            f"{settings.HATLAB_CSP}; {_form_action()}; {_frame_ancestors(response)}"
        )
        return response
