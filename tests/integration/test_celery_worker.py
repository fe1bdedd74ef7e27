"""A training job sent through the real Redis broker (this run's own database, tests/services.py) to a
real ``celery -A config worker`` process, which stores the run's machine attention maps in the test PostgreSQL database; a job
whose worker dies mid-run is finished by the next worker (the broker's redelivery, and the heartbeat sweep
long before it); a job started while the broker is down runs once it is back."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.db import connection
from kombu import Connection

from annotate.access import RESEARCHER_GROUP
from annotate.jobs.dispatch import QUEUE_DOWN_NOTE
from annotate.machine import create_model_run, jobs
from annotate.models import Job, ModelRun, Prediction
from tests.annotate.conftest import TINY_PARAMS, make_user, tiny_dataset
from tests.services import database_url

ROOT = Path(__file__).resolve().parents[2]
BROKER_URL = os.environ["HATLAB_TEST_BROKER_URL"]  # set per run by tests/conftest.py

pytestmark = pytest.mark.django_db(transaction=True)


def _fresh_connections(app) -> None:
    """Drop the app's broker connection pools so the next send connects to ``app.conf.broker_url``."""
    app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None


@pytest.fixture
def broker(settings):
    """The Celery app pointed at the test broker database, emptied before and after."""
    from config.celery import app

    client = redis.Redis.from_url(BROKER_URL)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.fail(f"Redis is not reachable at {BROKER_URL}: {exc}")
    client.flushdb()
    previous = app.conf.broker_url
    app.conf.broker_url = BROKER_URL
    _fresh_connections(app)
    yield client
    app.conf.broker_url = previous
    _fresh_connections(app)
    client.flushdb()


@pytest.fixture
def start_worker(tmp_path, settings):
    """Start ``celery -A config worker`` (solo pool, queue ``cpu``) on the test database."""
    settings.MEDIA_ROOT = tmp_path / "media"
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(db),
        "DATABASE_CONN_MAX_AGE": "0",
        "CELERY_BROKER_URL": BROKER_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "HATLAB_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "HATLAB_TORCH_THREADS": "1",
        "HATLAB_GPU_QUEUE": "false",
        "PYTHONUNBUFFERED": "1",
    }
    workers: list[tuple[subprocess.Popen, Path]] = []

    def start(name: str, extra_env: dict | None = None, beat: bool = False) -> subprocess.Popen:
        """A worker named ``name`` (with ``beat``: ``celery beat`` instead, whose schedule file is kept in
        ``tmp_path``); ``extra_env`` adds to its environment."""
        log = tmp_path / f"{name}.log"
        command = (
            ["beat", "--schedule", str(tmp_path / f"{name}-schedule"), "--loglevel", "INFO"] if beat else None
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *command]
            if command
            else [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool",
                "solo",
                "-Q",
                "cpu",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"{name}@%h",
            ],  # fmt: skip
            cwd=ROOT,
            env={**env, **(extra_env or {})},
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        workers.append((proc, log))
        return proc

    yield start
    for proc, _ in workers:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _logs(tmp_path: Path) -> str:
    return "\n".join(
        f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in sorted(tmp_path.glob("*.log"))
    )


def _wait_for(check, procs, tmp_path, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        for proc in procs:
            if proc.poll() is not None:
                pytest.fail(f"the worker exited with {proc.returncode}\n{_logs(tmp_path)}")
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:.0f} s\n{_logs(tmp_path)}")


