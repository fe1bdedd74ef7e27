"""API permissions by role (see :mod:`annotate.roles`)."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework.permissions import BasePermission

from annotate.roles import is_admin, is_researcher


class IsResearcher(BasePermission):
    """Signed-in researchers and admins."""

    message = "This needs the researcher role."

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)


class IsOwnerOrAdmin(BasePermission):
    """A researcher may act on what they own; an admin on everything."""

    message = "This belongs to another researcher."

    def has_object_permission(self, request, view, obj) -> bool:
        return is_admin(request.user) or getattr(obj, "owner_id", None) == request.user.pk


def visible_to(queryset: QuerySet, user) -> QuerySet:
    """What ``user`` may see of an owned model's rows: all for an admin, their own otherwise."""
    return queryset if is_admin(user) else queryset.filter(owner_id=user.pk)
