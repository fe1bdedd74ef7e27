"""Throttles: how many requests one client address, account or worker may make in a window.

A fixed-window counter in Django's cache (Redis in production, ``HATLAB_CACHE_URL``; each process's memory
otherwise): a request takes a token of the window's key, the first one giving it the window's length as its
lifetime, in one round trip to Redis (a script, :func:`annotate.infra.shared_cache.count`), and past the limit
the caller is told how many seconds remain. A process takes its tokens in *leases* of ``limit // LEASE_SHARE``
(at least one) and spends the rest of a lease from its own memory, so the annotator API's 300 requests a minute
cost one round trip per nine requests; the shared counter never grants more than the limit in all, and tokens
leased to one process but unspent there are lost to the window (at most ``processes × (lease − 1)``: 16 of 300
with three gunicorn workers). Limits below ``LEASE_SHARE`` (sign-in, new workers) are counted one by one, exact.
Hand-written rather than DRF's
throttles because half the throttled routes are plain Django views (the login page, the entry page, the
annotator API's lean views) and because the limiter must *fail open*: when the cache cannot be reached, or
hangs, the request goes through, and the cache is skipped for a while (:mod:`annotate.infra.shared_cache`,
a circuit breaker that logs the outage once), so answering never depends on Redis.

The rates are settings (``HATLAB_THROTTLE_*``, each ``(requests, seconds)``); ``HATLAB_THROTTLES=0`` turns
them all off.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time

from django.conf import settings
from django.core.cache import cache
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest

from annotate.infra import shared_cache
from annotate.infra.edge import trusted_proxy


def client_address(request: HttpRequest) -> str:
    """The client's address: when the peer is our own proxy (``DJANGO_BEHIND_TLS_PROXY`` and the peer among
    ``DJANGO_TRUSTED_PROXIES``) the last one in ``X-Forwarded-For``, which that proxy appended (earlier ones
    come from the client and may be forged); else the peer the server saw (``REMOTE_ADDR``), whatever
    headers it sent."""
    peer = request.META.get("REMOTE_ADDR", "") or "unknown"
    if settings.BEHIND_TLS_PROXY and trusted_proxy(peer):
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if forwarded:
            return forwarded[-1]
    return peer


def _window(scope: str, ident: str, window: int) -> tuple[str, float, float]:
    now = time.time()
    start = math.floor(now / window) * window
    digest = hashlib.sha256(ident.encode()).hexdigest()[:32]
    return f"hatlab:throttle:{scope}:{digest}:{start}", start, now


#: A lease is this share of a limit: the tokens a process takes from the shared counter in one round trip.
LEASE_SHARE = 32
#: Leases held by this process: the window's key → [tokens left, the window's end]. Bounded by pruning
#: ended windows whenever it grows past ``_PRUNE_AT`` keys.
_LEASES: dict[str, list[float]] = {}
_LEASES_LOCK = threading.Lock()
_PRUNE_AT = 10_000


def forget_leases() -> None:
    """Drop this process's leases (the counters they came from were cleared, or the rates changed)."""
    with _LEASES_LOCK:
        _LEASES.clear()


@receiver(setting_changed)
def _rates_changed(setting: str, **kwargs: object) -> None:
    if setting == "CACHES" or setting.startswith("HATLAB_THROTTLE"):
        forget_leases()


def _spend_leased(key: str) -> bool:
    """Spend one token of this process's lease on ``key``; False when it holds none."""
    with _LEASES_LOCK:
        lease = _LEASES.get(key)
        if lease is None or lease[0] < 1:
            return False
        lease[0] -= 1
        return True


def _keep_lease(key: str, tokens: int, ends: float, now: float) -> None:
    with _LEASES_LOCK:
        if len(_LEASES) >= _PRUNE_AT:
            for old in [k for k, (_, end) in _LEASES.items() if end <= now]:
                del _LEASES[old]
        _LEASES[key] = [tokens, ends]


def hit(scope: str, ident: str, rate: tuple[int, int]) -> int | None:
    """Count one request of ``ident`` under ``scope``: ``None`` while within ``rate`` (or when throttles are
    off, or the cache is down), else the seconds until the window ends (for ``Retry-After``)."""
    if not settings.HATLAB_THROTTLES:
        return None
    limit, window = rate
    key, start, now = _window(scope, ident, window)
    if _spend_leased(key):
        return None
    lease = max(1, limit // LEASE_SHARE)
    count = shared_cache.count(key, window + 1, lease)
    if count is None:  # the store is down or hangs; the request goes through
        return None
    granted = min(lease, limit - (count - lease))  # the tokens of this lease within the limit
    if granted < 1:
        return max(1, math.ceil(start + window - now))
    if granted > 1:
        _keep_lease(key, granted - 1, start + window, now)
    return None


def spent(scope: str, ident: str, rate: tuple[int, int]) -> int | None:
    """Without counting: the seconds until the window ends when ``ident`` already used up ``rate`` under
    ``scope``, else ``None`` (also when throttles are off or the cache is down)."""
    if not settings.HATLAB_THROTTLES:
        return None
    limit, window = rate
    key, start, now = _window(scope, ident, window)
    count = shared_cache.call(lambda: cache.get(key, 0), None)  # None: the store is down or hangs
    if not isinstance(count, int) or count < limit:
        return None
    return max(1, math.ceil(start + window - now))


def login_attempt(request: HttpRequest, username: str) -> int | None:
    """Count a sign-in attempt per client address and per account name; seconds to wait when over either."""
    by_address = hit("login-ip", client_address(request), settings.HATLAB_THROTTLE_LOGIN_IP)
    by_account = hit("login-account", username.strip().lower(), settings.HATLAB_THROTTLE_LOGIN_ACCOUNT)
    waits = [w for w in (by_address, by_account) if w is not None]
    return max(waits) if waits else None


def login_refused(request: HttpRequest, username: str) -> int | None:
    """Whether sign-in failures from this address or for this account already reached their limit (nothing
    is counted): the check before a password is tried where only failures count (HTTP Basic)."""
    waits = [
        spent("login-ip", client_address(request), settings.HATLAB_THROTTLE_LOGIN_IP),
        spent("login-account", username.strip().lower(), settings.HATLAB_THROTTLE_LOGIN_ACCOUNT),
    ]
    found = [w for w in waits if w is not None]
    return max(found) if found else None


def new_worker(request: HttpRequest, study_uid) -> int | None:
    """Count a visit to a study's entry page by a browser that has no worker in the study yet, per client
    address and study: how fast one address may bring new worker identities."""
    return hit("new-worker", f"{client_address(request)}|{study_uid}", settings.HATLAB_THROTTLE_NEW_WORKER)


def work_request(request: HttpRequest, worker_ids: set[int]) -> int | None:
    """Count an annotator API request per worker (the browser's workers; its address when it has none)."""
    ident = ",".join(map(str, sorted(worker_ids))) if worker_ids else f"ip:{client_address(request)}"
    return hit("work-api", ident, settings.HATLAB_THROTTLE_WORK_API)
