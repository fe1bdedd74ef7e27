"""Consent: the study's text, versioned, and each worker's decision.

The consent text is part of a study's protocol. The version shown is the newest
:class:`~annotate.models.ConsentVersion` whose text is the study's text; when the text changes (a
running study's consent edited), the next worker is shown a new version, and the versions already
decided on stay as they were. A decision is taken once per worker and platform unit (the seat), with
the version and the time: accepting lets the worker on; declining ends their part (no item, no
completion), and is final."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotate.models import Assignment, ConsentDecision, ConsentVersion, Study


def consent_text(study: Study) -> str:
    return str((study.protocol or {}).get("consent", ""))


def current_version(study: Study) -> ConsentVersion | None:
    """The version of the study's consent text now (made when the text is new); ``None`` without one."""
    text = consent_text(study)
    if not text:
        return None
    for _ in range(3):
        latest = ConsentVersion.objects.filter(study=study).order_by("-number").first()
        if latest is not None and latest.text == text:
            return latest
        try:
            with transaction.atomic():
                return ConsentVersion.objects.create(
                    study=study, number=(latest.number + 1) if latest else 1, text=text
                )
        except IntegrityError:  # another request made the same version a moment ago
            continue
    raise RuntimeError(f"no consent version settled for study {study.pk}")


def decision(study: Study, worker_id: int, ref: str) -> ConsentDecision | None:
    return ConsentDecision.objects.filter(study=study, worker_id=worker_id, ref=ref).first()


class ConsentStale(Exception):
    """The worker decided on a version that is no longer the study's text (it changed meanwhile)."""


def decide(study: Study, worker_id: int, ref: str, version_number: int, accepted: bool) -> ConsentDecision:
    """Record the worker's decision on the version they were shown (``version_number``), once: a second
    decision keeps the first. A decision on an outdated version raises :class:`ConsentStale`. Declining
    releases any item the worker holds, so it goes to someone else."""
    version = current_version(study)
    if version is None or version.number != version_number:
        raise ConsentStale(version_number)
    try:
        with transaction.atomic():
            made = ConsentDecision.objects.create(
                study=study, worker_id=worker_id, ref=ref, version=version, accepted=accepted
            )
    except IntegrityError:
        found = decision(study, worker_id, ref)
        assert found is not None
        return found
    if not accepted:
        release_held(study, worker_id, ref)
    return made


def release_held(study: Study, worker_id: int, ref: str) -> int:
    """Give back the open items of a worker who leaves the study (declined, screened out)."""
    return Assignment.objects.filter(
        study=study, worker_id=worker_id, provider_assignment_id=ref, status=Assignment.Status.ASSIGNED
    ).update(status=Assignment.Status.RELEASED)
