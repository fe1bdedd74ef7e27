"""The shared cache (Redis in production, ``HATLAB_CACHE_URL``) kept off the answer path when it misbehaves.

Nothing the cache holds is needed to answer a request: the throttles' counters and the "reconciliation
already queued" marks may be skipped. A Redis that refuses connections fails at once, but one that hangs
(stopped, overloaded, a half-open connection) makes every call wait out the client's socket timeout.
:func:`call` therefore sits behind a circuit breaker (Nygard, *Release It!*, 2nd ed., 2018, ch. 5, "Circuit
Breaker"): the first failure opens it, and for ``HATLAB_CACHE_BREAKER_S`` seconds every call returns its
fallback at once without touching Redis; after that one call tries again (half open) and either closes the
breaker or opens it for another period. The outage is logged once when the breaker opens and once when it
closes, not once per request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, cache, caches
from django.core.cache.backends.redis import RedisCache
from django.core.signals import setting_changed
from django.dispatch import receiver
from redis.commands.core import Script

log = logging.getLogger(__name__)

T = TypeVar("T")


class Breaker:
    """A circuit breaker: :meth:`allow` says whether a call may go to the store now; :meth:`failed` and
    :meth:`succeeded` report how it went. Thread-safe; one per process."""

    def __init__(self, name: str, clock: Callable[[], float] = time.monotonic):
        self.name = name
        self.clock = clock
        self._lock = threading.Lock()
        self._open_until: float | None = None
        self._trial = False
        self.skipped = 0

    @property
    def is_open(self) -> bool:
        return self._open_until is not None

    def allow(self) -> bool:
        """True when the breaker is closed, or when it is open, its period is over and no other call is
        trying the store already (that one call is the trial)."""
        with self._lock:
            if self._open_until is None:
                return True
            if self.clock() >= self._open_until and not self._trial:
                self._trial = True
                return True
            self.skipped += 1
            return False

    def failed(self, exc: BaseException, period_s: float) -> None:
        with self._lock:
            first = self._open_until is None
            self._open_until = self.clock() + period_s
            self._trial = False
        if first:
            log.warning(
                "%s unreachable (%s: %s); skipped for %.0f s at a time until it answers",
                self.name,
                type(exc).__name__,
                exc,
                period_s,
            )

    def reset(self) -> None:
        """Closed, with nothing logged."""
        with self._lock:
            self._open_until, self._trial, self.skipped = None, False, 0

    def succeeded(self) -> None:
        with self._lock:
            was_open = self._open_until is not None
            self._open_until, self._trial = None, False
            skipped, self.skipped = self.skipped, 0
        if was_open:
            log.warning("%s answers again (%d calls skipped meanwhile)", self.name, skipped)


BREAKER = Breaker("the shared cache (Redis)")


@receiver(setting_changed)
def _new_cache(setting: str, **kwargs: object) -> None:
    """Another cache configured (tests do): what the breaker knew was of the old one."""
    if setting == "CACHES":
        BREAKER.reset()


def call(operation: Callable[[], T], fallback: T) -> T:
    """``operation()`` (a call on the cache), or ``fallback`` when the cache fails or its breaker is open."""
    if not BREAKER.allow():
        return fallback
    try:
        value = operation()
    except Exception as exc:  # any failure of the store: refused, timed out, a protocol error
        BREAKER.failed(exc, float(getattr(settings, "HATLAB_CACHE_BREAKER_S", 10.0)))
        return fallback
    BREAKER.succeeded()
    return value


#: Add to a counter and give it its lifetime when this made it: the throttles' count in one round trip
#: (``EVALSHA``; redis-py loads the script once when the server does not know it yet).
_COUNT_SCRIPT = Script(
    None,  # type: ignore[arg-type]  # no client of its own: each call passes the cache's
    b"""local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return n""",
)


def _client(store: RedisCache) -> Any:
    """A Redis client on ``store``'s connection pool for writes, made once per cache object (one per thread):
    Django's backend makes a new one per call, and making one costs more than the call."""
    client = getattr(store, "_hatlab_client", None)
    if client is None:
        client = store._hatlab_client = store._cache.get_client(None, write=True)
    return client


def count(key: str, window_s: int, by: int = 1) -> int | None:
    """Add ``by`` to the counter ``key`` (created for ``window_s`` seconds); its new value, or None when the
    cache cannot count now. On Redis this is one round trip (a script that increments and, for a new key,
    sets its expiry); on another cache, ``add`` then ``incr`` (in-process stores: no round trip)."""
    store = caches[DEFAULT_CACHE_ALIAS]
    if isinstance(store, RedisCache):
        full_key = store.make_and_validate_key(key)

        def script() -> int:
            return int(_COUNT_SCRIPT(keys=[full_key], args=[window_s, by], client=_client(store)))

        return call(script, None)

    def add_and_increment() -> int:
        store.add(key, 0, timeout=window_s)
        return int(store.incr(key, by))

    return call(add_and_increment, None)


def add(key: str, value: object, timeout_s: float) -> bool | None:
    """``cache.add``: True when ``key`` was added, False when it was there, None when the cache cannot say."""
    return call(lambda: bool(cache.add(key, value, timeout_s)), None)
