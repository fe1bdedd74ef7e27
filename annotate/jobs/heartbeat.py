"""A running job's sign of life: a thread that stamps ``Job.heartbeat`` every few seconds while the job's
work runs, so that a job whose worker died is noticed (:mod:`annotate.jobs.sweeper`) long before the
broker's visibility timeout would hand its message to another worker.

A thread rather than the progress callback: a job may go minutes between progress reports (one long
epoch), and the stamp must not depend on how often a job reports.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from django.db import connection
from django.utils import timezone

from annotate.models import Job

log = logging.getLogger(__name__)


class Heartbeat:
    """Context manager: while inside, stamp job ``job_id`` (still running on ``worker``) every
    ``every_s`` seconds from a daemon thread with its own database connection. With ``attempt``, only
    while the row is still that attempt (a run that lost its row to a later one stamps nothing)."""

    def __init__(
        self, job_id: int, worker: str, every_s: float, enabled: bool = True, attempt: int | None = None
    ):
        self.job_id = job_id
        self.attempt = attempt
        self.worker = worker
        self.every_s = max(float(every_s), 0.05)
        self.enabled = enabled
        self.beats = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Heartbeat:
        if self.enabled:
            self._thread = threading.Thread(
                target=self._run, name=f"job-{self.job_id}-heartbeat", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.every_s + 5)

    def beat(self) -> None:
        """One stamp (only while the row is still this worker's running job)."""
        rows = Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING, worker=self.worker)
        if self.attempt is not None:
            rows = rows.filter(attempts=self.attempt)
        rows.update(heartbeat=timezone.now())
        self.beats += 1

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every_s):
                try:
                    self.beat()
                except Exception as exc:  # a database hiccup: the next beat tries again
                    log.warning("heartbeat of job %s failed: %s", self.job_id, exc)
                    connection.close()
        finally:
            connection.close()
