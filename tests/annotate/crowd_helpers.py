"""Builders shared by the crowd-platform and quality tests: studies on a provider, answers to items."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.utils import timezone

from annotate.models import Assignment, Item, Response, Study, Worker
from annotate.studies.lifecycle import start_study
from annotate.tasks import get_kind
from tests.annotate.conftest import make_dataset, make_study

MTURK_CONFIG = {
    "title": "Highlight the words that show the sentiment",
    "description": "Read a short review, choose its sentiment, then click the words that show it.",
    "reward": "0.50",
    "hits": 2,
    "assignments_per_hit": 3,
}
PROLIFIC_CONFIG = {
    "name": "Highlight sentiment words",
    "description": "Read short reviews and mark the words that show their sentiment.",
    "reward": "1.20",
    "places": 10,
    "estimated_minutes": 8,
}


def crowd_study(owner, provider: str = "local", provider_config: dict | None = None, *, n: int = 8,
                gold_every: int = 2, **fields) -> Study:  # fmt: skip
    """A running highlight study of ``n`` synthetic reviews, every ``gold_every``-th one a gold item."""
    dataset = make_dataset(owner, n=n, name=f"reviews-{uuid.uuid4().hex[:6]}", gold_every=gold_every)
    return make_study(owner, dataset, provider=provider, provider_config=provider_config or {}, **fields)


def answer_of(item: Item, correct: bool = True) -> dict:
    """A valid answer to ``item``: its gold answer (or the document's label with its first word), or,
    with ``correct=False``, the other label and a map that misses the gold words."""
    gold = item.secret.get("gold")
    n = len(item.payload["words"])
    if gold is not None:
        if correct:
            return {"label": gold["label"], "map": list(gold["map"])}
        other = "negative" if gold["label"] == "positive" else "positive"
        wrong = [1 - v for v in gold["map"]]
        return {"label": other, "map": wrong if any(wrong) else [1] + [0] * (n - 1)}
    label = item.secret.get("label") or "positive"
    return {"label": label if correct else ("negative" if label == "positive" else "positive"),
            "map": [1] + [0] * (n - 1)}  # fmt: skip


def answer(study: Study, worker: Worker, item: Item, correct: bool = True, *, when=None, answer_ms: int = 20000,
           signals: dict | None = None, provider_assignment_id: str = "") -> Response:  # fmt: skip
    """Store ``worker``'s answer to ``item`` directly (assignment + response, graded like a submission)."""
    when = when or timezone.now()
    slot = Assignment.objects.filter(item=item).count()
    assignment = Assignment.objects.create(
        study=study,
        item=item,
        worker=worker,
        slot=slot,
        status=Assignment.Status.SUBMITTED,
        expires_at=when + timedelta(hours=1),
        submitted_at=when,
        provider_assignment_id=provider_assignment_id,
    )
    item.study = study
    value = answer_of(item, correct)
    response = Response.objects.create(
        assignment=assignment,
        study=study,
        item=item,
        worker=worker,
        submission_key=uuid.uuid4(),
        answer=value,
        read_ms=5000,
        answer_ms=answer_ms,
        signals=signals or {},
        gold_passed=get_kind(study.kind).grade_gold(item, value),
    )
    Response.objects.filter(pk=response.pk).update(created=when)
    return response


def golds(study: Study) -> list[Item]:
    return list(Item.objects.filter(study=study, is_gold=True).order_by("position", "id"))


def ordinary(study: Study) -> list[Item]:
    return list(Item.objects.filter(study=study, is_gold=False).order_by("position", "id"))


def adaptive_crowd_study(owner, provider: str, provider_config: dict, n: int = 2) -> Study:
    """A running highlight study on ``provider`` with an adaptive policy (2 to 3 answers, label share 0.9)."""
    study = crowd_study(owner, provider, provider_config, n=n, gold_every=0, start=False)
    policy = {"mode": "adaptive", "min": 2, "max": 3, "rule": "label_share", "threshold": 0.9}
    study.config = {**study.config, "redundancy": policy}
    study.annotators_per_item = 3
    study.save(update_fields=["config", "annotators_per_item"])
    start_study(study)
    return study
