"""Researchers invited by an admin, and one-time links to set a password.

A link is Django's password-reset link: the user's id (base 64) and a token of
:data:`django.contrib.auth.tokens.default_token_generator`, an HMAC over the user's password hash, last
sign-in and the time it was made. Setting a password changes the hash, so a link works once; it expires
after ``PASSWORD_RESET_TIMEOUT`` seconds. The set-password page is Django's
:class:`~django.contrib.auth.views.PasswordResetConfirmView` with :class:`~django.contrib.auth.forms.SetPasswordForm`.
"""

from __future__ import annotations

import smtplib
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotate.access import RESEARCHER_GROUP

User = get_user_model()


@dataclass(frozen=True)
class SentLink:
    """A set-password link made for ``user``: its path, and whether it was also mailed (``mail_error`` says
    why not when sending failed)."""

    user: AbstractBaseUser
    path: str
    mailed: bool
    mail_error: str = ""


def link_hours() -> int:
    """How many hours a set-password link works (``PASSWORD_RESET_TIMEOUT``, at least one)."""
    return max(1, settings.PASSWORD_RESET_TIMEOUT // 3600)


def set_password_path(user) -> str:
    """The path of a fresh one-time set-password link for ``user``."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("account-set-password", args=[uid, default_token_generator.make_token(user)])


def clean_invitee(username: str, email: str) -> tuple[str, str]:
    """The account name and e-mail address of a new researcher: an e-mail alone names the account too.
    Raises :class:`ValidationError` with ``{field: message}``."""
    username, email = username.strip(), email.strip().lower()
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise ValidationError(
                {"email": "email: enter a valid e-mail address, or leave it empty."}
            ) from None
    username = username or email
    if not username:
        raise ValidationError({"username": "username: give an account name or an e-mail address."})
    try:
        User.username_validator(username)
    except ValidationError:
        raise ValidationError(
            {"username": "username: letters, digits and @ . + - _ only, at most 150 characters."}
        ) from None
    if len(username) > 150:
        raise ValidationError({"username": "username: at most 150 characters."})
    if User.objects.filter(username__iexact=username).exists():
        raise ValidationError({"username": f"username: an account named {username} already exists."})
    if email and User.objects.filter(email__iexact=email).exists():
        raise ValidationError({"email": f"email: an account with {email} already exists."})
    return username, email


def invite_researcher(username: str, email: str, absolute: str = "") -> SentLink:
    """A new researcher account without a usable password, and its set-password link (mailed when an
    e-mail address is given). ``absolute`` is the site's origin, for the mailed link."""
    username, email = clean_invitee(username, email)
    with transaction.atomic():
        user = User(username=username, email=email)
        user.set_unusable_password()
        user.save()
        user.groups.add(Group.objects.get_or_create(name=RESEARCHER_GROUP)[0])
    subject = "Your hatlab researcher account"
    return _send(user, subject, "An account was made for you on hatlab.", absolute)


def reset_link(user, absolute: str = "") -> SentLink:
    """A fresh set-password link for ``user``. The old password stops working at once, and with it every
    signed-in session of the account (Django checks a session against the password hash): a reset is asked
    for a password forgotten or known to someone else, and neither should keep working until the link is
    used. Links made before stop working too."""
    user.set_unusable_password()
    user.save(update_fields=["password"])
    return _send(user, "Set a new hatlab password", "An admin reset your hatlab password.", absolute)


def _send(user, subject: str, opening: str, absolute: str) -> SentLink:
    path = set_password_path(user)
    if not user.email:
        return SentLink(user, path, mailed=False)
    hours = link_hours()
    body = (
        f"{opening}\n\nYour account name: {user.get_username()}\n"
        f"Set your password here (the link works once, for {hours} hours):\n{absolute}{path}\n"
    )
    try:
        send_mail(subject, body, None, [user.email])
    except (OSError, smtplib.SMTPException) as exc:
        return SentLink(user, path, mailed=False, mail_error=f"the e-mail could not be sent ({exc})")
    return SentLink(user, path, mailed=True)
