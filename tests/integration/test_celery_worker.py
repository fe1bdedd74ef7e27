"""A training job sent through the real Redis broker (this run's own database, tests/services.py) to a
real ``celery -A config worker`` process, which stores the run's machine attention maps in the test PostgreSQL database; and a job
whose worker dies mid-run is finished by the next worker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.db import connection
from kombu import Connection

from annotate.access import RESEARCHER_GROUP
from annotate.jobs import machine as jobs
from annotate.machine import create_model_run
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

    def start(name: str) -> subprocess.Popen:
        log = tmp_path / f"{name}.log"
        proc = subprocess.Popen(
            [
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
            env=env,
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

    first = start_worker("hatlab-first")
    _wait_for(lambda: ModelRun.objects.get(pk=run.pk).status == ModelRun.Status.RUNNING, [first], tmp_path)
    first.kill()  # the worker dies mid-task
    first.wait(30)
    assert ModelRun.objects.get(pk=run.pk).status == ModelRun.Status.RUNNING
    assert broker.llen("cpu") == 0
    time.sleep(0.1)
    _redeliver_unacknowledged()
    assert broker.llen("cpu") == 1

    second = start_worker("hatlab-second")
    _wait_for(
        lambda: Job.objects.get(pk=job.pk).status in (Job.Status.DONE, Job.Status.FAILED), [second], tmp_path
    )
    job.refresh_from_db()
    run.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    assert run.status == ModelRun.Status.DONE
    assert run.metrics["epochs_run"] == 30
    assert Prediction.objects.filter(model_run=run).count() == dataset.documents.count()
