"""Template context: the signed-in user's roles, for navigation."""

from __future__ import annotations

from annotate.access import is_admin, is_researcher


def roles(request) -> dict:
    user = getattr(request, "user", None)
    return {"is_researcher": is_researcher(user), "is_admin": is_admin(user)}
