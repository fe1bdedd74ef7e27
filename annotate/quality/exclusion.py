"""Excluding, blocking and unblocking workers by their gold trust (trust >= 0.70: Pappas &
Popescu-Belis 2016, Lertvittayakumjorn & Toni 2019).

Whose answers count, and how much, is one rule (:func:`answer_weights`, the engine's
:func:`explain_engine.api.answer_weights`) shared by every results path: in a study with gold items
only *trusted* workers count, each weighing their trust; a *pending* worker (fewer than ``min_golds``
golds) waits — their answers count once they qualify — and an *excluded* one is out. A study without
gold items cannot judge anyone: every answer weighs 1.0.

A worker whose trust falls under the study's threshold (after ``min_golds`` golds) is *excluded*: their
answers leave the aggregated results at once. With a blocking policy they are also *blocked*: at once
here (a :class:`~annotate.models.WorkerBlock` of the study's owner, so they get no more items in that
researcher's studies, and only theirs), and on the platform by the quality job
(:mod:`annotate.crowd.blocks`: MTurk trust qualification or worker block, Prolific block-list), which needs
the network and so never runs in a submission's request. A re-grade that lifts a worker's trust back over the threshold unblocks them; a
study's owner (or an admin) may block or unblock a worker by hand, and that choice stands until the worker's
status changes. A block is the owner's: another researcher can neither see it in their studies nor lift it.
Every block and unblock is logged with who made it (:class:`~annotate.models.ChangeLog`).

A worker may also be excluded for their risk score (:mod:`annotate.quality.risk`): automatically when
the study's policy says so (``risk_action = "exclude"``, from ``risk_threshold`` on), or by a
researcher, whose choice (exclude, or keep in) stands over the policy's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count

from annotate.models import (
    ChangeLog,
    Item,
    QualityPolicy,
    Response,
    Study,
    Worker,
    WorkerBlock,
    WorkerTrust,
)
from annotate.models.audit import record
from annotate.quality.grading import TrustChange
from annotate.quality.policy import applied_rule, policy_for
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
    for_risk: frozenset[int] = frozenset()

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
        for_risk=frozenset(risky),
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


@dataclass(frozen=True)
class LeftOutGroup:
    """Answers to non-gold items that a results page leaves out for one ``reason``."""

    reason: str
    answers: int
    workers: int


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@dataclass(frozen=True)
class LeftOut:
    """What a results page leaves out of a study's answers to non-gold items, and why
    (:func:`left_out`): ``total`` answers in all, ``counted`` of them in the figures, and a group per
    reason (empty groups dropped)."""

    total: int
    counted: int
    groups: tuple[LeftOutGroup, ...]

    @property
    def answers(self) -> int:
        """Answers left out, all reasons together."""
        return sum(g.answers for g in self.groups)

    def sentences(self) -> list[str]:
        """Each group as a sentence a researcher can act on."""
        return [
            f"{_plural(g.answers, 'answer', 'answers')} by {_plural(g.workers, 'worker', 'workers')} "
            f"left out: {g.reason}."
            for g in self.groups
        ]

    def as_dict(self) -> dict:
        return {
            "total": self.total,
            "counted": self.counted,
            "left_out": self.answers,
            "groups": [{"reason": g.reason, "answers": g.answers, "workers": g.workers} for g in self.groups],
        }


def left_out(study: Study) -> LeftOut:
    """How many of the study's answers to non-gold items its results leave out, and why: not yet
    confirmed by the crowd platform, excluded by gold trust, excluded for risk, or waiting for the
    worker to answer enough golds (:func:`standing`; the rule in words:
    :meth:`annotate.quality.policy.AppliedRule.trust_sentence`)."""
    answers = Response.objects.filter(study=study, item__is_gold=False)
    total = answers.count()
    verified = dict(
        answers.counted().values("worker_id").annotate(n=Count("id")).values_list("worker_id", "n")
    )
    unverified = answers.exclude(verification=Response.Verification.VERIFIED)
    rank = standing(study, verified)
    rule = applied_rule(study)
    trust_out = rank.excluded - rank.for_risk

    def group(reason: str, workers: Iterable[int]) -> LeftOutGroup:
        chosen = set(workers)
        return LeftOutGroup(reason, sum(verified[w] for w in chosen), len(chosen))

    groups = [
        LeftOutGroup(
            "the crowd platform has not confirmed these workers' submissions yet",
            unverified.count(),
            unverified.values("worker_id").distinct().count(),
        ),
        group(
            f"these workers passed fewer than {rule.threshold:.0%} of the gold items "
            f"(judged after {_plural(rule.min_golds, 'gold', 'golds')})"
            if rule.judges
            else "these workers failed gold items since retired; re-grade on the quality page to count them",
            trust_out,
        ),
        group("these workers were excluded for their risk score", rank.for_risk),
        group(
            f"these workers have answered fewer than {_plural(rule.min_golds, 'gold item', 'gold items')}; "
            "their answers count once they qualify",
            rank.waiting,
        ),
    ]
    kept = tuple(g for g in groups if g.answers)
    return LeftOut(total=total, counted=total - sum(g.answers for g in kept), groups=kept)


def owner_of(study: Study) -> int:
    """The study's owner id, read from the database when ``study`` is a slim copy without it (the
    submission path's)."""
    if study.owner_id is not None:
        return study.owner_id
    return Study.objects.values_list("owner_id", flat=True).get(pk=study.pk)


