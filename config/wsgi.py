"""WSGI entry point (gunicorn ``config.wsgi``).

The URL configuration is loaded here, when the worker starts, rather than by the first request:
it imports every view module (the machine pages bring in the engine), which takes seconds that
would otherwise land on whichever annotator happened to ask first.

What is loaded then lives as long as the process, so it is moved out of the garbage collector's
sight (``gc.freeze``): a full collection over the ~400,000 objects of Django, torch and the
engine takes a quarter of a second, which every request of the process would wait out. The youngest
generation is collected after 10,000 new objects instead of 700: a request makes a few thousand, nearly all
freed by reference counting when it ends, so at 700 the collector ran several times during each request
and walked what the request still held; at 10,000 it mostly finds the request's objects gone.
"""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 — imports the views now, at start-up
gc.freeze()
gc.set_threshold(10_000, 10, 10)
