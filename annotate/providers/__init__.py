"""Crowd providers: a registry of :class:`~annotate.providers.base.CrowdProvider` singletons.

A provider module in this package registers its class with :func:`register`; every module here is
imported when the package is, so dropping ``annotate/providers/<name>.py`` in is all it takes.
:func:`identify_worker` turns a request into the :class:`~annotate.models.Worker` it stands for.
"""

from __future__ import annotations

import importlib
import pkgutil

from annotate.providers.base import CrowdProvider

PROVIDERS: dict[str, CrowdProvider] = {}


def register(cls: type[CrowdProvider]) -> type[CrowdProvider]:
    """Class decorator: add one instance of ``cls`` to :data:`PROVIDERS` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    PROVIDERS[cls.name] = cls()
    return cls


def get_provider(name: str) -> CrowdProvider:
    """The provider registered as ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise KeyError(f"unknown crowd provider {name!r}; known: {sorted(PROVIDERS)}") from None


def identify_worker(request, study):
    """The worker this request stands for in ``study`` (created on first sight), or ``None``.

    The study's provider vouches for an external id; the worker row is keyed by
    ``(provider, external_id)``.
    """
    from annotate.models import Worker

    provider = get_provider(study.provider)
    external_id = provider.identify(request, study)
    if not external_id:
        return None
    worker, _ = Worker.objects.get_or_create(
        provider=provider.name,
        external_id=external_id,
        defaults=provider.worker_defaults(request, study, external_id),
    )
    return worker


def _discover() -> None:
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_") and module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")


_discover()

__all__ = ["PROVIDERS", "CrowdProvider", "get_provider", "identify_worker", "register"]
