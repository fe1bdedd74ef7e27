"""A study's redundancy policy: a fixed number of answers per item (the default), or adaptive, with a
stopping rule per item (:mod:`explain_engine.redundancy`; Sheng, Provost & Ipeirotis 2008; Welinder &
Perona 2010).

The policy lives in the study's config under ``redundancy``::

    {"mode": "adaptive", "min": 2, "max": 5, "rule": "label_share", "threshold": 0.8}

(no ``redundancy``, or ``{"mode": "fixed"}``: every item gets ``annotators_per_item`` answers). The rules
a study may use are its kind's (:attr:`annotate.tasks.base.TaskKind.stopping_rules`). An adaptive study
publishes up to ``max`` answers per item (its ``annotators_per_item`` is ``max``).

How the hand-out follows it, with no change to its query: an adaptive item's ``responses_needed`` is the
number of places it has now. It starts at ``min``; each time an answer is stored, verified or set aside,
or a worker's standing changes, :func:`refresh_items` reads the item's answers that count (verified,
weighed by :func:`annotate.quality.exclusion.answer_weights`: excluded and waiting workers weigh 0) and
asks :func:`explain_engine.api.item_stopped`:

* stopped: ``responses_needed`` becomes ``responses_done`` (no free place is left) and ``stop_reason``
  says why;
* not stopped: one more counted answer is asked for, ``responses_needed = uncounted + max(min, n + 1)``
  capped at ``uncounted + max`` (``n`` counted answers; ``uncounted`` verified answers that weigh 0 keep
  their places), and ``round`` (``responses_needed`` beyond ``min``) orders the queue: items still
  collecting their minimum come first.

``label_posterior`` takes a worker's gold trust as their accuracy where the study has gold items, else
:data:`explain_engine.redundancy.DEFAULT_ACCURACY`. An unconfirmed worker's provisional answer holds its
place but decides nothing until it is verified; as in a fixed study, a confirmed worker still gets a place
meanwhile, so an item can end with one verified answer more than its rule needed.

A study ends when every item has stopped (every item's ``responses_done`` reaches its
``responses_needed``, as in a fixed study). Gold items keep their own rules: the policy never touches them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from annotate.models import Item, Response, Study
from annotate.quality.exclusion import standing
from annotate.tasks import get_kind
from annotate.tasks.base import REDUNDANCY_KEY
from explain_engine.api import STOPPING_RULES, CountedAnswer, StoppingPolicy, item_stopped

FIXED, ADAPTIVE = "fixed", "adaptive"
MAX_ANSWERS = 50
#: Rules whose threshold is a share from 0 to 1 (``ci_width``'s is a width in the answer's units).
SHARE_RULES = frozenset({"label_share", "label_posterior", "map_agreement"})


class RedundancySerializer(serializers.Serializer):
    """``config["redundancy"]``, checked against the kind's stopping rules (``context["rules"]``)."""

    mode = serializers.ChoiceField(choices=[FIXED, ADAPTIVE], default=FIXED)
    min = serializers.IntegerField(min_value=1, max_value=MAX_ANSWERS, required=False)
    max = serializers.IntegerField(min_value=1, max_value=MAX_ANSWERS, required=False)
    rule = serializers.CharField(required=False)
    threshold = serializers.FloatField(required=False)

    def validate(self, data: dict) -> dict:
        if data["mode"] == FIXED:
            return {"mode": FIXED}
        rules = self.context["rules"]
        missing = {f: ["required for an adaptive policy"] for f in ("min", "max", "rule", "threshold")}
        errors = {f: m for f, m in missing.items() if f not in data}
        if not errors and data["min"] > data["max"]:
            errors["max"] = [f"must be at least min ({data['min']})"]
        if "rule" in data and data["rule"] not in rules:
            errors["rule"] = [f"{data['rule']!r} is not a rule of this kind; use one of {', '.join(rules)}"]
        threshold = data.get("threshold")
        if threshold is not None and data.get("rule") in SHARE_RULES and not 0.0 < threshold <= 1.0:
            errors["threshold"] = ["must be a share above 0 and at most 1"]
        elif threshold is not None and not 0.0 < threshold <= 100.0:
            errors["threshold"] = ["must be a width above 0 and at most 100"]
        if errors:
            raise ValidationError(errors)
        return data


