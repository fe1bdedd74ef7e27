"""A hung Redis (stopped with SIGSTOP: connections are accepted and never answered), against a private
``redis-server`` this test starts on a free port and freezes itself: starting a job waits out the broker's
read timeout and keeps the job, annotators are answered at full speed with the throttles failing open
behind the circuit breaker, the outage is logged once, and a finished worker's done page answers."""

from __future__ import annotations

import logging
import shutil
import statistics
import threading
import time
from collections.abc import Iterator
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.access import RESEARCHER_GROUP
from annotate.infra import shared_cache
from annotate.jobs import dispatch
from annotate.models import Job, Publication
from bench.faults import PrivateRedis
from tests.annotate.conftest import TINY_PARAMS, make_user, tiny_dataset
from tests.annotate.crowd_helpers import MTURK_CONFIG, crowd_study
from tests.annotate.test_api import Annotator
from tests.annotate.test_forged_workers import Browser
from tests.annotate.test_job_recovery import closed_port_url, point_broker
from tests.conftest import require_tool

pytestmark = pytest.mark.django_db

#: How long a call may take before the test gives up on it (it would hang for ever without read timeouts).
BOUND_S = 20.0


def redis_cache(url: str, settings) -> dict:
    """The production cache's configuration, on ``url``."""
    backend = "django.core.cache.backends.redis.RedisCache"
    return {"BACKEND": backend, "LOCATION": url, "OPTIONS": settings.REDIS_CACHE_OPTIONS}


@pytest.fixture
def redis_server() -> Iterator[PrivateRedis]:
    require_tool(shutil.which("redis-server") is not None, "needs redis-server to start a private Redis")
    server = PrivateRedis()
    server.start()
    try:
        yield server
    finally:
        server.stop()  # thaws it first, so whatever still waits on it is answered


@pytest.fixture
def breaker():
    """A closed breaker before and after the test (it is one per process)."""
    shared_cache.BREAKER.reset()
    yield shared_cache.BREAKER
    shared_cache.BREAKER.reset()


def bounded(call, bound_s: float = BOUND_S):
    """``(result, seconds)`` of ``call()`` run in a thread; fails when it takes longer than ``bound_s``."""
    out: dict = {}

    def run() -> None:
        began = time.monotonic()
        try:
            out["result"] = call()
        finally:
            out["seconds"] = time.monotonic() - began
            connection.close()  # this thread's own database connection

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound_s)
    assert not thread.is_alive(), f"still waiting on the hung Redis after {bound_s} s"
    return out["result"], out["seconds"]


