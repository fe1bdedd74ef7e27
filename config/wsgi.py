"""WSGI entry point (gunicorn ``config.wsgi``).

The URL configuration is loaded here, when the worker starts, rather than by the first request:
it imports every view module (the machine pages bring in the engine), which takes seconds that
would otherwise land on whichever annotator happened to ask first.
"""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 — imports the views now, at start-up
