"""Quality decisions mirrored on the crowd platform: the quality job's pass (trust refreshed, blocks
applied here, then mirrored where the platform does not have them yet) and an admin's block or unblock
of one worker by the study's owner. The decisions themselves are :mod:`annotate.quality.exclusion`'s (database only); this
module adds what needs the network (Pappas & Popescu-Belis 2016 and Lertvittayakumjorn & Toni 2019's
trust >= 0.70 rule, applied through the platform's qualification or block-list)."""

from __future__ import annotations

import logging

from annotate.crowd.providers import get_provider
from annotate.crowd.providers.base.retry import platform_errors
from annotate.models import Study, Worker, WorkerTrust
from annotate.quality.exclusion import (
    AUTO_REASON,
    QualitySummary,
    apply_local,
    apply_risk,
    block_here,
    unblock_here,
)
from annotate.quality.grading import refresh_trust
from annotate.quality.policy import policy_for
from annotate.quality.redundancy import refresh_study
from annotate.quality.risk import study_risks
from explain_engine.api import EXCLUDED, TRUSTED

logger = logging.getLogger(__name__)


def apply_quality(study: Study, *, mirror: bool = True) -> QualitySummary:
    """Refresh trust, block / unblock here, and mirror trust on the platform where it is not yet.
    Safe to run again: each platform action is recorded in ``WorkerTrust.mirrored`` once it is done."""
    summary = apply_local(study, refresh_trust(study))
    apply_risk(study, study_risks(study))
    refresh_study(study)  # an adaptive study's items decide again on the answers that count now
    policy = policy_for(study)
    provider = get_provider(study.provider)
    if not mirror or not provider.platform or policy.block_mode == "none":
        return summary
    pending = (
        WorkerTrust.objects.filter(study=study, status__in=[TRUSTED, EXCLUDED])
        .select_related("worker")
        .order_by("id")
    )
    for row in pending:
        if row.mirrored == row.status or row.worker.provider != provider.name:
            continue
        try:
            if row.mirrored == EXCLUDED and row.status != EXCLUDED:
                provider.unblock(study, row.worker, "Your answers to our check questions were re-graded.")
            provider.mirror_trust(study, row.worker, row.trust, row.status == EXCLUDED, policy.block_mode)
        except platform_errors() as exc:
            logger.warning(
                "mirroring trust of worker %s in study %s failed: %s", row.worker_id, study.pk, exc
            )
            summary.errors.append(f"{row.worker.pseudonym_for(study.owner_id)}: {exc}")
            continue
        WorkerTrust.objects.filter(pk=row.pk).update(mirrored=row.status)
        summary.mirrored.append(row.worker_id)
    return summary


def block(study: Study, worker: Worker, reason: str = AUTO_REASON, actor=None) -> list[str]:
    """The study's owner (or an admin) blocks ``worker`` in the owner's studies, with a platform block (the
    study's blocking mode, or a plain platform block when the study does not block). Returns platform
    errors, if any."""
    policy = policy_for(study)
    block_here(study, worker, actor, reason)
    row = WorkerTrust.objects.get(study=study, worker=worker)
    provider = get_provider(worker.provider)
    if not provider.platform:
        return []
    mode = policy.block_mode if policy.block_mode != "none" else "platform"
    try:
        provider.mirror_trust(study, worker, row.trust, True, mode)
    except platform_errors() as exc:
        return [str(exc)]
    WorkerTrust.objects.filter(pk=row.pk).update(mirrored=EXCLUDED)
    return []


def unblock(
    study: Study, worker: Worker, reason: str = "Unblocked by the research team.", actor=None
) -> list[str]:
    """The study's owner (or an admin) lifts the owner's block of ``worker``, here and on the platform; a
    block another researcher made stands. It stands until their trust status changes again. Returns
    platform errors, if any."""
    unblock_here(study, worker, actor)
    row = WorkerTrust.objects.get(study=study, worker=worker)
    WorkerTrust.objects.filter(pk=row.pk).update(mirrored=row.status)
    provider = get_provider(worker.provider)
    if not provider.platform:
        return []
    try:
        provider.unblock(study, worker, reason)
    except platform_errors() as exc:
        return [str(exc)]
    return []
