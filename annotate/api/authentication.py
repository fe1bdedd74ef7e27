"""The API's HTTP Basic authentication, with each attempt counted by the sign-in throttle
(:func:`annotate.infra.throttle.login_attempt`), as the login page's are: otherwise it is a second door for
guessing passwords."""

from __future__ import annotations

from drf_spectacular.authentication import BasicScheme
from rest_framework.authentication import BasicAuthentication
from rest_framework.exceptions import Throttled

from annotate.infra import throttle


class ThrottledBasicAuthentication(BasicAuthentication):
    def authenticate_credentials(self, userid, password, request=None):
        wait = throttle.login_attempt(request, userid) if request is not None else None
        if wait is not None:
            raise Throttled(wait=wait, detail=f"Too many sign-in attempts. Try again in {wait} s.")
        return super().authenticate_credentials(userid, password, request)


class ThrottledBasicScheme(BasicScheme):
    """The OpenAPI description of it: HTTP Basic, as DRF's."""

    target_class = "annotate.api.authentication.ThrottledBasicAuthentication"