def validate_redundancy(value: Any, kind_name: str) -> dict[str, Any]:
    """The cleaned ``config["redundancy"]`` for a study of ``kind_name``; ``ValidationError`` naming the
    field otherwise."""
    if not isinstance(value, dict):
        raise ValidationError({"non_field_errors": ['must be an object, e.g. {"mode": "fixed"}']})
    rules = [r for r in get_kind(kind_name).stopping_rules if r in STOPPING_RULES]
    checked = RedundancySerializer(data=value, context={"rules": rules})
    if not checked.is_valid():
        raise ValidationError(checked.errors)
    return dict(checked.validated_data)


@dataclass(frozen=True)
class Policy:
    """A study's policy: ``stopping`` is ``None`` for a fixed one."""

    stopping: StoppingPolicy | None

    @property
    def adaptive(self) -> bool:
        return self.stopping is not None

    def describe(self, fixed_n: int) -> str:
        """The policy in words (the datasheet, the study page)."""
        s = self.stopping
        if s is None:
            return f"fixed: {fixed_n} answers per item"
        sign = "at most" if s.rule == "ci_width" else "at least"
        return (
            f"adaptive: {s.minimum} to {s.maximum} answers per item, an item stops when {s.rule} is "
            f"{sign} {s.threshold:g}"
        )


def policy_of(study: Study) -> Policy:
    """The study's policy from its config (fixed when it names none)."""
    spec = (study.config or {}).get(REDUNDANCY_KEY) or {}
    if spec.get("mode") != ADAPTIVE:
        return Policy(None)
    kind = get_kind(study.kind)
    categories = len(kind.categories(study)) if spec["rule"] == "label_posterior" else 2
    return Policy(
        StoppingPolicy(
            minimum=int(spec["min"]),
            maximum=int(spec["max"]),
            rule=str(spec["rule"]),
            threshold=float(spec["threshold"]),
            categories=max(categories, 2),
        )
    )


def prepare_adaptive_items(study: Study) -> int:
    """At a study's start: every ordinary item of an adaptive study opens ``min`` places; returns how
    many were set (none for a fixed study). Gold items keep theirs."""
    stopping = policy_of(study).stopping
    if stopping is None:
        return 0
    return Item.objects.filter(study=study, is_gold=False, responses_done=0).update(
        responses_needed=stopping.minimum, round=0, stop_reason=""
    )


def _answers(study: Study, item_ids: list[int]) -> dict[int, list[CountedAnswer]]:
    """Each item's verified answers in the order they arrived, weighed by the workers' standing (trust
    as the annotator's accuracy where the study has gold items)."""
    rows = list(
        Response.objects.filter(item_id__in=item_ids)
        .counted()
        .order_by("id")
        .values_list("item_id", "worker_id", "answer")
    )
    weights = standing(study, {w for _, w, _ in rows}).weights
    kind = get_kind(study.kind)
    out: dict[int, list[CountedAnswer]] = defaultdict(list)
    for item_id, worker_id, answer in rows:
        parts = kind.stop_answer(answer if isinstance(answer, dict) else {})
        weight = weights.get(worker_id, 0.0)
        accuracy = weight if 0.0 < weight < 1.0 else None
        out[item_id].append(CountedAnswer(**parts, weight=weight, accuracy=accuracy))
    return out


def decide(answers: list[CountedAnswer], done: int, stopping: StoppingPolicy) -> tuple[int, int, str]:
    """``(responses_needed, round, stop_reason)`` of an item with ``answers`` (verified) and ``done``
    submitted answers, under ``stopping`` (see the module docstring)."""
    counted = sum(1 for a in answers if a.weight > 0)
    uncounted = len(answers) - counted
    stopped, why = item_stopped(answers, stopping)
    if stopped:
        return done, max(0, counted - stopping.minimum), why
    target = min(stopping.maximum, max(stopping.minimum, counted + 1))
    return uncounted + target, target - stopping.minimum, ""


def refresh_items(study: Study, item_ids: Iterable[int]) -> int:
    """Decide again whether each of ``item_ids`` (ordinary items of an adaptive ``study``) has stopped,
    with the item rows locked; returns how many rows changed. Runs in the caller's transaction (the
    submission's), or its own."""
    stopping = policy_of(study).stopping
    ids = sorted(set(item_ids))
    if stopping is None or not ids:
        return 0
    with transaction.atomic(savepoint=False):
        items = list(
            Item.objects.select_for_update()
            .filter(pk__in=ids, study_id=study.pk, is_gold=False, retired=False)
            .order_by("pk")
            .only("id", "responses_done", "responses_needed", "round", "stop_reason")
        )
        answers = _answers(study, [i.pk for i in items])
        changed = 0
        for item in items:
            state = decide(answers.get(item.pk, []), item.responses_done, stopping)
            if state != (item.responses_needed, item.round, item.stop_reason):
                Item.objects.filter(pk=item.pk).update(
                    responses_needed=state[0], round=state[1], stop_reason=state[2][:200]
                )
                changed += 1
    return changed


