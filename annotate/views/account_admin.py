"""The admin's accounts page: the lists of researchers, annotator accounts and invited workers
(:mod:`annotate.accounts.roster`); inviting a researcher and resetting a password, each of which shows the
one-time set-password link (:mod:`annotate.accounts.links`); switching accounts off and on
(:mod:`annotate.accounts.activation`); revoking an invite the way the study page does. Every action is a
POST (CSRF-checked) for admins only; the set-password page is open to whoever holds a valid link."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from annotate.access import admin_required
from annotate.accounts.activation import ActivationError, check_may_manage, deactivate, reactivate
from annotate.accounts.links import SentLink, invite_researcher, link_hours, reset_link
from annotate.accounts.roster import LISTS, page_of
from annotate.crowd.providers.local.adapter import revoke_invite
from annotate.models import Invite

User = get_user_model()


def _list_url(show: str = "researchers") -> str:
    return f"{reverse('account-list')}?show={show}"


def _page(request, *, form: dict | None = None, errors: dict | None = None, status: int = 200):
    show = request.GET.get("show", "researchers")
    show = show if show in LISTS else "researchers"
    page, rows = page_of(show, request.GET.get("page"))
    context = {"lists": LISTS, "show": show, "page": page, "rows": rows, "form": form or {}, "errors": errors}
    context["reset_hours"] = link_hours()
    return render(request, "annotate/accounts/list.html", context, status=status)


@admin_required
@require_GET
def account_list(request):
    """One list a page at a time (``?show=researchers|annotators|invites&page=N``) and the invite form."""
    return _page(request)


def _link_page(request, sent: SentLink, what: str):
    context = {
        "sent": sent,
        "link": request.build_absolute_uri(sent.path),
        "what": what,
        "reset_hours": link_hours(),
    }
    return never_cache(lambda r: render(r, "annotate/accounts/link.html", context))(request)


@admin_required
@require_POST
def account_invite(request):
    """Make a researcher account and show its set-password link (also mailed when an e-mail is given)."""
    username, email = request.POST.get("username", ""), request.POST.get("email", "")
    try:
        sent = invite_researcher(username, email, absolute=request.build_absolute_uri("/")[:-1])
    except ValidationError as exc:
        errors = {name: " ".join(texts) for name, texts in exc.message_dict.items()}
        return _page(request, form={"username": username, "email": email}, errors=errors, status=400)
    return _link_page(request, sent, "invite")


def _manageable(request, pk: int):
    """The account ``pk`` when the signed-in admin may manage it, else ``None`` with the reason as a message
    (:func:`check_may_manage`)."""
    user = get_object_or_404(User, pk=pk)
    try:
        check_may_manage(request.user, user)
    except ActivationError as exc:
        messages.error(request, str(exc))
        return None
    return user


@admin_required
@require_POST
def account_reset(request, pk: int):
    """A fresh set-password link for an account; its old password and sessions stop working at once."""
    user = _manageable(request, pk)
    if user is None:
        return redirect(_list_url())
    return _link_page(request, reset_link(user, absolute=request.build_absolute_uri("/")[:-1]), "reset")


@admin_required
@require_POST
def account_deactivate(request, pk: int):
    user = get_object_or_404(User, pk=pk)
    try:
        changed = deactivate(request.user, user)
    except ActivationError as exc:
        messages.error(request, str(exc))
    else:
        name = user.get_username()
        if changed:
            messages.success(
                request, f"{name} is deactivated: they cannot sign in, and their sessions ended."
            )
        else:
            messages.info(request, f"{name} was already deactivated.")
    return redirect(_list_url(request.POST.get("show", "researchers")))


@admin_required
@require_POST
def account_reactivate(request, pk: int):
    user = _manageable(request, pk)
    if user is None:
        return redirect(_list_url(request.POST.get("show", "researchers")))
    if reactivate(user):
        messages.success(request, f"{user.get_username()} is active again and can sign in.")
    else:
        messages.info(request, f"{user.get_username()} was already active.")
    return redirect(_list_url(request.POST.get("show", "researchers")))


@admin_required
@require_POST
def account_invite_revoke(request, pk: int):
    """Revoke an invited worker's link, as the study page's revoke does (:func:`revoke_invite`)."""
    invite = get_object_or_404(Invite.objects.select_related("study"), pk=pk)
    if revoke_invite(invite):
        messages.success(
            request,
            f"Invite {invite.invitee} of {invite.study.name} revoked: its link no longer opens the study.",
        )
    else:
        messages.info(request, f"Invite {invite.invitee} was already revoked.")
    return redirect(_list_url("invites"))


class SetPasswordView(auth_views.PasswordResetConfirmView):
    """Django's set-password page for a one-time link (it moves the token into the session and off the
    address bar before showing the form); an invalid, used or expired link gets a page saying what to do."""

    template_name = "annotate/accounts/set_password.html"
    success_url = reverse_lazy("login")

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "reset_hours": link_hours()}

    def form_valid(self, form):
        response = super().form_valid(form)
        messages.success(self.request, "Your password is set: sign in with it.")
        return response
