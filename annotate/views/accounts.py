"""Signing in and out: Django's views, with sign-in attempts throttled and the worker cookie cleared on the
way out."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponse
from django.shortcuts import render

from annotate.handout.workers import forget_workers
from annotate.infra import throttle


class LoginView(auth_views.LoginView):
    """The sign-in page; each attempt (a POST) counts per client address and per account name, and past
    either limit the form is shown again with a 429 and ``Retry-After``, without checking the password."""

    template_name = "annotate/login.html"

    def post(self, request, *args, **kwargs):
        wait = throttle.login_attempt(request, request.POST.get("username", ""))
        if wait is None:
            return super().post(request, *args, **kwargs)
        # an unbound form: binding it would check the password, the very work the throttle refuses
        form = self.get_form_class()(request)
        context = self.get_context_data(
            form=form, throttled=f"Too many sign-in attempts. Try again in {wait} s."
        )
        response = render(request, self.template_name, context, status=429)
        response["Retry-After"] = str(wait)
        return response


def admin_login(request):
    """The Django admin's sign-in page with the sign-in throttle: each attempt (a POST) counts per client
    address and per account name, as the login page's; past either limit a 429 with ``Retry-After``, and the
    password is not checked."""
    if request.method == "POST":
        wait = throttle.login_attempt(request, request.POST.get("username", ""))
        if wait is not None:
            response = HttpResponse(
                f"Too many sign-in attempts. Try again in {wait} s.\n", status=429, content_type="text/plain"
            )
            response["Retry-After"] = str(wait)
            return response
    return admin.site.login(request)


class LogoutView(auth_views.LogoutView):
    """Sign out, and forget the annotator identities this browser held (the worker cookie): the
    ``user_logged_out`` signal cannot reach the response, this view can."""

    def post(self, request, *args, **kwargs):
        response = super().post(request, *args, **kwargs)
        forget_workers(response)
        return response
