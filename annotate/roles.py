"""Roles: *admin* (superusers and the ``admin`` group) sees everything; *researcher* (the
``researcher`` group) builds studies and sees their own; everyone else is an annotator who sees
only their own assignments."""

from __future__ import annotations

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
