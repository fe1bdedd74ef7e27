"""API permissions by role: the rules of :mod:`annotate.access` as DRF permission classes."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from annotate.access import is_admin, is_researcher


class IsResearcher(BasePermission):
    """Signed-in researchers and admins."""

    message = "This needs the researcher role."

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)


class IsAdmin(BasePermission):
    """Signed-in admins."""

    message = "This needs the admin role."

    def has_permission(self, request, view) -> bool:
        return is_admin(request.user)


class IsOwnerOrAdmin(BasePermission):
    """A researcher may act on what they own; an admin on everything."""

    message = "This belongs to another researcher."

    def has_object_permission(self, request, view, obj) -> bool:
        return is_admin(request.user) or getattr(obj, "owner_id", None) == request.user.pk
