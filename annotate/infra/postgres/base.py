"""Django's PostgreSQL backend, with a kept connection checked before reuse without a round trip.

Django's check (``CONN_HEALTH_CHECKS``) sends ``SELECT 1`` before the first query of every request that
reuses a connection: on the annotator API that is one round trip in six, paid by the app and by the
server. An idle connection has nothing to read, and a server that ends one (a restart, a fast shutdown,
``pg_terminate_backend``, a crash of its backend) sends its FATAL message and closes the socket, which
makes the socket readable. So the socket is polled instead (no wait, no bytes sent): readable while idle, or
no socket at all, and the connection is dropped; Django opens a fresh one for the request. A connection
whose server vanished without closing it (a host gone, a cable cut) is found by the request's own first
query, as with ``SELECT 1``, whose reply would never come either.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    """Django's wrapper; :meth:`is_usable` polls the socket instead of sending ``SELECT 1``."""

    def is_usable(self) -> bool:
        raw = self.connection
        if raw is None or raw.closed:
            return False
        if self.in_atomic_block or not self.get_autocommit():
            return super().is_usable()  # mid-transaction: the server may be speaking; ask it
        try:
            poller = select.poll()  # not select(): a busy server's descriptors pass FD_SETSIZE
            poller.register(raw.fileno(), select.POLLIN)
            events = poller.poll(0)
        except (OSError, ValueError):
            return False
        # Nothing is due between requests: anything pending is the server's goodbye (or a notice, and then
        # a new connection is merely one connection more).
        return not events
