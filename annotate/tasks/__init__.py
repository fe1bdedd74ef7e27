"""The task-kind contract: the registry :data:`TASK_KINDS`, the base class
(:class:`~annotate.tasks.base.TaskKind`) and what every kind builds on (page words, gold formats,
export columns, the create form and the results page). The kinds themselves are plug-ins on their own
floor, one folder each under :mod:`annotate.kinds`. Everything about a kind is declared on its class
(name, label, family, whether it is the default, whether its answers are attention maps, its results page).

A study names its kind (``Study.kind``); the kind validates the study's config, builds its items,
decides what the browser may see of an item, validates and grades answers, says which answer
categories agreement is computed over, and declares its results page (mounted for every kind at
``studies/<uid>/results/``, :mod:`annotate.tasks.results`) (see
:class:`~annotate.tasks.base.TaskKind`). A kind's folder holds all of it: ``kind.py`` (the class,
registered with :func:`register`), ``config.py``, ``forms.py``, ``results.py``, ``demo.py`` (whose
``seed_demo(owner, reviews)`` makes the kind's running demo studies), ``templates/<folder>/`` (found
through ``TEMPLATES["DIRS"]``) and, when it has pages of its own, ``urls.py`` (gathered by
:func:`task_urlpatterns`). Adding a kind is a new folder under ``annotate/kinds/`` plus one page
script (and its stylesheet) in ``frontend/src/kinds/``.

The folders are imported by :func:`load_kinds` once the app is ready (:meth:`annotate.apps.AnnotateConfig.ready`),
not when this package is: the contract never imports a kind, and a kind imports the contract and the
domain packages (quality, exports) it reads.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from annotate.tasks.base import TaskKind
from explain_engine.api import Registry, discover

TASK_KINDS: Registry[TaskKind] = Registry("task kind")

#: The package whose sub-packages are the kind folders.
KINDS_PACKAGE = "annotate.kinds"


def register(cls: type[TaskKind]) -> type[TaskKind]:
    """Class decorator: register one instance of the class under its ``name``, with the class attributes
    named by :attr:`~annotate.tasks.base.TaskKind.registry_meta` (``label``, ``default``,
    ``attention_maps``, ``family``) as its metadata, so that ``TASK_KINDS.where(family=...)``,
    ``where(default=True)`` and ``where(attention_maps=True)`` find it."""
    TASK_KINDS.add(cls.name, cls(), **{key: getattr(cls, key) for key in cls.registry_meta})
    return cls


def get_kind(name: str) -> TaskKind:
    """The task kind registered as ``name``; :class:`~explain_engine.api.UnknownName` otherwise."""
    return TASK_KINDS[name]


def default_kind() -> str:
    """The name of the kind whose class says ``default = True``."""
    return TASK_KINDS.where(default=True)[0]


#: The kind folders, in discovery order (filled by :func:`load_kinds`).
KIND_PACKAGES: list[str] = []


def load_kinds() -> list[str]:
    """Import every kind folder, which registers its kinds; returns the folders' names."""
    KIND_PACKAGES[:] = discover(KINDS_PACKAGE)
    return KIND_PACKAGES


def folder_modules(name: str) -> list[ModuleType]:
    """The module ``name`` (``urls``, ``demo``) of every kind folder that has one, in discovery order."""
    found = []
    for package in KIND_PACKAGES:
        module = f"{KINDS_PACKAGE}.{package}.{name}"
        if importlib.util.find_spec(module) is not None:
            found.append(importlib.import_module(module))
    return found


def task_urlpatterns() -> list:
    """The URL patterns every kind folder declares in its ``urls.py``."""
    return [pattern for module in folder_modules("urls") for pattern in module.urlpatterns]


__all__ = [
    "KINDS_PACKAGE",
    "TASK_KINDS",
    "TaskKind",
    "default_kind",
    "folder_modules",
    "get_kind",
    "load_kinds",
    "register",
    "task_urlpatterns",
]
