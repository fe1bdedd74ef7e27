"""Crowd providers: one package per source of annotators, in a registry of adapter singletons.

``annotate/crowd/providers/<name>/`` holds ``settings.py`` (the study settings the provider declares, and its
fees), ``client.py`` (the platform's API, nothing of Django; the local crowd has no platform, so none)
and ``adapter.py`` (the :class:`~annotate.crowd.providers.base.CrowdProvider` that connects the two to the
app), whose import adds it to :data:`PROVIDERS`. :func:`discover` imports every provider package, so
dropping a folder in is all it takes. ``base`` holds what providers share; ``reconcile`` is the loop
that drives them. :func:`admit` turns a request into the :class:`~annotate.models.Worker` it stands for and
the provider's :class:`~annotate.crowd.providers.base.Entry` (verified, provisional or refused).
"""

from __future__ import annotations

from dataclasses import dataclass

from annotate.crowd.providers.base import CrowdProvider, Entry
from annotate.models import Worker
from explain_engine.api import Registry, discover

# Metadata of each entry: ``settings`` (the class that validates and declares its study settings, or
# ``None``), ``bonuses`` (it can pay bonuses), ``blocks`` (it can keep a worker out on the platform).
PROVIDERS: Registry[CrowdProvider] = Registry("crowd provider")


def get_provider(name: str) -> CrowdProvider:
    """The provider registered as ``name``; an error naming the known ones otherwise."""
    return PROVIDERS[name]


@dataclass(frozen=True)
class Admission:
    """Who the entry page admits: ``worker`` is ``None`` when the provider refused them (``entry.refused``)."""

    worker: Worker | None
    entry: Entry


def admit(request, study) -> Admission | None:
    """The worker this request stands for in ``study`` and the provider's word on them, or ``None`` when
    the request identifies nobody. A refused visitor gets no worker row."""
    provider = get_provider(study.provider)
    external_id = provider.identify(request, study)
    if not external_id:
        return None
    entry = provider.verify_entry(request, study, external_id)
    if entry.refused or entry.start:
        return Admission(None, entry)
    worker, _ = Worker.objects.get_or_create(
        provider=provider.name,
        external_id=external_id,
        defaults=provider.worker_defaults(request, study, external_id),
    )
    return Admission(worker, entry)


def identify_worker(request, study) -> Worker | None:
    """The worker this request stands for in ``study`` (created on first sight), or ``None``.

    The study's provider vouches for an external id (:func:`admit`); the worker row is keyed by
    ``(provider, external_id)``. ``None`` too for a visitor the provider refuses.
    """
    admission = admit(request, study)
    return None if admission is None else admission.worker


discover(__name__, skip=("base", "reconcile"))

__all__ = ["PROVIDERS", "Admission", "CrowdProvider", "admit", "get_provider", "identify_worker"]
