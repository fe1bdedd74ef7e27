"""The throttles on a real Redis (a private ``redis-server`` on a free port): an annotator's request costs at
most one round trip to Redis in all, one per lease of requests, counted by wrapping the client's socket writes; the counter still limits, expires
with its window, survives a Redis that forgot the script, and any failure of Redis lets the request through."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
import redis
from redis.connection import AbstractConnection

from annotate.infra import shared_cache, throttle
from bench.faults import PrivateRedis
from tests.annotate.test_api import Annotator, body_for
from tests.conftest import require_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    require_tool(shutil.which("redis-server") is not None, "needs redis-server to start a private Redis")
    server = PrivateRedis()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def on_redis(private_redis, settings) -> Iterator[redis.Redis]:
    """The cache on the private Redis, as production configures it, with a closed breaker; a plain client
    to look at what the throttles stored."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": private_redis.url,
            "OPTIONS": settings.REDIS_CACHE_OPTIONS,
        }
    }
    shared_cache.BREAKER.reset()
    look = redis.Redis.from_url(private_redis.url)
    yield look
    look.close()
    shared_cache.BREAKER.reset()


class RoundTrips:
    """Counts what this process writes to any Redis socket: one write is one round trip (a pipeline's
    commands go in one write)."""

    def __init__(self, monkeypatch):
        self.count = 0
        send = AbstractConnection.send_packed_command

        def counted(connection, command, check_health=True):
            self.count += 1
            return send(connection, command, check_health)

        monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)

    def during(self, action) -> int:
        before = self.count
        action()
        return self.count - before


def work_keys(look: redis.Redis) -> list[bytes]:
    return [k for k in look.keys("*") if b"hatlab:throttle:work-api:" in k]


def test_an_annotator_s_requests_cost_one_round_trip_per_lease(on_redis, monkeypatch, settings, study):
    """At the default rate (300 a minute, leases of 9) the first request takes a lease in one round trip
    (the first use may also load the script), the next eight, submissions included, none, the tenth one."""
    limit, window = settings.HATLAB_THROTTLE_WORK_API
    lease = limit // throttle.LEASE_SHARE
    assert lease == 9
    trips = RoundTrips(monkeypatch)
    annotator = Annotator(study, "one-trip")
    assert annotator.next().status_code == 200  # request 1: a lease
    assert trips.during(lambda: [annotator.next() for _ in range(6)]) == 0  # requests 2-7
    served = annotator.next().json()  # request 8
    replies = []

    def answer() -> None:
        body = {**body_for(served["item"]["payload"]), "next": True}
        replies.append(annotator.submit(served["assignment"], body))

    assert trips.during(answer) == 0  # request 9: the lease's last token
    assert replies[0].status_code == 201 and replies[0].json()["next"]["assignment"]
    assert trips.during(lambda: annotator.next().status_code == 200) == 1  # request 10: a new lease
    (key,) = work_keys(on_redis)
    assert int(on_redis.get(key)) == 2 * lease  # the counter holds every token leased
    assert 0 < on_redis.ttl(key) <= window + 1


def test_the_limit_holds_and_the_counter_expires_with_its_window(on_redis, settings, study):
    settings.HATLAB_THROTTLE_WORK_API = (3, 3600)
    busy, calm = Annotator(study, "busy"), Annotator(study, "calm")
    assert [busy.next().status_code for _ in range(4)] == [200, 200, 200, 429]
    assert calm.next().status_code == 200
    keys = work_keys(on_redis)
    assert sorted(int(on_redis.get(k)) for k in keys) == [1, 4]
    assert all(0 < on_redis.ttl(k) <= 3601 for k in keys)


def test_a_redis_that_forgot_the_script_still_counts(on_redis, settings, study):
    settings.HATLAB_THROTTLE_WORK_API = (2, 3600)
    annotator = Annotator(study, "flushed")
    assert annotator.next().status_code == 200
    on_redis.script_flush()  # a restarted Redis knows no script
    assert annotator.next().status_code == 200
    on_redis.script_flush()
    assert annotator.next().status_code == 429
    assert not shared_cache.BREAKER.is_open


def test_a_failing_script_lets_the_request_through(on_redis, settings, study):
    """The counter cannot be incremented (its key holds text): Redis answers with an error, and the request
    goes through as when Redis is down; the breaker then skips Redis for its period."""
    settings.HATLAB_THROTTLE_WORK_API = (1, 3600)
    annotator = Annotator(study, "broken")
    assert annotator.next().status_code == 200
    (key,) = work_keys(on_redis)
    on_redis.set(key, "not a number", ex=3600)
    assert [annotator.next().status_code for _ in range(3)] == [200, 200, 200]
    assert shared_cache.BREAKER.is_open


def test_a_refused_connection_counts_nothing_and_lets_the_request_through(settings, study):
    settings.HATLAB_THROTTLE_WORK_API = (1, 3600)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    shared_cache.BREAKER.reset()
    try:
        assert shared_cache.count("hatlab:throttle:probe", 60) is None
        annotator = Annotator(study, "refused")
        assert [annotator.next().status_code for _ in range(3)] == [200, 200, 200]
    finally:
        shared_cache.BREAKER.reset()
