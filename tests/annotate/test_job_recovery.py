"""Jobs that cannot be lost, against the real test Redis (no worker: what reaches the queue is read back
from Redis): a job started while the broker is down is kept and sent when it is back; a message sent
twice runs once; a running job whose heartbeat stopped is marked lost and sent again; outages answer 503.
The same with real worker processes: ``tests/integration/test_celery_worker.py``."""

from __future__ import annotations

import json
import os
import socket
import time
from datetime import timedelta

import pytest
import redis
from django.db import OperationalError, connection
from django.test import Client, RequestFactory
from django.utils import timezone
from rest_framework.test import APIClient

from annotate.access import RESEARCHER_GROUP
from annotate.jobs import dispatch, sweeper
from annotate.jobs.base import claim, run_job
from annotate.jobs.heartbeat import Heartbeat
from annotate.machine import create_model_run, jobs
from annotate.models import Job, ModelRun
from tests.annotate.conftest import TINY_PARAMS, make_user, tiny_dataset

pytestmark = pytest.mark.django_db

BROKER_URL = os.environ["HATLAB_TEST_BROKER_URL"]  # set per run by tests/conftest.py


def closed_port_url() -> str:
    """A Redis URL on a port where nothing listens: the broker is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def point_broker(url: str) -> None:
    from config.celery import app

    app.conf.broker_url = url
    app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None


@pytest.fixture
def queue():
    """The test Redis database, emptied; the app sends to it unless a test points it elsewhere."""
    from config.celery import app

    client = redis.Redis.from_url(BROKER_URL)
    client.flushdb()
    previous = app.conf.broker_url
    point_broker(BROKER_URL)
    yield client
    point_broker(previous)
    client.flushdb()


def queued_ids(client: redis.Redis, name: str = "cpu") -> list[str]:
    """Task ids of the messages waiting on queue ``name``, oldest first."""
    return [json.loads(raw)["headers"]["id"] for raw in reversed(client.lrange(name, 0, -1))]


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.HATLAB_JOB_SWEEP_S = 0.0  # every request that touches jobs sweeps
    settings.HATLAB_JOB_SEND_GRACE_S = 5.0
    settings.HATLAB_JOB_LOST_AFTER_S = 30.0


@pytest.fixture
def ada():
    return make_user("ada", RESEARCHER_GROUP)


@pytest.fixture
def api(ada):
    client = APIClient()
    client.force_authenticate(ada)
    return client


@pytest.mark.django_db(transaction=True)  # autocommit: sent at once, as in a request
def test_a_job_started_while_the_broker_is_down_is_kept_and_sent_when_it_is_back(api, ada, queue):
    dataset = tiny_dataset(ada)
    point_broker(closed_port_url())
    began = time.monotonic()
    reply = api.post(
        "/api/model-runs/",
        {"dataset": dataset.pk, "architecture": "bilstm_attention", "params": TINY_PARAMS},
        format="json",
    )
    assert time.monotonic() - began < 2.0  # no waiting on a broker that is down
    assert reply.status_code == 201, reply.content
    body = reply.json()
    assert body["status"] == "queued"
    assert body["queue_note"] == dispatch.QUEUE_DOWN_NOTE
    job = Job.objects.get(pk=body["training_job"])
    assert (job.status, job.sent, job.message) == ("queued", None, dispatch.QUEUE_DOWN_NOTE)
    assert job.task == "annotate.machine.train_model" and job.queue == "cpu"
    assert queue.llen("cpu") == 0

    # Still down: reading the job tries again and keeps it.
    seen = api.get(f"/api/jobs/{job.pk}/").json()
    assert (seen["status"], seen["sent"], seen["message"]) == ("queued", None, dispatch.QUEUE_DOWN_NOTE)

    # Back: the next request that touches jobs sends it, under the job's task id.
    point_broker(BROKER_URL)
    seen = api.get(f"/api/jobs/{job.pk}/").json()
    assert seen["status"] == "queued" and seen["sent"] is not None and seen["message"] == ""
    assert queued_ids(queue) == [f"hatlab-job-{job.pk}"]
    assert api.get(f"/api/model-runs/{body['id']}/").json()["queue_note"] == ""
    # Sent once: asking again, or sweeping again, sends nothing more.
    api.get(f"/api/jobs/{job.pk}/")
    assert api.post(f"/api/model-runs/{body['id']}/train/", {}, format="json").status_code == 202
    assert queue.llen("cpu") == 1


@pytest.mark.django_db(transaction=True)  # autocommit: sent at once, as in a request
def test_train_on_a_job_that_never_reached_the_broker_sends_it(api, ada, queue, settings):
    settings.HATLAB_JOB_SWEEP_S = 3600.0  # no sweep: only the explicit request can send it
    sweeper._last_sweep[0] = time.monotonic()
    run = create_model_run(ada, tiny_dataset(ada), "bilstm_attention", TINY_PARAMS)
    point_broker(closed_port_url())
    job = jobs.enqueue_training(run, ada)
    job.refresh_from_db()
    assert job.sent is None and job.message == dispatch.QUEUE_DOWN_NOTE
    point_broker(BROKER_URL)
    reply = api.post(f"/api/model-runs/{run.pk}/train/", {}, format="json")
    assert reply.status_code == 202
    assert reply.json()["id"] == job.pk and reply.json()["sent"] is not None
    assert queued_ids(queue) == [f"hatlab-job-{job.pk}"]


@pytest.mark.django_db(transaction=True)  # autocommit: sent at once, as in a request
def test_the_html_page_says_the_queue_is_unreachable(ada, queue):
    dataset = tiny_dataset(ada)
    client = Client()
    client.force_login(ada)
    point_broker(closed_port_url())
    reply = client.post(
        "/models/new/", {"dataset": dataset.pk, "architecture": "cnn", "name": "down"}, follow=True
    )
    assert reply.status_code == 200
    page = reply.content.decode()
    assert dispatch.QUEUE_DOWN_NOTE in page
    assert ModelRun.objects.get(name="down").status == "queued"


def test_the_sweep_sends_what_waited_past_the_grace_and_what_the_broker_may_have_lost(ada, queue, settings):
    now = timezone.now()
    fresh = Job.objects.create(kind="k", key="fresh", task=jobs.train_model.name, queue="cpu")
    waited = Job.objects.create(kind="k", key="waited", task=jobs.train_model.name, queue="cpu")
    long_ago = Job.objects.create(kind="k", key="long-ago", task=jobs.train_model.name, queue="gpu")
    recent = Job.objects.create(kind="k", key="recent", task=jobs.train_model.name, queue="cpu")
    legacy = Job.objects.create(kind="k", key="no-task")  # a row nobody dispatched (e.g. reconcile's)
    Job.objects.filter(pk=waited.pk).update(updated=now - timedelta(seconds=6))
    Job.objects.filter(pk=long_ago.pk).update(sent=now - timedelta(seconds=settings.HATLAB_JOB_RESEND_S + 1))
    Job.objects.filter(pk=recent.pk).update(sent=now - timedelta(seconds=60))

    done = sweeper.sweep(now)

    assert sorted(done.sent) == sorted([waited.pk, long_ago.pk]) and done.lost == [] and done.unsent == []
    assert queued_ids(queue, "cpu") == [f"hatlab-job-{waited.pk}"]
    assert queued_ids(queue, "gpu") == [f"hatlab-job-{long_ago.pk}"]
    assert Job.objects.get(pk=fresh.pk).sent is None  # its own send is still to come
    assert Job.objects.get(pk=legacy.pk).sent is None

    # Broker down: the sweep stops at the first job the broker refuses and keeps them all queued.
    Job.objects.filter(pk=fresh.pk).update(updated=now - timedelta(seconds=6))
    point_broker(closed_port_url())
    down = sweeper.sweep(now)
    assert down.sent == [] and down.unsent == [fresh.pk]
    assert Job.objects.get(pk=fresh.pk).message == dispatch.QUEUE_DOWN_NOTE


def test_a_job_whose_heartbeat_stopped_is_marked_lost_and_sent_again(ada, queue, settings):
    settings.HATLAB_JOB_LOST_AFTER_S = 30.0
    now = timezone.now()
    beat_at = now - timedelta(seconds=31)
    lost = Job.objects.create(
        kind="k",
        key="lost",
        task=jobs.train_model.name,
        queue="cpu",
        status=Job.Status.RUNNING,
        worker="w1@box",
        heartbeat=beat_at,
        sent=now - timedelta(minutes=5),
        events=[{"at": "2026-01-01T10:00:00+00:00", "event": "started by w1@box"}],
    )
    alive = Job.objects.create(
        kind="k", key="alive", task=jobs.train_model.name, status=Job.Status.RUNNING, heartbeat=now
    )
    unowned = Job.objects.create(
        kind="crowd.reconcile", key="r", status=Job.Status.RUNNING, heartbeat=beat_at
    )

    done = sweeper.sweep(now)

    assert done.lost == [lost.pk] and done.sent == [lost.pk]
    lost.refresh_from_db()
    note = f"worker w1@box lost at {beat_at:%H:%M:%S} UTC, re-queued"
    assert lost.status == "queued" and lost.heartbeat is None and lost.sent is not None
    assert lost.message == note
    assert [e["event"] for e in lost.events] == ["started by w1@box", note]
    assert queued_ids(queue) == [f"hatlab-job-{lost.pk}"]
    assert Job.objects.get(pk=alive.pk).status == "running"
    assert Job.objects.get(pk=unowned.pk).status == "running"

    # The job's page (its API) shows what happened.
    client = APIClient()
    client.force_authenticate(make_user("root", is_superuser=True, is_staff=True))
    shown = client.get(f"/api/jobs/{lost.pk}/").json()
    assert shown["message"] == note and shown["events"][-1]["event"] == note


def test_a_message_sent_twice_runs_once(ada, settings):
    settings.HATLAB_JOB_LOST_AFTER_S = 30.0
    job = Job.objects.create(kind="k", key="twice", task="t", status=Job.Status.QUEUED)
    calls = []

    def work(row):
        calls.append(row.pk)
        # the second copy arrives while the first runs: its worker finds a fresh heartbeat
        assert run_job(row.pk, lambda _: calls.append("again") or {}) == {
            "running_elsewhere": row.pk,
            "worker": row.worker,
        }
        return {"ok": 1}

    assert run_job(job.pk, work) == {"ok": 1}
    assert run_job(job.pk, lambda _: calls.append("after") or {}) == {"ok": 1}  # done: its result
    assert calls == [job.pk]
    job.refresh_from_db()
    assert (job.status, job.attempts, job.heartbeat) == ("done", 1, None)

    # A running job whose heartbeat is stale (its worker died) is claimed by the next copy.
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, heartbeat=timezone.now() - timedelta(seconds=31)
    )
    row, answer = claim(job.pk)
    assert answer is None and row.attempts == 2 and row.status == "running"
    assert claim(10**9) == (None, {"missing_job": 10**9})


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_stamps_the_row_while_the_work_runs_and_stops_after():
    job = Job.objects.create(kind="k", key="beat", status=Job.Status.RUNNING, worker="w1")
    with Heartbeat(job.pk, "w1", every_s=0.05) as beat:
        deadline = time.monotonic() + 10
        while beat.beats < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        first = Job.objects.get(pk=job.pk).heartbeat
    assert beat.beats >= 3 and first is not None
    count = beat.beats
    time.sleep(0.2)
    assert beat.beats == count  # stopped with the work
    # Not this worker's job any more (re-queued and taken by another): the old heartbeat writes nothing.
    Job.objects.filter(pk=job.pk).update(worker="w2", heartbeat=None)
    with Heartbeat(job.pk, "w1", every_s=0.05) as beat:
        while beat.beats < 2:
            time.sleep(0.02)
    assert Job.objects.get(pk=job.pk).heartbeat is None


# --- outages answer 503 ------------------------------------------------------------------------


def test_a_database_error_in_a_view_answers_503_json_on_the_api_and_a_page_elsewhere(
    api, ada, monkeypatch, settings
):
    settings.HATLAB_RETRY_AFTER_S = 3

    def down(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("annotate.api.machine.ModelRunViewSet.get_queryset", down)
    reply = api.get("/api/model-runs/")
    assert reply.status_code == 503
    assert reply["Retry-After"] == "3"
    assert reply.json() == {
        "detail": "The database is briefly unavailable; nothing was lost. Try again in 3 s.",
        "retry_after": 3,
        "unavailable": "database",
    }

    monkeypatch.setattr("annotate.views.machine.visible_to", down)
    page = Client()
    page.force_login(ada)
    reply = page.get("/models/")
    assert reply.status_code == 503 and reply["Retry-After"] == "3"
    assert reply["Content-Type"].startswith("text/html") and b"Briefly unavailable" in reply.content


def test_an_outage_outside_a_view_answers_503_and_other_errors_stay_500(ada, monkeypatch):
    # handler500 runs inside the handler's except block for what fails outside a view (a middleware)
    from annotate.infra.outages import server_error

    factory = RequestFactory()
    try:
        raise OperationalError("FATAL: remaining connection slots are reserved for superusers")
    except OperationalError:
        api_reply = server_error(factory.post("/api/work/assignments/x/submit/"))
        page_reply = server_error(factory.get("/studies/"))
    assert api_reply.status_code == page_reply.status_code == 503
    assert json.loads(api_reply.content)["unavailable"] == "database" and api_reply["Retry-After"]
    assert b"Briefly unavailable" in page_reply.content
    try:
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379")
    except redis.ConnectionError:
        queue_reply = server_error(factory.get("/api/jobs/1/"))
    assert json.loads(queue_reply.content)["unavailable"] == "job queue"

    def broken(*args, **kwargs):
        raise ValueError("a bug, not an outage")

    monkeypatch.setattr("annotate.api.machine.ModelRunViewSet.get_queryset", broken)
    client = Client(raise_request_exception=False)
    client.force_login(ada)
    reply = client.get("/api/model-runs/")
    assert reply.status_code == 500 and reply.json() == {"detail": "Server error."}


def test_kept_connections_are_checked_before_reuse():
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True


def test_the_run_page_shows_the_training_job_history(ada, queue):
    run = create_model_run(ada, tiny_dataset(ada), "bilstm_attention", TINY_PARAMS)
    beat_at = timezone.now() - timedelta(seconds=31)
    Job.objects.create(
        kind=jobs.TRAIN_KIND,
        key=jobs.training_key(run),
        task=jobs.train_model.name,
        queue="cpu",
        status=Job.Status.RUNNING,
        worker="w1@box",
        heartbeat=beat_at,
        attempts=1,
        events=[{"at": "2026-01-01T10:00:00+00:00", "event": "started by w1@box"}],
    )
    client = Client()
    client.force_login(ada)
    page = client.get(f"/models/{run.pk}/").content.decode()  # the page sweeps as it is read
    assert f"worker w1@box lost at {beat_at:%H:%M:%S} UTC, re-queued" in page
    assert "started by w1@box" in page


@pytest.mark.django_db(transaction=True)  # autocommit: sent at once, as in a request
def test_one_researchers_jobs_cannot_hold_the_queue(ada, queue, settings):
    """Ada starts six jobs, then Bob one: only two of Ada's reach the broker, so Bob's waits behind two of
    hers, not six; each of hers that finishes lets the next (oldest first) go at the next sweep."""
    settings.HATLAB_JOBS_PER_OWNER = 2
    bob = make_user("bob", RESEARCHER_GROUP)

    def start(owner, key: str) -> Job:
        row = Job.objects.create(kind="k", key=key, created_by=owner)
        dispatch.dispatch(row, jobs.train_model, "cpu")
        return row

    adas = [start(ada, f"ada-{i}") for i in range(6)]
    bobs = start(bob, "bob-0")
    assert queued_ids(queue) == [dispatch.task_id(j.pk) for j in (*adas[:2], bobs)]
    held = Job.objects.filter(pk__in=[j.pk for j in adas[2:]])
    assert all(j.sent is None and "at most 2 run at a time" in j.message for j in held)
    # a sweep sends none of hers while two are in flight (and does not stop at them: Bob's next goes)
    later = start(bob, "bob-1")
    Job.objects.filter(pk__in=[j.pk for j in adas[2:]]).update(updated=timezone.now() - timedelta(seconds=6))
    done = sweeper.sweep()
    assert done.sent == [] and done.unsent == []
    assert queued_ids(queue)[-1] == dispatch.task_id(later.pk)
    # one of hers finishes: the next sweep sends exactly one more, the oldest held
    Job.objects.filter(pk=adas[0].pk).update(status=Job.Status.DONE)
    done = sweeper.sweep()
    assert done.sent == [adas[2].pk]
    assert Job.objects.get(pk=adas[2].pk).message == ""
    assert [j.sent is None for j in Job.objects.filter(pk__in=[j.pk for j in adas[3:]])] == [True] * 3
    # a running job counts as in flight too
    Job.objects.filter(pk=adas[1].pk).update(status=Job.Status.RUNNING, heartbeat=timezone.now())
    assert sweeper.sweep().sent == []


@pytest.mark.django_db(transaction=True)  # autocommit: sent at once, as in a request
def test_a_sweep_sends_the_jobs_waiting_behind_one_it_holds(ada, queue, settings):
    """A job whose owner has no room is held and skipped, not a stop: another owner's job that waits
    behind it (older first) is sent in the same sweep."""
    settings.HATLAB_JOBS_PER_OWNER = 1
    bob = make_user("bob", RESEARCHER_GROUP)
    rows = []
    for owner, key in ((ada, "ada-0"), (ada, "ada-1"), (bob, "bob-0")):
        row = Job.objects.create(kind="k", key=key, created_by=owner)
        dispatch.dispatch(row, jobs.train_model, "cpu")
        rows.append(row)
    _, held, waiting = rows
    # Bob's job never reached the broker; both wait past the grace, hers first
    Job.objects.filter(pk=waiting.pk).update(sent=None)
    Job.objects.filter(pk__in=[held.pk, waiting.pk]).update(updated=timezone.now() - timedelta(seconds=6))
    done = sweeper.sweep()
    assert done.sent == [waiting.pk] and done.unsent == []
    assert Job.objects.get(pk=held.pk).sent is None
    assert queued_ids(queue)[-1] == dispatch.task_id(waiting.pk)


def test_the_sweep_job_runs_as_the_beat_sends_it(queue):
    """The beat's sweep task takes no argument and is not a retried (bound) task: run as a worker runs
    it, it returns what it did."""
    result = sweeper.sweep_jobs.apply()
    assert result.successful(), result.traceback
    assert result.get() == {"lost": [], "sent": [], "unsent": []}


def test_a_jobs_history_keeps_its_last_twenty_events_oldest_first():
    """Each event is appended with its time; past twenty the oldest drop off, so a job retried for days
    keeps a short history that ends with what happened last."""
    row = Job(kind="k", key="history", events=[])
    at = timezone.now()
    for n in range(25):
        row.events = dispatch.event(row, f"event {n}", at + timedelta(seconds=n))
    assert [e["event"] for e in row.events] == [f"event {n}" for n in range(5, 25)]
    assert row.events[-1]["at"] == (at + timedelta(seconds=24)).isoformat(timespec="seconds")


def test_only_a_queued_job_with_a_task_that_was_never_sent_is_unsent(settings):
    """A job waits for the broker only while it is queued, has a task and was not sent: past the grace
    or after a failed send. A running or finished job, a row with no task, or a sent job never does."""
    old = timezone.now() - timedelta(seconds=settings.HATLAB_JOB_SEND_GRACE_S + 1)

    def job(**fields) -> Job:
        given = {"status": Job.Status.QUEUED, "task": "annotate.jobs.train", "sent": None, "updated": old}
        return Job(kind="k", key="unsent", **{**given, **fields})

    assert dispatch.unsent(job())
    assert dispatch.unsent(job(updated=timezone.now(), message=dispatch.QUEUE_DOWN_NOTE))
    assert not dispatch.unsent(job(updated=timezone.now()))  # dispatched just now: about to be sent
    for status in (Job.Status.RUNNING, Job.Status.DONE):
        assert not dispatch.unsent(job(status=status))
        assert not dispatch.unsent(job(status=status, task=""))
    assert not dispatch.unsent(job(task=""))
    assert not dispatch.unsent(job(sent=timezone.now()))