def test_worker_trains_a_run_and_stores_its_attention_maps(broker, start_worker, tmp_path, settings):
    user = make_user("ada", RESEARCHER_GROUP)
    dataset = tiny_dataset(user)
    run = create_model_run(user, dataset, "bilstm_attention", TINY_PARAMS)
    job = jobs.enqueue_training(run, user)  # autocommit: sent to the broker at once
    assert broker.llen("cpu") == 1

    worker = start_worker("hatlab-train")
    _wait_for(
        lambda: Job.objects.get(pk=job.pk).status in (Job.Status.DONE, Job.Status.FAILED), [worker], tmp_path
    )

    job.refresh_from_db()
    run.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    assert run.status == ModelRun.Status.DONE and run.progress == 1.0
    assert (Path(settings.MEDIA_ROOT) / run.artifact / "model.pt").is_file()
    predictions = Prediction.objects.filter(model_run=run).select_related("document")
    assert predictions.count() == dataset.documents.count()
    for prediction in predictions:
        assert len(prediction.attention) == len(prediction.document.words)
        assert sum(prediction.attention) == pytest.approx(1.0, abs=1e-6)

    # Asking again for a finished run sends nothing and changes nothing.
    assert jobs.enqueue_training(run, user).pk == job.pk
    assert broker.llen("cpu") == 0


def _redeliver_unacknowledged() -> None:
    """What the broker does for a message whose worker vanished once the visibility timeout has passed
    (an hour by default): put it back on its queue. Only unacknowledged (``acks_late``) messages are
    still there to put back."""
    with Connection(BROKER_URL, transport_options={"visibility_timeout": 0}) as conn:
        conn.default_channel.qos.restore_visible()


def test_a_job_whose_worker_dies_is_finished_by_the_next_worker(broker, start_worker, tmp_path):
    user = make_user("ada", RESEARCHER_GROUP)
    dataset = tiny_dataset(user)
    longer = {**TINY_PARAMS, "epochs": 30, "patience": None}
    run = create_model_run(user, dataset, "bilstm_attention", longer)
    job = jobs.enqueue_training(run, user)

    # The broker redelivers after its visibility timeout (an hour), long after the job's heartbeat went
    # stale; here it is made to redeliver at once, so the heartbeat goes stale in 2 s.
    stale_fast = {"HATLAB_JOB_HEARTBEAT_S": "0.3", "HATLAB_JOB_LOST_AFTER_S": "2"}
    first = start_worker("hatlab-first", stale_fast)
    _wait_for(lambda: ModelRun.objects.get(pk=run.pk).status == ModelRun.Status.RUNNING, [first], tmp_path)
    first.kill()  # the worker dies mid-task
    first.wait(30)
    assert ModelRun.objects.get(pk=run.pk).status == ModelRun.Status.RUNNING
    assert broker.llen("cpu") == 0
    time.sleep(2.5)  # a redelivery while the heartbeat is fresh would be dropped as a second copy
    _redeliver_unacknowledged()
    assert broker.llen("cpu") == 1

    second = start_worker("hatlab-second", stale_fast)
    _wait_for(
        lambda: Job.objects.get(pk=job.pk).status in (Job.Status.DONE, Job.Status.FAILED), [second], tmp_path
    )
    job.refresh_from_db()
    run.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    assert run.status == ModelRun.Status.DONE
    assert run.metrics["epochs_run"] == 30
    assert Prediction.objects.filter(model_run=run).count() == dataset.documents.count()


# Short intervals, so that a lost worker is noticed in seconds: a heartbeat every 0.3 s, lost after 3 s
# without one, a sweep every second.
FAST_SWEEP = {
    "HATLAB_JOB_HEARTBEAT_S": "0.3",
    "HATLAB_JOB_LOST_AFTER_S": "3",
    "HATLAB_JOB_SWEEP_S": "1",
    "HATLAB_JOB_SEND_GRACE_S": "1",
}


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def _ready(log: Path) -> bool:
    return log.exists() and " ready." in log.read_text(errors="replace")


