"""Task kinds: a registry of :class:`~annotate.tasks.base.TaskKind` singletons.

A study names its kind (``Study.kind``); the kind validates the study's config, builds its items,
decides what the browser may see of an item, validates and grades answers, and says which answer
categories agreement is computed over. A kind module in this package registers its class with
:func:`register`; every module here is imported when the package is.
"""

from __future__ import annotations

import importlib
import pkgutil

from annotate.tasks.base import TaskKind

TASK_KINDS: dict[str, TaskKind] = {}


def register(cls: type[TaskKind]) -> type[TaskKind]:
    """Class decorator: add one instance of ``cls`` to :data:`TASK_KINDS` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    TASK_KINDS[cls.name] = cls()
    return cls


def get_kind(name: str) -> TaskKind:
    """The task kind registered as ``name``; ``KeyError`` naming the known kinds otherwise."""
    try:
        return TASK_KINDS[name]
    except KeyError:
        raise KeyError(f"unknown task kind {name!r}; known: {sorted(TASK_KINDS)}") from None


def _discover() -> None:
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_") and module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")


_discover()

__all__ = ["TASK_KINDS", "TaskKind", "get_kind", "register"]
