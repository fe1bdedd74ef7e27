"""Long work in the demo shows progress: with in-process jobs on the background thread
(``HATLAB_JOBS_IN_THREAD``), "Train again" answers at once with the run's page showing the job's
progress bar (not a page held for the whole training), and the page turns to the trained run by itself
when the job is done. Screenshots: ``tests/browser/output/demo_jobs/``."""

from __future__ import annotations

import threading
import time

import pytest
from celery import current_app

from annotate.jobs import in_process
from annotate.machine import create_model_run
from annotate.models import ModelRun
from tests.annotate.conftest import TINY_PARAMS, make_user, tiny_dataset
from tests.browser.conftest import OUTPUT
from tests.browser.test_dashboards import signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def jobs_in_thread(settings, tmp_path, monkeypatch):
    settings.HATLAB_JOBS_IN_THREAD = True
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_S3_BUCKET = ""
    settings.HATLAB_TORCH_THREADS = 1
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    gate = threading.Event()
    from annotate.machine import jobs as machine_jobs

    real = machine_jobs.run_training

    def held(*args, **kwargs):
        assert gate.wait(60), "the test never let training go"
        return real(*args, **kwargs)

    monkeypatch.setattr(machine_jobs, "run_training", held)
    try:
        yield gate
    finally:
        gate.set()
        in_process.wait_idle()
        current_app.conf.task_always_eager = eager


def test_training_answers_at_once_and_shows_progress(live_server, browser_context, jobs_in_thread):
    shots = OUTPUT / "demo_jobs"
    shots.mkdir(parents=True, exist_ok=True)
    user = make_user("ada", "researcher")
    run = create_model_run(user, tiny_dataset(user), "bilstm_attention", TINY_PARAMS)
    ModelRun.objects.filter(pk=run.pk).update(status=ModelRun.Status.FAILED, message="out of memory")
    page, errors = signed_in(browser_context, live_server, user)
    page.goto(f"{live_server.url}/models/{run.pk}/")
    started = time.perf_counter()
    with page.expect_navigation():
        page.get_by_role("button", name="Train again").click()
    answered_s = time.perf_counter() - started
    assert answered_s < 3, f"the train request took {answered_s:.1f} s"
    widget = page.locator(".progress-widget").first
    assert widget.get_attribute("data-status") in ("queued", "running")
    assert widget.locator("progress").is_visible()
    page.screenshot(path=str(shots / "training_queued.png"), full_page=True)
    jobs_in_thread.set()
    page.wait_for_selector(".progress-widget[data-status='done']", timeout=60_000)
    page.screenshot(path=str(shots / "training_done.png"), full_page=True)
    run.refresh_from_db()
    assert run.status == ModelRun.Status.DONE
    assert not errors, errors
