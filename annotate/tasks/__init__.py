"""Task kinds: one folder per kind (or family of kinds), each registered in :data:`TASK_KINDS`.

A study names its kind (``Study.kind``); the kind validates the study's config, builds its items,
decides what the browser may see of an item, validates and grades answers, says which answer
categories agreement is computed over, and serves its own researcher pages (see
:class:`~annotate.tasks.base.TaskKind`). A kind's folder holds all of it: the kind class (registered
with :func:`register`), its ``urls.py`` (gathered by :func:`task_urlpatterns`), its ``templates/``
(found through ``TEMPLATES["DIRS"]`` in the settings) and its ``demo.py``, whose
``seed_demo(owner, reviews)`` makes the kind's running demo studies (called by ``manage.py seed_demo``).
Adding a kind is a new folder here plus one page script in ``frontend/src/kinds/``.

The folders are imported by :func:`load_kinds` once the app is ready (:meth:`annotate.apps.AnnotateConfig.ready`),
not when this package is: the modules that look kinds up (quality, exports) import this package, and a kind
imports them in turn (its export tables read the quality measures), so loading the kinds as a side effect of
importing the registry would make every such import a circle.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

from annotate.tasks.base import TaskKind
from explain_engine.api import Registry, discover

TASK_KINDS: Registry[TaskKind] = Registry("task kind")

#: Modules of this package that hold shared code, not kinds.
SHARED_MODULES = ("base", "export_spec", "gold_format", "results", "study_form", "words")


def register(**meta: Any) -> Callable[[type[TaskKind]], type[TaskKind]]:
    """Class decorator: register one instance of the class under its ``name`` with ``meta``.

    Metadata the app reads: ``family`` (kinds that share a folder and pages), ``label`` (the
    kind in a study form's choice list), ``default`` (the kind a study gets when none is named) and
    ``attention_maps`` (an answer's ``map`` is a human attention map over the document's words,
    shown beside the machine's on the heat-map page).
    """

    def decorate(cls: type[TaskKind]) -> type[TaskKind]:
        TASK_KINDS.add(cls.name, cls(), **meta)
        return cls

    return decorate


def get_kind(name: str) -> TaskKind:
    """The task kind registered as ``name``; :class:`~explain_engine.api.UnknownName` otherwise."""
    return TASK_KINDS[name]


def default_kind() -> str:
    """The name of the kind registered with ``default=True``."""
    return TASK_KINDS.where(default=True)[0]


#: The kind folders, in discovery order (filled by :func:`load_kinds`).
KIND_PACKAGES: list[str] = []


def load_kinds() -> list[str]:
    """Import every kind folder, which registers its kinds; returns the folders' names."""
    KIND_PACKAGES[:] = discover(__name__, skip=SHARED_MODULES)
    return KIND_PACKAGES


def folder_modules(name: str) -> list[ModuleType]:
    """The module ``name`` (``urls``, ``demo``) of every kind folder that has one, in discovery order."""
    found = []
    for package in KIND_PACKAGES:
        module = f"{__name__}.{package}.{name}"
        if importlib.util.find_spec(module) is not None:
            found.append(importlib.import_module(module))
    return found


def task_urlpatterns() -> list:
    """The URL patterns every kind folder declares in its ``urls.py``."""
    return [pattern for module in folder_modules("urls") for pattern in module.urlpatterns]


__all__ = [
    "TASK_KINDS",
    "TaskKind",
    "default_kind",
    "folder_modules",
    "get_kind",
    "load_kinds",
    "register",
    "task_urlpatterns",
]