def test_a_job_started_while_the_broker_is_down_runs_once_it_is_back(
    broker, start_worker, tmp_path, settings
):
    from rest_framework.test import APIClient

    from config.celery import app

    settings.HATLAB_JOB_SWEEP_S = 0.0  # every request that touches jobs sweeps
    user = make_user("ada", RESEARCHER_GROUP)
    dataset = tiny_dataset(user)
    api = APIClient()
    api.force_authenticate(user)
    app.conf.broker_url = _closed_port_url()
    _fresh_connections(app)
    reply = api.post(
        "/api/model-runs/",
        {"dataset": dataset.pk, "architecture": "bilstm_attention", "params": TINY_PARAMS},
        format="json",
    )
    assert reply.status_code == 201 and reply.json()["queue_note"] == QUEUE_DOWN_NOTE
    job_id = reply.json()["training_job"]
    assert broker.llen("cpu") == 0

    worker = start_worker("hatlab-after-outage")
    app.conf.broker_url = BROKER_URL  # the broker is back
    _fresh_connections(app)
    assert api.get(f"/api/jobs/{job_id}/").json()["sent"] is not None  # the page's poll sent it
    _wait_for(
        lambda: Job.objects.get(pk=job_id).status in (Job.Status.DONE, Job.Status.FAILED), [worker], tmp_path
    )
    job = Job.objects.get(pk=job_id)
    assert job.status == Job.Status.DONE, job.message
    assert job.attempts == 1 and job.worker.startswith("hatlab-after-outage@")
    assert ModelRun.objects.get(pk=reply.json()["id"]).status == ModelRun.Status.DONE


def test_a_killed_worker_is_noticed_by_its_heartbeat_and_its_job_finished_by_another(
    broker, start_worker, tmp_path
):
    user = make_user("ada", RESEARCHER_GROUP)
    dataset = tiny_dataset(user)
    run = create_model_run(user, dataset, "bilstm_attention", {**TINY_PARAMS, "epochs": 30, "patience": None})
    beat = start_worker("hatlab-beat", FAST_SWEEP, beat=True)
    workers = {name: start_worker(name, FAST_SWEEP) for name in ("hatlab-one", "hatlab-two")}
    _wait_for(
        lambda: all(_ready(tmp_path / f"{n}.log") for n in workers), [beat, *workers.values()], tmp_path
    )

    job = jobs.enqueue_training(run, user)
    _wait_for(
        lambda: Job.objects.get(pk=job.pk).status == Job.Status.RUNNING, [beat, *workers.values()], tmp_path
    )
    first_beat = Job.objects.get(pk=job.pk).heartbeat
    _wait_for(lambda: Job.objects.get(pk=job.pk).heartbeat != first_beat, [beat, *workers.values()], tmp_path)
    running = Job.objects.get(pk=job.pk)
    victim = running.worker.split("@")[0]
    (survivor,) = set(workers) - {victim}

    workers[victim].send_signal(signal.SIGKILL)  # mid-job, no goodbye
    killed = time.monotonic()
    workers[victim].wait(30)
    _wait_for(
        lambda: any("lost at" in e["event"] for e in Job.objects.get(pk=job.pk).events),
        [beat, workers[survivor]],
        tmp_path,
        timeout=60,
    )
    noticed_s = time.monotonic() - killed
    # lost after 3 s without a heartbeat, swept every 1 s: re-queued well within a minute
    assert noticed_s < 3 + 1 + 10, noticed_s

    _wait_for(
        lambda: Job.objects.get(pk=job.pk).status in (Job.Status.DONE, Job.Status.FAILED),
        [beat, workers[survivor]],
        tmp_path,
    )
    job.refresh_from_db()
    run.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    assert job.worker.startswith(f"{survivor}@") and job.attempts == 2
    events = [e["event"] for e in job.events]
    assert events[0].startswith(f"started by {victim}@")
    assert events[1].startswith(f"worker {victim}@") and events[1].endswith("re-queued")
    assert events[2].startswith(f"started by {survivor}@")
    assert run.status == ModelRun.Status.DONE and run.metrics["epochs_run"] == 30
    assert Prediction.objects.filter(model_run=run).count() == dataset.documents.count()
    print(f"worker killed -> job re-queued in {noticed_s:.1f} s")
