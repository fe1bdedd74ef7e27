"""In-process jobs off the request: the demo (SQLite, no broker: ``CELERY_TASK_ALWAYS_EAGER``) runs a
job on one background thread, so the page that asked for it answers at once and the job's page shows
its progress, as it does with a Celery worker.

One thread runs the jobs one after another: at most one writer besides the requests, which SQLite
serialises (``config.settings`` gives it WAL and a busy timeout when ``HATLAB_JOBS_IN_THREAD`` is on).
The thread closes its database connections after each job. A job that raises is failed on its row by
:func:`annotate.jobs.base.run_job`; the exception is logged here, not raised into a request.
"""

from __future__ import annotations

import logging
import queue
import threading

from celery import current_app
from django.db import connections

log = logging.getLogger(__name__)

_jobs: queue.Queue[tuple[str, int, str]] = queue.Queue()
_lock = threading.Lock()
_worker: list[threading.Thread] = []


def submit(task_name: str, job_id: int, task_id: str) -> None:
    """Run the task ``task_name`` for job row ``job_id`` on the background thread (started when
    needed), after the jobs before it."""
    with _lock:
        if not _worker or not _worker[0].is_alive():
            thread = threading.Thread(target=_run_forever, name="hatlab-jobs", daemon=True)
            _worker[:] = [thread]
            thread.start()
    _jobs.put((task_name, job_id, task_id))


def wait_idle() -> None:
    """Block until every submitted job has run (tests, and a clean shutdown)."""
    _jobs.join()


def _run_forever() -> None:
    while True:
        task_name, job_id, task_id = _jobs.get()
        try:
            current_app.tasks[task_name].apply(args=[job_id], task_id=task_id)
        except Exception:
            log.exception("in-process job %s (%s) failed", job_id, task_name)
        finally:
            connections.close_all()
            _jobs.task_done()
