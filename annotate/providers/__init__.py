"""Crowd providers: one package per source of annotators, in a registry of adapter singletons.

``annotate/providers/<name>/`` holds ``settings.py`` (the study settings the provider declares, and its
fees), ``client.py`` (the platform's API, nothing of Django; the local crowd has no platform, so none)
and ``adapter.py`` (the :class:`~annotate.providers.base.CrowdProvider` that connects the two to the
app), whose import adds it to :data:`PROVIDERS`. :func:`discover` imports every provider package, so
dropping a folder in is all it takes. ``base`` holds what providers share; ``reconcile`` is the loop
that drives them. :func:`identify_worker` turns a request into the :class:`~annotate.models.Worker` it stands for.
"""

from __future__ import annotations

from annotate.models import Worker
from annotate.providers.base import CrowdProvider
from explain_engine.api import Registry, discover

# Metadata of each entry: ``settings`` (the class that validates and declares its study settings, or
# ``None``), ``bonuses`` (it can pay bonuses), ``blocks`` (it can keep a worker out on the platform).
PROVIDERS: Registry[CrowdProvider] = Registry("crowd provider")


def get_provider(name: str) -> CrowdProvider:
    """The provider registered as ``name``; an error naming the known ones otherwise."""
    return PROVIDERS[name]


def identify_worker(request, study) -> Worker | None:
    """The worker this request stands for in ``study`` (created on first sight), or ``None``.

    The study's provider vouches for an external id; the worker row is keyed by
    ``(provider, external_id)``.
    """
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


discover(__name__, skip=("base", "reconcile"))

__all__ = ["PROVIDERS", "CrowdProvider", "get_provider", "identify_worker"]