@pytest.mark.django_db(transaction=True)  # autocommit: the job is sent at once, as in a request
def test_a_job_started_while_redis_hangs_waits_out_the_read_timeout_and_is_kept(
    redis_server, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.HATLAB_JOB_SWEEP_S = 3600.0
    ada = make_user("ada", RESEARCHER_GROUP)
    api = APIClient()
    api.force_authenticate(ada)
    dataset = tiny_dataset(ada)
    from config.celery import app

    previous = app.conf.broker_url
    point_broker(redis_server.url)
    try:
        redis_server.freeze()
        body = {"dataset": dataset.pk, "architecture": "bilstm_attention", "params": TINY_PARAMS}
        reply, seconds = bounded(lambda: api.post("/api/model-runs/", body, format="json"))
    finally:
        redis_server.thaw()
        point_broker(previous)
    read_timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS["socket_timeout"]
    assert reply.status_code == 201, reply.content
    assert seconds < 3 * read_timeout + 2, seconds
    job = Job.objects.get(pk=reply.json()["training_job"])
    assert (job.status, job.sent, job.message) == ("queued", None, dispatch.QUEUE_DOWN_NOTE)


def test_every_redis_client_has_a_read_timeout(settings):
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["socket_timeout"] > 1  # above kombu's BRPOP timeout (1 s)
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["socket_connect_timeout"] > 0
    assert 0 < settings.REDIS_CACHE_OPTIONS["socket_timeout"] <= 1
    assert 0 < settings.REDIS_CACHE_OPTIONS["socket_connect_timeout"] <= 1


def test_annotators_are_answered_at_full_speed_while_the_cache_hangs(
    redis_server, breaker, settings, study, caplog
):
    settings.CACHES = {"default": redis_cache(redis_server.url, settings)}
    settings.HATLAB_CACHE_BREAKER_S = 60.0
    annotators = [Annotator(study, f"hung{n}") for n in range(4)]  # served while Redis answers
    assert cache.get("hatlab:nothing") is None and not breaker.is_open
    redis_server.freeze()
    caplog.set_level(logging.WARNING)
    times = []
    for n in range(20):  # in this thread (its test transaction); the cache's timeouts bound each call
        began = time.monotonic()
        reply = annotators[n % 4].next()
        times.append(time.monotonic() - began)
        assert reply.status_code == 200, reply.content
    assert breaker.is_open
    # the first request waits out the cache's read timeout (twice at most); the others skip Redis
    assert times[0] < 2 * settings.REDIS_CACHE_OPTIONS["socket_timeout"] + 1
    assert statistics.median(times) < 0.25, times
    assert max(times[1:]) < 0.25, times
    outage_lines = [r for r in caplog.records if r.name == "annotate.infra.shared_cache"]
    assert len(outage_lines) == 1 and outage_lines[0].exc_info is None
    assert not [r for r in caplog.records if r.exc_info]  # no traceback per request


def test_the_breaker_tries_again_after_its_period_and_closes_when_redis_answers(breaker, caplog):
    now = [100.0]
    probe = shared_cache.Breaker("probe", clock=lambda: now[0])
    caplog.set_level(logging.WARNING)

    def fails():
        raise TimeoutError("hung")

    calls = []

    def guarded(operation):
        if not probe.allow():
            return "skipped"
        try:
            value = operation()
        except TimeoutError as exc:
            probe.failed(exc, 10.0)
            return "failed"
        probe.succeeded()
        calls.append(value)
        return value

    assert guarded(fails) == "failed" and probe.is_open
    assert [guarded(lambda: "ok") for _ in range(3)] == ["skipped"] * 3  # inside the period: no call
    now[0] = 111.0
    assert probe.allow() and not probe.allow()  # one trial at a time
    probe.failed(TimeoutError("still hung"), 10.0)  # the trial failed: open for another period
    assert guarded(lambda: "ok") == "skipped"
    now[0] = 122.0
    assert guarded(lambda: "ok") == "ok" and not probe.is_open
    messages = [r.getMessage() for r in caplog.records if r.name == "annotate.infra.shared_cache"]
    assert len(messages) == 2  # opened once, closed once
    assert "unreachable" in messages[0] and "answers again (5 calls skipped" in messages[1]


def test_a_finished_provisional_worker_gets_the_done_page_while_redis_is_down(
    researcher, breaker, settings, redis_server
):
    """The done page queues a reconciliation soon (a cache mark, then the broker): with Redis down neither
    may turn the worker's last page into a 503; with Redis hung, only the first page waits."""
    settings.HATLAB_CACHE_BREAKER_S = 60.0
    study = crowd_study(researcher, "mturk", dict(MTURK_CONFIG), n=2, gold_every=0, annotators_per_item=1)
    Publication.objects.create(study=study, provider="mturk", request_token="t-a", external_id="HITA",
                               places=1, reward=Decimal("0.50"), status=Publication.Status.OPEN)  # fmt: skip
    worker = Browser(study, "AREAL", "WREAL")
    assert worker.page.status_code == 200
    worker.work_to_the_end()
    from config.celery import app

    previous = app.conf.broker_url
    try:
        for state in ("down", "hung"):
            if state == "down":
                settings.CACHES = {"default": redis_cache(closed_port_url(), settings)}
                point_broker(closed_port_url())
            else:
                settings.CACHES = {"default": redis_cache(redis_server.url, settings)}
                point_broker(redis_server.url)
                redis_server.freeze()
            for _ in range(2):
                began = time.monotonic()
                page = worker.client.get(reverse("work-done", args=[study.uid]))
                assert page.status_code == 200, (state, page.content[:300])
                assert b'name="assignmentId" value="AREAL"' in page.content
                assert (
                    time.monotonic() - began
                    < 2 * settings.CELERY_BROKER_TRANSPORT_OPTIONS["socket_timeout"] + 2
                )
    finally:
        redis_server.thaw()
        point_broker(previous)
