"""Where a test run finds its services: its own Redis database, and the URL of the test database for the
worker processes some tests start. Two test runs on one host must not share either."""

from __future__ import annotations

import os
import zlib
from urllib.parse import quote

try:
    import redis  # absent from the engine-only install, whose tests need no broker
except ImportError:
    redis = None

REDIS = "redis://127.0.0.1:6379"
CLAIM_KEY = "hatlab:test-redis-db:{}"
CLAIM_SECONDS = 6 * 3600
TEST_DBS = range(1, 16)  # database 0 is the app's default broker


def run_id() -> str:
    """This test run's name: ``HATLAB_TEST_RUN`` (the Makefile passes its shell's id), else the process id."""
    return os.environ.get("HATLAB_TEST_RUN") or str(os.getpid())


def claim_redis_db(run: str) -> int:
    """A Redis database number no other live run holds, claimed with ``SET NX`` in database 0 (the claim
    expires after six hours in case a run is killed). Starts from a number derived from ``run``; when Redis
    is down, that number (the broker tests then report Redis as unreachable)."""
    start = zlib.crc32(run.encode()) % len(TEST_DBS)
    candidates = [TEST_DBS[(start + i) % len(TEST_DBS)] for i in range(len(TEST_DBS))]
    if redis is None:
        return candidates[0]
    client = redis.Redis.from_url(f"{REDIS}/0", socket_connect_timeout=2)
    try:
        for number in candidates:
            if client.set(CLAIM_KEY.format(number), run, nx=True, ex=CLAIM_SECONDS):
                return number
    except redis.ConnectionError:
        return candidates[0]
    raise RuntimeError(f"all Redis test databases {TEST_DBS} are claimed by other runs ({REDIS}/0)")


def release_redis_db(run: str, number: int) -> None:
    """Drop this run's claim (only if it is still this run's)."""
    if redis is None:
        return
    client = redis.Redis.from_url(f"{REDIS}/0", socket_connect_timeout=2)
    key = CLAIM_KEY.format(number)
    try:
        if client.get(key) == run.encode():
            client.delete(key)
    except redis.ConnectionError:
        return


def database_url(db: dict) -> str:
    """A ``DATABASE_URL`` for Django's connection settings ``db`` (password included when there is one)."""
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    return f"postgres://{quote(db['USER'], safe='')}{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
