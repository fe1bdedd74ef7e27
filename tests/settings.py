"""The tests' settings: the app's own (``config.settings``), with a secret key of the tests' own.

The app refuses to start without ``DJANGO_SECRET_KEY`` unless DEBUG is on, and the tests run with DEBUG off.
The key is put in the environment before the app's settings read it, so the servers and workers the tests
start (``config.settings`` in a subprocess) inherit it.
"""

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "hatlab-tests-only-key-never-used-by-a-server")

from config.settings import *  # noqa: E402,F401,F403
