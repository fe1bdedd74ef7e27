"""Switching accounts off and on.

A switched-off account (``is_active`` false) cannot sign in, and its signed-in sessions end at their next
request: Django's :class:`~django.contrib.auth.backends.ModelBackend` gives no user for an inactive account,
whatever the session store. An admin cannot switch off their own account, nor the last active admin; only a superuser manages a
superuser (:func:`check_may_manage`).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q

from annotate.access import ADMIN_GROUP, is_admin

User = get_user_model()


class ActivationError(ValueError):
    """An account that may not be switched off, with the reason."""


def active_admins():
    """The active accounts with the admin role (superusers and the admin group)."""
    return User.objects.filter(Q(is_superuser=True) | Q(groups__name=ADMIN_GROUP), is_active=True).distinct()


def check_may_manage(actor, user) -> None:
    """An admin of the admin group may not reset nor switch off a superuser: the set-password link it would be
    shown is the superuser's account, and with it every right the group does not have. ``ActivationError``."""
    if user.is_superuser and not actor.is_superuser:
        raise ActivationError(
            f"{user.get_username()} is a superuser: only a superuser can manage that account."
        )


def deactivate(actor, user) -> bool:
    """Switch ``user`` off; ``False`` when it already was. Raises :class:`ActivationError` for the actor's
    own account and for the last active admin. The admins are locked while counting, so two admins
    switching each other off at once cannot leave none."""
    if user.pk == actor.pk:
        raise ActivationError("You cannot deactivate your own account: ask another admin.")
    check_may_manage(actor, user)
    with transaction.atomic():
        locked = User.objects.select_for_update().get(pk=user.pk)
        if not locked.is_active:
            return False
        if is_admin(locked):
            admins = list(User.objects.select_for_update().filter(pk__in=active_admins().values("pk")))
            if len(admins) <= 1:
                raise ActivationError(
                    f"{locked.get_username()} is the last active admin: make another admin first."
                )
        User.objects.filter(pk=locked.pk).update(is_active=False)
    return True


def reactivate(user) -> bool:
    """Switch ``user`` on again; ``False`` when it already was on."""
    return bool(User.objects.filter(pk=user.pk, is_active=False).update(is_active=True))
