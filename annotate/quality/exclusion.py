"""Excluding, blocking and unblocking workers by their gold trust (trust >= 0.70: Pappas &
Popescu-Belis 2016, Lertvittayakumjorn & Toni 2019).

Whose answers count, and how much, is one rule (:func:`answer_weights`, the engine's
:func:`explain_engine.api.answer_weights`) shared by every results path: in a study with gold items
only *trusted* workers count, each weighing their trust; a *pending* worker (fewer than ``min_golds``
golds) waits — their answers count once they qualify — and an *excluded* one is out. A study without
gold items cannot judge anyone: every answer weighs 1.0.

A worker whose trust falls under the study's threshold (after ``min_golds`` golds) is *excluded*: their
answers leave the aggregated results at once. With a blocking policy they are also *blocked*: at once
here (``Worker.status``, so they get no more items), and on the platform by the quality job
(:mod:`annotate.crowd.blocks`: MTurk trust qualification or worker block, Prolific block-list), which needs
the network and so never runs in a submission's request. A re-grade that lifts a worker's trust back over the threshold unblocks them; an
admin may block or unblock anyone by hand, and that choice stands until the worker's status changes.

A worker may also be excluded for their risk score (:mod:`annotate.quality.risk`): automatically when
the study's policy says so (``risk_action = "exclude"``, from ``risk_threshold`` on), or by a
researcher, whose choice (exclude, or keep in) stands over the policy's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.db import transaction

from annotate.models import Item, QualityPolicy, Response, Study, Worker, WorkerTrust
from annotate.quality.grading import TrustChange
from annotate.quality.policy import policy_for
from annotate.quality.risk import WorkerRisk
from explain_engine.api import EXCLUDED, PENDING
from explain_engine.api import answer_weights as engine_answer_weights

logger = logging.getLogger(__name__)
AUTO_REASON = "Too many hidden check questions were answered incorrectly."


@dataclass
class QualitySummary:
    changes: list[TrustChange] = field(default_factory=list)
    blocked: list[int] = field(default_factory=list)
    unblocked: list[int] = field(default_factory=list)
    mirrored: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "changed": len(self.changes),
            "blocked": self.blocked,
            "unblocked": self.unblocked,
            "mirrored": self.mirrored,
            "errors": self.errors,
        }


RISK_EXCLUDED = WorkerTrust.RISK_EXCLUDED


def apply_risk(study: Study, risks: Mapping[int, WorkerRisk]) -> list[int]:
    """With a policy that excludes for risk, mark the flagged workers excluded and lift the automatic
    exclusion of those no longer flagged; a researcher's choice is left alone. Returns the workers
    whose exclusion changed."""
    if policy_for(study).risk_action != QualityPolicy.RiskAction.EXCLUDE:
        return []
    auto, none = WorkerTrust.RiskExclusion.AUTO, WorkerTrust.RiskExclusion.NONE
    flagged = {w for w, r in risks.items() if r.flagged}
    changed: list[int] = []
    with transaction.atomic():
        for worker_id in sorted(flagged):
            row, _ = WorkerTrust.objects.get_or_create(study=study, worker_id=worker_id)
            if WorkerTrust.objects.filter(pk=row.pk, risk_exclusion=none).update(risk_exclusion=auto):
                changed.append(worker_id)
        lifted = WorkerTrust.objects.filter(study=study, risk_exclusion=auto).exclude(worker_id__in=flagged)
        changed.extend(lifted.values_list("worker_id", flat=True))
        lifted.update(risk_exclusion=none)
    return changed


def set_risk_exclusion(study: Study, worker: Worker, exclude: bool) -> None:
    """A researcher excludes ``worker`` for risk, or keeps them in; the choice stands over the policy."""
    choice = WorkerTrust.RiskExclusion.RESEARCHER if exclude else WorkerTrust.RiskExclusion.KEPT
    with transaction.atomic():
        row, _ = WorkerTrust.objects.get_or_create(study=study, worker=worker)
        WorkerTrust.objects.filter(pk=row.pk).update(risk_exclusion=choice)


def judges_by_gold(study: Study) -> bool:
    """Whether the study has gold items to judge workers by (retired golds do not count)."""
    return Item.objects.filter(study=study, is_gold=True, retired=False).exists()


@dataclass(frozen=True)
class Standing:
    """Whose answers count in a study, as :func:`answer_weights` weighs them: ``weights`` per worker,
    the workers whose answers ``wait`` (pending, in a study with gold items: they count once they
    qualify) and those ``excluded`` (by their gold trust, or for risk). ``status`` is each worker's
    stored trust status (none for a worker without a trust row)."""

    weights: dict[int, float]
    waiting: frozenset[int]
    excluded: frozenset[int]
    status: dict[int, str]

    @property
    def left_out(self) -> frozenset[int]:
        """Workers whose answers do not count now (weight 0): waiting or excluded."""
        return self.waiting | self.excluded


def standing(study: Study, worker_ids: Iterable[int]) -> Standing:
    """The standing of ``worker_ids`` in ``study`` (two queries). A worker without a trust row is pending.
    See the module docstring for the rule."""
    wanted = sorted(set(worker_ids))
    rows = {
        w: (status, trust, risk)
        for w, status, trust, risk in WorkerTrust.objects.filter(
            study=study, worker_id__in=wanted
        ).values_list("worker_id", "status", "trust", "risk_exclusion")
    }
    status = [rows[w][0] if w in rows else PENDING for w in wanted]
    trust = [float("nan") if w not in rows or rows[w][1] is None else rows[w][1] for w in wanted]
    weights = engine_answer_weights(status, trust, judged=judges_by_gold(study))
    risky = {w for w, (_, _, risk) in rows.items() if risk in RISK_EXCLUDED}
    weighed = {w: 0.0 if w in risky else float(x) for w, x in zip(wanted, weights, strict=True)}
    waiting = frozenset(
        w
        for w, s in zip(wanted, status, strict=True)
        if weighed[w] <= 0.0 and s == PENDING and w not in risky
    )
    return Standing(
        weights=weighed,
        waiting=waiting,
        excluded=frozenset(w for w, x in weighed.items() if x <= 0.0) - waiting,
        status={w: row[0] for w, row in rows.items()},
    )


def answer_weights(study: Study, worker_ids: Iterable[int]) -> dict[int, float]:
    """Each worker's answer weight in ``study`` (0.0: the answers do not count, or not yet); see
    :func:`standing`."""
    return standing(study, worker_ids).weights


def excluded_worker_ids(study: Study) -> set[int]:
    """Workers whose answers are left out of the study's results (weight 0 by :func:`answer_weights`):
    the excluded ones (by their gold trust, or for risk), and while the study has gold items, those still
    pending."""
    answered = Response.objects.filter(study=study).counted().values_list("worker_id", flat=True).distinct()
    return set(standing(study, answered).left_out)


def counted_responses(study: Study):
    """The verified answers to non-gold items of workers not excluded by their gold trust."""
    return (
        Response.objects.filter(study=study, item__is_gold=False)
        .counted()
        .exclude(worker_id__in=excluded_worker_ids(study))
    )


def apply_local(study: Study, changes: Iterable[TrustChange]) -> QualitySummary:
    """Block newly excluded workers here, and unblock those a re-grade lifted back (database only)."""
    summary = QualitySummary(changes=list(changes))
    if policy_for(study).block_mode == "none":
        return summary
    for change in summary.changes:
        if change.after == EXCLUDED:
            with transaction.atomic():
                WorkerTrust.objects.filter(study=study, worker_id=change.worker_id).update(blocked=True)
                Worker.objects.filter(pk=change.worker_id).update(status=Worker.Status.BLOCKED)
            summary.blocked.append(change.worker_id)
        elif change.before == EXCLUDED:
            with transaction.atomic():
                if WorkerTrust.objects.filter(study=study, worker_id=change.worker_id, blocked=True).update(
                    blocked=False
                ):
                    Worker.objects.filter(pk=change.worker_id).update(status=Worker.Status.ACTIVE)
                    summary.unblocked.append(change.worker_id)
    return summary
