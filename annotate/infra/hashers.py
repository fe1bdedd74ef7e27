"""The demo's password hasher: PBKDF2-SHA256 (the production default's algorithm) at 100,000 rounds.

Django's default of 1,000,000 rounds takes about a second of CPU per sign-in on a small machine, which
the local demo (its seeded accounts share one published password) does not need. The hashes it writes
carry their round count, so a production server reads them and raises them to its own count on the
next sign-in; this hasher likewise lowers a production hash it checks. ``config.settings`` uses it only
with ``HATLAB_DEMO_FAST_HASH`` set and ``DJANGO_DEBUG`` on.
"""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class DemoPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """PBKDF2-SHA256 at a tenth of Django's rounds, under the same algorithm name."""

    iterations = 100_000
