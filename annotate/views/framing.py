"""Annotator pages may be shown inside a crowd platform's frame (MTurk's ExternalQuestion).

Every other page keeps ``X-Frame-Options: DENY``; these pages instead name the
platforms allowed to frame them with ``Content-Security-Policy: frame-ancestors``.
"""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.views.decorators.clickjacking import xframe_options_exempt


def crowd_frameable(view):
    """Let ``view``'s page be framed by ourselves and the configured crowd platforms only."""

    @xframe_options_exempt
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        ancestors = " ".join(["'self'", *settings.HATLAB_FRAME_ANCESTORS])
        response["Content-Security-Policy"] = f"frame-ancestors {ancestors}"
        return response

    return wrapper
