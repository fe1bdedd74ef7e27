"""Template filters that put numbers in the words the forms use."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def as_minutes(seconds: int | None) -> str:
    """A duration in seconds as the study form asks it, in minutes: ``30 min``, ``1 min 30 s``."""
    if seconds is None:
        return "—"
    minutes, rest = divmod(int(seconds), 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min" + (f" {rest} s" if rest else "")
