"""What a study will take, said before it starts: answers needed, workers needed under the kind's share
rules, the time it takes and what it costs on each crowd platform, and the settings it cannot meet.

:func:`plan_numbers` is a pure function of a :class:`Shape` (counts read from the study's settings and
items) and the seconds one answer takes; :func:`study_plan` reads the shape, the answer time and the
platforms' fee rules for a study.

* **Answers needed**: every item's ``responses_needed``, a gold item counted at the study's workers per
  item (golds included: a gold open to every worker still needs that many answers to be graded). This is
  the figure the study's progress counts answers against (:mod:`annotate.studies.progress`).
* **A worker's share** ``q``: the most items one worker is given: the kind's share rule
  (:meth:`annotate.tasks.base.TaskKind.worker_share`; one question per text in the forced-choice tasks),
  capped by ``max_items_per_worker``. The annotator page counts "item i of q" against the same figure.
* **Workers needed**: at least the workers per item, and enough shares to hold the answers. Golds open
  to every worker (mixed in at a rate, or published on a platform: :func:`golds_to_all`) take their
  place in every share, so only the rest of a share holds ordinary items.
* **Time**: the median seconds of an answer (from handing the item out to receiving it, as the risk score
  times it), measured from stored answers (the study's own, else its
  owner's earlier studies of the kind, at least :data:`MIN_MEASURED` of them), else the kind's default
  (:attr:`annotate.tasks.base.TaskKind.default_answer_s`); the plan says which. A study's protocol adds its
  consent and questionnaires to each participant's time (:mod:`annotate.protocol.plan`).
* **Cost**: one place per worker needed on each platform, at the study's own reward when it is set up for
  the platform, else at :data:`HOURLY_PAY` for a full share's expected time; fees by the platform's rule
  (the provider's :meth:`~annotate.crowd.providers.base.CrowdProvider.plan_estimate`, the rule the
  crowd page's estimate uses).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal
from typing import Any

from rest_framework.exceptions import ValidationError

from annotate.crowd.providers import PROVIDERS, get_provider
from annotate.crowd.providers.base import CostEstimate
from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.infra.field_errors import flatten_errors
from annotate.models import Invite, Item, Response, Study
from annotate.protocol.plan import added_seconds
from annotate.quality.risk import time_taken_ms
from annotate.studies.lifecycle import StudyStateError
from annotate.studies.service import StudyInvalid, validate_study
from annotate.tasks import get_kind
from annotate.tasks.base import GOLD_RATE_KEY

#: Stored answers a measured median needs; with fewer the next source (or the kind's default) is used.
MIN_MEASURED = 5
#: The newest answers a median is measured over.
MEASURED_LIMIT = 5000
#: The pay per hour of expected work a plan assumes on a platform the study's settings give no reward
#: for, in the platform's currency (a fair wage above Prolific's minimum; the researcher sets the real
#: reward in the crowd settings).
HOURLY_PAY = Decimal("12.00")


@dataclass(frozen=True)
class Shape:
    """The counts a plan is computed from.

    ``items`` and ``golds``: ordinary and gold items; ``needed``: answers the ordinary items need (their
    ``responses_needed`` summed; ``items × per_item`` when built from the settings); ``share``: the items
    one worker may be given under the kind's share rules; ``cap``: ``max_items_per_worker``;
    ``golds_to_all``: golds open to every worker; ``invites``: invite links that still work, for a study
    only invitees may enter (``None`` otherwise); ``places``: the places one publication makes on the
    study's platform (``None``: no platform settings); ``kind_warnings``: the kind's own."""

    items: int
    golds: int
    per_item: int
    share: int
    cap: int | None = None
    needed: int | None = None
    golds_to_all: bool = False
    invites: int | None = None
    places: int | None = None
    kind_warnings: tuple[str, ...] = ()
    share_rule: str = ""


@dataclass(frozen=True)
class Plan:
    """A study's plan from its ``shape``; ``costs`` per platform, ``problem`` when the items cannot be
    built yet."""

    shape: Shape
    answers: int
    gold_answers: int
    per_worker: int
    workers: int | None
    answer_s: float
    answer_source: str
    worker_s: float
    total_s: float
    warnings: tuple[str, ...] = ()
    costs: tuple[PlatformCost, ...] = ()
    problem: str = ""
    protocol_s: float = 0.0

    @property
    def protocol_minutes(self) -> float:
        return round(self.protocol_s / 60, 1)

    @property
    def worker_minutes(self) -> float:
        return round(self.worker_s / 60, 1)

    @property
    def total_hours(self) -> float:
        return round(self.total_s / 3600, 1)

    def as_dict(self) -> dict[str, Any]:
        """The plan as plain data (the study API's ``plan``)."""
        return {
            "answers": self.answers,
            "gold_answers": self.gold_answers,
            "items": self.shape.items,
            "golds": self.shape.golds,
            "workers_per_item": self.shape.per_item,
            "items_per_worker": self.per_worker,
            "share_rule": self.shape.share_rule,
            "workers": self.workers,
            "answer_s": self.answer_s,
            "answer_source": self.answer_source,
            "worker_s": self.worker_s,
            "total_s": self.total_s,
            "protocol_s": self.protocol_s,
            "warnings": list(self.warnings),
            "problem": self.problem,
            "costs": [
                {
                    "platform": c.platform,
                    "title": c.title,
                    **c.estimate.as_dict(),
                    "reward_source": c.reward_source,
                    "fee_rule": c.fee_rule,
                }
                for c in self.costs
            ],
        }


@dataclass(frozen=True)
class PlatformCost:
    """What the plan's places cost on one platform, and where the reward comes from."""

    platform: str
    title: str
    estimate: CostEstimate
    reward_source: str
    fee_rule: str = ""
    extra: dict = field(default_factory=dict)


def plan_numbers(shape: Shape, answer_s: float, answer_source: str = "") -> Plan:
    """The plan of a study of ``shape`` whose answers take ``answer_s`` seconds (see the module docstring)."""
    q = min(shape.share, shape.cap) if shape.cap else shape.share
    ordinary = shape.needed if shape.needed is not None else shape.items * shape.per_item
    gold_answers = shape.golds * shape.per_item
    answers = ordinary + gold_answers
    warnings = list(shape.kind_warnings)
    golds_each = min(shape.golds, q) if shape.golds_to_all else 0
    room = q - golds_each
    if q == 0:
        workers, given = None, 0
    elif shape.golds_to_all:
        workers = _workers(ordinary, room, shape.per_item) if ordinary else shape.per_item
        given = ordinary + golds_each * (workers or 0)
    else:
        workers = _workers(answers, q, shape.per_item)
        given = answers
    if q == 0:
        warnings.append("The study has no items for a worker: check its dataset and settings.")
    elif workers is None:
        warnings.append(
            f"Each worker is given at most {q} items and all {shape.golds} golds are open to every worker, "
            "so no share has room for an ordinary item: raise items per worker or mark fewer golds."
        )
    if workers and shape.invites is not None and shape.invites < workers:
        warnings.append(
            f"The plan needs {workers} worker{'s' if workers != 1 else ''} but only {shape.invites} invite "
            f"link{' is' if shape.invites == 1 else 's are'} made (not revoked): create "
            f"{workers - shape.invites} more in Access below, or turn on open enrollment."
        )
    if workers and shape.places is not None and shape.places < workers:
        warnings.append(
            f"The platform settings publish {shape.places} places but the plan needs {workers} workers: "
            f"raise the places to {workers} in the crowd settings, or top up after publishing."
        )
    return Plan(
        shape=shape,
        answers=answers,
        gold_answers=gold_answers,
        per_worker=q,
        workers=workers,
        answer_s=answer_s,
        answer_source=answer_source,
        worker_s=q * answer_s,
        total_s=given * answer_s,
        warnings=tuple(warnings),
    )


def _workers(answers: int, room: int, per_item: int) -> int | None:
    """Workers whose shares of ``room`` items hold ``answers``, at least ``per_item``; ``None``: no room."""
    if room <= 0:
        return None if answers else per_item
    return max(per_item, math.ceil(answers / room))


# --------------------------------------------------------------------------------- reading a study


def golds_to_all(study: Study) -> bool:
    """Whether the study's golds are open to every worker: mixed in at a rate, or published on a platform
    (publishing opens them: :mod:`annotate.crowd.publishing`)."""
    return study.config.get(GOLD_RATE_KEY) is not None or get_provider(study.provider).platform


def item_rows(study: Study) -> tuple[list[tuple[int | None, bool, int]], str]:
    """``(document, is_gold, responses_needed)`` per item in use: the stored ones, else those the kind
    would build from the settings now (nothing is saved); with the kind's refusal as a sentence."""
    stored = list(
        Item.objects.filter(study_id=study.pk, retired=False).values_list(
            "document_id", "is_gold", "responses_needed"
        )
    )
    if stored or study.status != Study.Status.DRAFT:
        return stored, ""
    try:
        built = get_kind(study.kind).build_items(study)
    except (ValidationError, StudyStateError, ValueError) as exc:  # the kind's refusal, shown as a sentence
        return [], _sentence(exc)
    return [(i.document_id, bool(i.is_gold), i.responses_needed) for i in built], ""


def _sentence(exc: Exception) -> str:
    detail = getattr(exc, "detail", None)
    if detail is None:
        return str(exc)
    return "; ".join(message for messages in flatten_errors(detail).values() for message in messages)


def shape_of(study: Study, rows: Sequence[tuple[int | None, bool, int]]) -> Shape:
    """The :class:`Shape` of ``study`` with items ``rows`` (see :func:`item_rows`)."""
    kind = get_kind(study.kind)
    provider = get_provider(study.provider)
    ordinary = [needed for _, gold, needed in rows if not gold]
    invites = None
    if provider.invites and not _open_enrollment(study):
        invites = Invite.objects.filter(study_id=study.pk, revoked_at__isnull=True).count() if study.pk else 0
    return Shape(
        items=len(ordinary),
        golds=len(rows) - len(ordinary),
        per_item=study.annotators_per_item,
        share=kind.worker_share(study, [document for document, _, _ in rows]),
        cap=study.config.get("max_items_per_worker"),
        needed=sum(ordinary),
        golds_to_all=golds_to_all(study),
        invites=invites,
        places=provider.study_places(study) if provider.platform else None,
        kind_warnings=tuple(kind.plan_warnings(study)),
        share_rule=kind.share_rule(study),
    )


def _open_enrollment(study: Study) -> bool:
    try:
        return get_provider(study.provider).open_enrollment(study)
    except ProviderConfigError:
        return False


def answer_time(study: Study) -> tuple[float, str]:
    """The median seconds of an answer and where it comes from (see the module docstring); an answer's
    time as the risk score takes it (:func:`annotate.quality.risk.time_taken_ms`: from handing the item
    out to receiving the answer, else the page's reading and answering times)."""
    sources = (
        (Response.objects.counted().filter(study_id=study.pk), "this study"),
        (
            Response.objects.counted()
            .filter(study__owner_id=study.owner_id, study__kind=study.kind)
            .exclude(study_id=study.pk),
            "your earlier studies of this kind",
        ),
    )
    for answers, where in sources:
        if where == "this study" and study.pk is None:
            continue
        rows = answers.order_by("-id").values_list(
            "assignment__assigned_at", "created", "read_ms", "answer_ms"
        )
        values = [ms for row in rows[:MEASURED_LIMIT] if (ms := time_taken_ms(*row))]
        if len(values) >= MIN_MEASURED:
            seconds = statistics.median(values) / 1000
            return round(seconds, 1), f"the median of {len(values)} answers in {where}"
    return get_kind(
        study.kind
    ).default_answer_s, "hatlab's default for this kind (no stored answers to measure)"


def platform_costs(study: Study, places: int, worker_s: float) -> tuple[PlatformCost, ...]:
    """What ``places`` places cost on every platform (see the module docstring)."""
    costs = []
    fair = (HOURLY_PAY * Decimal(str(worker_s)) / 3600).quantize(Decimal("0.01"), rounding=ROUND_CEILING)
    fair = max(fair, Decimal("0.01"))
    for name in sorted(PROVIDERS):
        provider = get_provider(name)
        if not provider.platform:
            continue
        own = provider.study_reward(study)
        reward = own if own is not None else fair
        source = (
            "the reward in the study's crowd settings"
            if own is not None
            else f"{HOURLY_PAY} per hour of expected work ({round(worker_s / 60, 1)} minutes a share), "
            "until the crowd settings give a reward"
        )
        settings_class = PROVIDERS.meta(name).get("settings")
        rule = getattr(getattr(settings_class, "FEES", None), "summary", "")
        costs.append(
            PlatformCost(
                name, provider.title or name, provider.plan_estimate(study, places, reward), source, rule
            )
        )
    return tuple(costs)


def with_protocol(plan: Plan, protocol_s: float) -> Plan:
    """``plan`` with each participant's protocol time (consent, questionnaires) added to a worker's time
    and, once per worker, to the work in all."""
    if not protocol_s:
        return plan
    return replace(
        plan,
        protocol_s=protocol_s,
        worker_s=plan.worker_s + protocol_s,
        total_s=plan.total_s + protocol_s * (plan.workers or 0),
    )


def study_plan(study: Study) -> Plan:
    """The plan of ``study`` (its stored items, or those its settings would build), with the time its
    protocol adds to each participant (:func:`annotate.protocol.plan.added_seconds`)."""
    rows, problem = item_rows(study)
    answer_s, source = answer_time(study)
    plan = plan_numbers(shape_of(study, rows), answer_s, source)
    plan = with_protocol(plan, added_seconds(study.protocol)["total"] if study.protocol else 0)
    costs = platform_costs(study, plan.workers, plan.worker_s) if plan.workers else ()
    return replace(plan, costs=costs, problem=problem)


def settings_warnings(user, data: dict) -> list[str]:
    """What a study form's settings ``data`` (as the study rule takes them) alone tell the plan cannot
    meet, before anything is saved or built: the form's warnings. Settings the study rule refuses have
    none here (the form shows its errors)."""
    try:
        cleaned = validate_study(user, data)
    except StudyInvalid:
        return []
    return list(get_kind(cleaned["kind"]).plan_warnings(Study(owner=user, **cleaned)))
