"""In-process jobs on the background thread (``HATLAB_JOBS_IN_THREAD``, the demo): asking for a job
answers at once while the job runs, its row shows the progress the job reports, it ends done with its
result, and a job that fails is failed on its row without raising into the request that asked."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from celery import current_app, shared_task

from annotate.jobs import in_process
from annotate.jobs.base import run_job
from annotate.jobs.dispatch import dispatch
from annotate.models import Job

GATE = threading.Event()


def _work(job: Job) -> dict:
    Job.objects.filter(pk=job.pk).update(progress=0.5, message="half way")
    if job.params.get("fail"):
        raise ValueError("the data set has no documents")
    if not GATE.wait(30):
        raise TimeoutError("the test never opened the gate")
    return {"answer": 42}


@shared_task(name="tests.in_process.gated")
def gated(job_id: int) -> dict:
    return run_job(job_id, _work)


@pytest.fixture
def in_thread(settings) -> Iterator[None]:
    settings.HATLAB_JOBS_IN_THREAD = True
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    GATE.clear()
    try:
        yield
    finally:
        GATE.set()
        in_process.wait_idle()
        current_app.conf.task_always_eager = eager


def _wait_for(job: Job, **expected) -> Job:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if all(getattr(job, k) == v for k, v in expected.items()):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job.pk} never reached {expected}: {job.status} {job.progress} {job.message}")


@pytest.mark.django_db(transaction=True)
def test_asking_answers_at_once_and_the_row_shows_progress(in_thread):
    job = Job.objects.create(kind="test", key="gated-1", params={})
    started = time.perf_counter()
    dispatch(job, gated, "cpu")  # autocommit: sent at once
    asked_s = time.perf_counter() - started
    assert asked_s < 2, asked_s
    running = _wait_for(job, status=Job.Status.RUNNING, progress=0.5)
    assert running.message == "half way" and running.sent is not None
    GATE.set()
    in_process.wait_idle()
    done = _wait_for(job, status=Job.Status.DONE)
    assert done.result == {"answer": 42} and done.progress == 1.0


@pytest.mark.django_db(transaction=True)
def test_a_failing_job_fails_on_its_row_and_not_in_the_request(in_thread):
    job = Job.objects.create(kind="test", key="gated-2", params={"fail": True})
    dispatch(job, gated, "cpu")
    in_process.wait_idle()
    failed = _wait_for(job, status=Job.Status.FAILED)
    assert "no documents" in failed.message
    # the thread is alive for the next job
    second = Job.objects.create(kind="test", key="gated-3", params={})
    GATE.set()
    dispatch(second, gated, "cpu")
    in_process.wait_idle()
    assert _wait_for(second, status=Job.Status.DONE).result == {"answer": 42}


@pytest.mark.django_db(transaction=True)
def test_without_the_setting_an_eager_job_runs_inside_the_request(settings):
    settings.HATLAB_JOBS_IN_THREAD = False
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    GATE.set()
    try:
        job = Job.objects.create(kind="test", key="gated-4", params={})
        dispatch(job, gated, "cpu")
        job.refresh_from_db()
        assert job.status == Job.Status.DONE  # done before dispatch returned
    finally:
        current_app.conf.task_always_eager = eager
