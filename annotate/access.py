"""Who may see and do what, for pages and API alike.

Roles: *admin* (superusers and the ``admin`` group) sees everything; *researcher* (the ``researcher``
group) builds studies and sees their own; everyone else is an annotator who sees only their own
assignments. The pages apply them through :func:`researcher_required` and :func:`owned_or_404`; every DRF
view (the project API in :mod:`annotate.api` and a kind's own API views) through the permission classes at
the end, kept here rather than in :mod:`annotate.api` so a kind's API reaches them without importing the
API layer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from rest_framework.permissions import BasePermission

RESEARCHER_GROUP = "researcher"
ADMIN_GROUP = "admin"


def _in_group(user, name: str) -> bool:
    if user is None or not user.is_authenticated:
        return False
    cache = getattr(user, "_hatlab_groups", None)
    if cache is None:
        cache = set(user.groups.values_list("name", flat=True))
        user._hatlab_groups = cache
    return name in cache


def is_admin(user) -> bool:
    return bool(
        user is not None and user.is_authenticated and (user.is_superuser or _in_group(user, ADMIN_GROUP))
    )


def is_researcher(user) -> bool:
    return is_admin(user) or _in_group(user, RESEARCHER_GROUP)


def visible_to(queryset: QuerySet, user) -> QuerySet:
    """What ``user`` may see of an owned model's rows: all for an admin, their own otherwise."""
    return queryset if is_admin(user) else queryset.filter(owner_id=user.pk)


def owned_or_404(queryset: QuerySet, user, **lookup):
    """The row matching ``lookup`` if ``user`` owns it or is an admin; 404 otherwise."""
    return get_object_or_404(visible_to(queryset, user), **lookup)


def _role_required(check: Callable[[object], bool], role: str):
    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                raise PermissionDenied(f"This page needs the {role} role.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


researcher_required = _role_required(is_researcher, "researcher")
researcher_required.__doc__ = "A page for researchers: sign-in first; then the researcher role, else 403."
admin_required = _role_required(is_admin, "admin")
admin_required.__doc__ = "A page for admins: sign-in first; then the admin role, else 403."


class IsResearcher(BasePermission):
    """API: signed-in researchers and admins."""

    message = "This needs the researcher role."

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)


class IsAdmin(BasePermission):
    """API: signed-in admins."""

    message = "This needs the admin role."

    def has_permission(self, request, view) -> bool:
        return is_admin(request.user)


class IsOwnerOrAdmin(BasePermission):
    """API: a researcher may act on what they own; an admin on everything."""

    message = "This belongs to another researcher."

    def has_object_permission(self, request, view, obj) -> bool:
        return is_admin(request.user) or getattr(obj, "owner_id", None) == request.user.pk
