"""Celery jobs. Each module of this package holds the jobs of one concern (declared with
:func:`annotate.jobs.base.job`); all are imported here, so the Celery app's autodiscovery of
``annotate.jobs`` finds them all."""

from __future__ import annotations

from explain_engine.api import discover

discover(__name__)
