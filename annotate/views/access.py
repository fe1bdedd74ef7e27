"""Page access by role: researcher pages need the researcher role and show only what one owns."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from annotate.roles import is_admin, is_researcher


def researcher_required(view):
    """Sign-in first; then the researcher role, else 403."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_researcher(request.user):
            raise PermissionDenied("This page needs the researcher role.")
        return view(request, *args, **kwargs)

    return wrapper


def owned_or_404(queryset, user, **lookup):
    """The row matching ``lookup`` if ``user`` owns it or is an admin; 404 otherwise."""
    if not is_admin(user):
        queryset = queryset.filter(owner_id=user.pk)
    return get_object_or_404(queryset, **lookup)


def visible(queryset, user):
    return queryset if is_admin(user) else queryset.filter(owner_id=user.pk)