def is_blocked(study: Study, worker_id: int) -> bool:
    """Whether ``worker_id`` is kept out of ``study``: blocked site-wide by an admin (``Worker.status``), or by
    the study's owner (a :class:`WorkerBlock`, which holds in that researcher's studies only)."""
    return (
        Worker.objects.filter(pk=worker_id, status=Worker.Status.BLOCKED).exists()
        or WorkerBlock.objects.filter(owner_id=owner_of(study), worker_id=worker_id).exists()
    )


def block_here(study: Study, worker: Worker, actor=None, reason: str = AUTO_REASON) -> None:
    """Block ``worker`` in every study of ``study``'s owner (and no one else's), and log who did it."""
    owner = owner_of(study)
    with transaction.atomic():
        WorkerTrust.objects.get_or_create(study=study, worker=worker)
        WorkerTrust.objects.filter(study=study, worker=worker).update(blocked=True)
        _, made = WorkerBlock.objects.get_or_create(
            owner_id=owner, worker=worker, defaults={"study_id": study.pk, "reason": reason[:500]}
        )
        if made:
            record(actor, ChangeLog.Action.BLOCK, worker.anonymous_id, owner, study=study.pk, reason=reason)


def unblock_here(study: Study, worker: Worker, actor=None, *, lift_owner_block: bool = True) -> bool:
    """Lift ``worker``'s block in ``study``, and the owner's block with it (``lift_owner_block``: a person's
    choice; a re-grade lifts it only when no other study of the owner still blocks the worker). Another
    researcher's block is never touched. Returns whether the owner's block was lifted; logs it."""
    owner = owner_of(study)
    with transaction.atomic():
        WorkerTrust.objects.get_or_create(study=study, worker=worker)
        WorkerTrust.objects.filter(study=study, worker=worker).update(blocked=False)
        still = WorkerTrust.objects.filter(worker=worker, study__owner_id=owner, blocked=True)
        if not lift_owner_block and still.exists():
            return False
        if lift_owner_block:
            still.update(blocked=False)
        lifted, _ = WorkerBlock.objects.filter(owner_id=owner, worker=worker).delete()
        if lifted:
            record(actor, ChangeLog.Action.UNBLOCK, worker.anonymous_id, owner, study=study.pk)
    return bool(lifted)


def apply_local(study: Study, changes: Iterable[TrustChange]) -> QualitySummary:
    """Block newly excluded workers in the owner's studies, and unblock those a re-grade lifted back
    (database only; the quality policy is the actor in the log)."""
    summary = QualitySummary(changes=list(changes))
    if policy_for(study).block_mode == "none":
        return summary
    workers = Worker.objects.in_bulk([c.worker_id for c in summary.changes])
    for change in summary.changes:
        worker = workers.get(change.worker_id)
        if worker is None:
            continue
        if change.after == EXCLUDED:
            block_here(study, worker)
            summary.blocked.append(change.worker_id)
        elif (
            change.before == EXCLUDED
            and WorkerTrust.objects.filter(study=study, worker=worker, blocked=True).exists()
        ):
            unblock_here(study, worker, lift_owner_block=False)
            summary.unblocked.append(change.worker_id)
    return summary