def refresh_for_workers(study: Study, worker_ids: Iterable[int]) -> int:
    """:func:`refresh_items` for every item ``worker_ids`` answered in ``study`` (their standing or their
    answers' verification changed)."""
    if not policy_of(study).adaptive:
        return 0
    items = Response.objects.filter(study=study, worker_id__in=list(worker_ids)).values_list(
        "item_id", flat=True
    )
    return refresh_items(study, set(items))


def refresh_study(study: Study) -> int:
    """:func:`refresh_items` for every ordinary item of an adaptive study that has answers."""
    if not policy_of(study).adaptive:
        return 0
    items = Item.objects.filter(study=study, is_gold=False, responses_done__gt=0).values_list("id", flat=True)
    return refresh_items(study, list(items))


#: How many items the study page lists with their answers and why they stopped.
PAGE_ITEMS = 200


def stop_kind(reason: str) -> str:
    """``"rule"``, ``"max"`` or ``"open"`` for an item's ``stop_reason``."""
    if not reason:
        return "open"
    return "max" if reason.startswith("maximum") else "rule"


def redundancy_summary(study: Study, limit: int = PAGE_ITEMS) -> dict[str, Any] | None:
    """What the study page shows of an adaptive study (``None`` for a fixed one): the policy in words, items
    stopped by their rule, at the maximum and still open, answers per stopped item, the answers saved
    against a fixed design of ``max`` answers per item, and the first ``limit`` items with their answers
    and why each stopped."""
    policy = policy_of(study)
    if policy.stopping is None:
        return None
    rows = list(
        Item.objects.filter(study=study, is_gold=False, retired=False)
        .order_by("position", "id")
        .values_list("id", "position", "document__external_id", "responses_done", "stop_reason")
    )
    kinds = [stop_kind(r[4]) for r in rows]
    stopped = [r[3] for r, k in zip(rows, kinds, strict=True) if k != "open"]
    per_answers: dict[int, int] = defaultdict(int)
    for n in stopped:
        per_answers[n] += 1
    return {
        "policy": policy.describe(study.annotators_per_item),
        "items": len(rows),
        "by_rule": kinds.count("rule"),
        "at_max": kinds.count("max"),
        "open": kinds.count("open"),
        "answers_per_stopped_item": sum(stopped) / len(stopped) if stopped else None,
        "distribution": sorted(per_answers.items()),
        "saved": policy.stopping.maximum * len(stopped) - sum(stopped),
        "fixed_max": policy.stopping.maximum,
        "rows": [
            {
                "item": r[0],
                "position": r[1],
                "document": r[2] or "",
                "answers": r[3],
                "stop": k,
                "reason": r[4],
            }
            for r, k in zip(rows[:limit], kinds[:limit], strict=True)
        ],
    }


def cost_range(study: Study, per_answer: float) -> dict[str, float] | None:
    """An adaptive study's places (``places_min`` .. ``places_max``: its ordinary items times ``min`` and
    ``max``) and cost at ``per_answer`` (reward and fee of one answer): ``min`` (every item stops
    at its minimum), ``max`` (every item at its maximum), ``expected`` (the answers per stopped item so far,
    else halfway) and ``saved`` so far against a fixed design of ``max`` answers per item. ``None`` for a
    fixed study."""
    summary = redundancy_summary(study, limit=0)
    if summary is None:
        return None
    s = policy_of(study).stopping
    assert s is not None
    items = summary["items"]
    expected = summary["answers_per_stopped_item"] or (s.minimum + s.maximum) / 2
    return {
        "places_min": items * s.minimum,
        "places_max": items * s.maximum,
        "min": round(items * s.minimum * per_answer, 2),
        "max": round(items * s.maximum * per_answer, 2),
        "expected": round(items * expected * per_answer, 2),
        "expected_from": "answers per stopped item so far"
        if summary["answers_per_stopped_item"]
        else "halfway",
        "saved": round(summary["saved"] * per_answer, 2),
    }


def share_over(study: Study, worker_id: int) -> bool:
    """Whether an adaptive study has nothing more for ``worker_id``, ever: every ordinary item they did not
    answer has stopped (so they are done, not waiting for places to come free). ``False`` for a fixed study."""
    if not policy_of(study).adaptive:
        return False
    left = Item.objects.filter(study=study, is_gold=False, retired=False, stop_reason="").exclude(
        responses__worker_id=worker_id
    )
    return not left.exists()
