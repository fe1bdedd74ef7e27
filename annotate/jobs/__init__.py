"""Celery jobs. Each module of this package holds the tasks of one concern and is imported here,
so the Celery app's autodiscovery of ``annotate.jobs`` finds them all."""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
