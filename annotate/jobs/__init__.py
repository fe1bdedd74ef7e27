"""The job machinery: the :func:`~annotate.jobs.base.job` decorator and registry (:mod:`.base`), the
outbox that sends a job once its row is committed (:mod:`.dispatch`), the running job's heartbeat
(:mod:`.heartbeat`) and the sweeper that re-queues lost jobs (:mod:`.sweeper`).

The jobs themselves live with their concern, each package's ``jobs.py`` (``annotate/machine/jobs.py``,
``annotate/dashboards/jobs.py``, ``annotate/crowd/jobs.py``, ``annotate/handout/jobs.py``): the machinery
never imports a concern, so a concern may start its own jobs. :func:`job_modules` imports them all, for
the app when it is ready and for the Celery worker.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

import annotate
from explain_engine.api import discover

discover(__name__)


def job_modules() -> list[str]:
    """Import ``annotate.<package>.jobs`` of every package of the app that has one; returns their names."""
    names = []
    for info in sorted(pkgutil.iter_modules(annotate.__path__), key=lambda info: info.name):
        module = f"annotate.{info.name}.jobs"
        if info.ispkg and info.name != "jobs" and importlib.util.find_spec(module) is not None:
            importlib.import_module(module)
            names.append(module)
    return names
