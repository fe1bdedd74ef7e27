"""The API's authentication classes.

* HTTP Basic, its failures counted by the sign-in throttle (:func:`annotate.infra.throttle.login_attempt`), as
  the login page's attempts are: otherwise it is a second door for guessing passwords. Only a failed password
  counts: every API call carries the password again, so counting successes would lock an account after its
  tenth call. Past the limit the password is not even tried.
* The session, whose CSRF check runs on Django's request rather than DRF's: DRF's ``request.POST`` parses the
  body with the view's parsers, so its own check would read a JSON body before the view's permissions are
  checked. Django's reads nothing of a JSON body (the token comes from the ``X-CSRFToken`` header), so a
  body reaches :func:`annotate.infra.json_input.parse_json` only in a view whose permissions passed.
"""

from __future__ import annotations

from drf_spectacular.authentication import BasicScheme, SessionScheme
from rest_framework.authentication import BasicAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed, Throttled

from annotate.infra import throttle


class ThrottledBasicAuthentication(BasicAuthentication):
    def authenticate_credentials(self, userid, password, request=None):
        if request is None:
            return super().authenticate_credentials(userid, password, request)
        wait = throttle.login_refused(request, userid)
        if wait is not None:
            raise Throttled(wait=wait, detail=f"Too many sign-in attempts. Try again in {wait} s.")
        try:
            return super().authenticate_credentials(userid, password, request)
        except AuthenticationFailed:
            throttle.login_attempt(request, userid)
            raise


class ThrottledBasicScheme(BasicScheme):
    """The OpenAPI description of it: HTTP Basic, as DRF's."""

    target_class = "annotate.api.authentication.ThrottledBasicAuthentication"


class SessionCSRFAuthentication(SessionAuthentication):
    """DRF's session authentication, its CSRF check run on Django's request (see the module docstring)."""

    def enforce_csrf(self, request) -> None:
        super().enforce_csrf(getattr(request, "_request", request))


class SessionCSRFScheme(SessionScheme):
    """The OpenAPI description of :class:`SessionCSRFAuthentication`: the session cookie, as DRF's own."""

    target_class = "annotate.api.authentication.SessionCSRFAuthentication"
