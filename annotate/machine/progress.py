"""Progress of a running job, written to its rows so pages and the API can show a progress bar."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.utils import timezone

from annotate.models import Job, ModelRun

Progress = Callable[[float, str], None]


def no_progress(fraction: float, message: str = "") -> None:
    """A progress callback that records nothing."""


class RowProgress:
    """A progress callback that updates ``ModelRun.progress`` and/or ``Job.progress``.

    Writes are throttled to one every ``interval`` seconds (and whenever the fraction has moved by at
    least ``step``), except the final 1.0, which is always written. Fractions never go backwards. With
    ``attempt`` (the job's, :mod:`annotate.jobs.base`), nothing is written once the job row has moved
    on to a later attempt: a superseded run does not move the winner's bar.
    """

    def __init__(
        self,
        *,
        model_run_id: int | None = None,
        job_id: int | None = None,
        interval: float = 0.5,
        step: float = 0.05,
        attempt: int | None = None,
    ):
        self.model_run_id = model_run_id
        self.job_id = job_id
        self.attempt = attempt
        self.interval = interval
        self.step = step
        self.last_time = -float("inf")
        self.last_fraction = -1.0
        self.fraction = 0.0

    def __call__(self, fraction: float, message: str = "") -> None:
        fraction = min(max(float(fraction), self.fraction), 1.0)
        self.fraction = fraction
        now = time.monotonic()
        due = now - self.last_time >= self.interval or fraction - self.last_fraction >= self.step
        if not due and fraction < 1.0:
            return
        self.last_time, self.last_fraction = now, fraction
        fields = {"progress": fraction, "message": message[:2000]}
        if self.job_id is not None:
            rows = Job.objects.filter(pk=self.job_id)
            if self.attempt is not None:
                rows = rows.filter(attempts=self.attempt, status=Job.Status.RUNNING)
            if not rows.update(updated=timezone.now(), **fields) and self.attempt is not None:
                return  # superseded
        if self.model_run_id is not None:
            ModelRun.objects.filter(pk=self.model_run_id).update(**fields)
