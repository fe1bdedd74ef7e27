"""What the dashboards read from the database: a study's answers, maps and machine maps, as plain data.

Everything comes from a few indexed queries (responses by study, items by study, explanations by
``(model_run, method)``, predictions by model run); the numbers are the engine's. Only verified
answers are read (``Response.objects.counted()``); they count when they answer a non-gold, non-retired
item and their worker's answers count (:func:`annotate.quality.exclusion.standing`, the rule of the
results pages, the aggregation and the exports: a pending worker's answers wait, an excluded one's are
out).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count

from annotate.models import Explanation, Item, ModelRun, Prediction, Response, Study, Worker
from annotate.models.crowd import pseudonym
from annotate.quality.exclusion import Standing, standing
from annotate.tasks import get_kind
from explain_engine.api import TRAINING_ATTENTION as ATTENTION

#: The registry's attention method: the weights the training attention map already shows.
ATTENTION_METHOD = "attention"
TARGET_PREDICTED = "predicted"
TARGET_GOLD = "gold"
TARGETS = (TARGET_PREDICTED, TARGET_GOLD)
# Document labels read as the sentiment classes of CSSR (Sen et al. 2020 §4.3: Y = 1 positive, 0 negative).
SENTIMENT_CODES = {"positive": 1, "pos": 1, "1": 1, "negative": 0, "neg": 0, "0": 0}


@dataclass(frozen=True)
class Answer:
    """One response, flattened."""

    response: int
    item: int
    worker: int
    slot: int
    label: Any
    map: list[int] | None
    time_ms: int | None
    gold_passed: bool | None
    is_gold: bool
    retired: bool


@dataclass
class StudyData:
    """A study's answers with what the dashboards need about its items, documents and workers."""

    answers: list[Answer]
    items: list[dict]
    workers: dict[int, dict]
    standing: Standing
    categories: list
    agreement_value: Any = field(repr=False, default=None)

    @property
    def excluded(self) -> frozenset[int]:
        """Workers whose answers are out: excluded by their gold trust or, by the policy or a researcher,
        for risk."""
        return self.standing.excluded

    @property
    def waiting(self) -> frozenset[int]:
        """Workers whose answers wait: pending their minimum number of golds (they count once qualified)."""
        return self.standing.waiting

    def status(self, worker: int) -> str:
        """The worker's trust status for the annotator table (``pending`` while their answers wait)."""
        return self.standing.status.get(worker, "pending" if worker in self.waiting else "")

    def scored(self) -> list[Answer]:
        """Answers to non-gold, non-retired items, whoever gave them."""
        return [a for a in self.answers if not a.is_gold and not a.retired]

    def counted(self) -> list[Answer]:
        """Answers to non-gold, non-retired items whose worker's answers count."""
        left_out = self.standing.left_out
        return [a for a in self.scored() if a.worker not in left_out]

    def left_out(self) -> dict[str, int]:
        """How many workers (with answers to non-gold, non-retired items) wait or are excluded, and how
        many such answers each group gave."""
        scored = self.scored()
        return {
            "waiting_workers": len({a.worker for a in scored} & self.waiting),
            "waiting_answers": sum(1 for a in scored if a.worker in self.waiting),
            "excluded_workers": len({a.worker for a in scored} & self.excluded),
            "excluded_answers": sum(1 for a in scored if a.worker in self.excluded),
        }


def _time(read_ms: int | None, answer_ms: int | None) -> int | None:
    if read_ms is None and answer_ms is None:
        return None
    return (read_ms or 0) + (answer_ms or 0)


def study_data(study: Study, with_text: bool = False) -> StudyData:
    """Every verified response of ``study`` (ordered by item, then assignment slot), its items and workers.

    Five queries: responses (joined to their assignment and item), items (joined to their document),
    workers, and their standing (trust rows, whether the study has gold items). ``with_text`` also
    loads each document's text (POS tags, CSSR).
    """
    kind = get_kind(study.kind)
    answers = _answers(study, kind.agreement_value)
    worker_ids = {a.worker for a in answers}
    workers = {
        pk: {
            "provider": provider,
            "external_id": external,
            "name": pseudonym(study.owner_id, provider, external),
        }
        for pk, provider, external in Worker.objects.filter(pk__in=worker_ids).values_list(
            "id", "provider", "external_id"
        )
    }
    return StudyData(
        answers,
        _items(study, with_text),
        workers,
        standing(study, worker_ids),
        list(kind.categories(study)),
        kind.agreement_value,
    )


def _answers(study: Study, agreement_value: Callable[[dict], Any]) -> list[Answer]:
    """The study's verified responses as :class:`Answer` (one query), ordered by item, slot and id;
    ``agreement_value`` reads an answer's label (the task kind's)."""
    rows = (
        Response.objects.filter(study=study)
        .counted()
        .order_by("item_id", "assignment__slot", "id")
        .values_list(
            "id",
            "item_id",
            "worker_id",
            "assignment__slot",
            "answer",
            "read_ms",
            "answer_ms",
            "gold_passed",
            "item__is_gold",
            "item__retired",
        )
    )
    answers = []
    for rid, item, worker, slot, answer, read_ms, answer_ms, gold, is_gold, retired in rows.iterator(2000):
        answer = answer if isinstance(answer, dict) else {}
        word_map = answer.get("map")
        answers.append(
            Answer(
                rid,
                item,
                worker,
                slot,
                agreement_value(answer),
                word_map if isinstance(word_map, list) else None,
                _time(read_ms, answer_ms),
                gold,
                is_gold,
                retired,
            )
        )
    return answers


def _items(study: Study, with_text: bool) -> list[dict]:
    """The study's items in position order with their documents (one query; the text with ``with_text``)."""
    fields = [
        "id",
        "position",
        "is_gold",
        "retired",
        "document_id",
        "document__external_id",
        "document__words",
        "document__label",
    ]
    if with_text:
        fields.append("document__text")
    return [
        {
            "item": row["id"],
            "position": row["position"],
            "is_gold": row["is_gold"],
            "retired": row["retired"],
            "document": row["document_id"],
            "external_id": row["document__external_id"],
            "words": row["document__words"],
            "label": row["document__label"],
            "text": row.get("document__text"),
        }
        for row in Item.objects.filter(study=study).order_by("position", "id").values(*fields).iterator(2000)
    ]


def anonymous_id(study: Study, worker: dict) -> str:
    """The worker's pseudonym as the study's owner sees it."""
    return pseudonym(study.owner_id, worker["provider"], worker["external_id"])


def sentiment_code(label: str | None) -> int | None:
    """1 for a positive, 0 for a negative document label, None otherwise."""
    return SENTIMENT_CODES.get(str(label).strip().lower()) if label not in (None, "") else None


def map_records(data: StudyData) -> tuple[list[dict], int]:
    """The counted maps as records of the shape ``yelphat convert`` writes, which the engine reads:
    ``{"id", "item", "document", "text", "words", "label", "annotations": [{"label", "map"}]}``, one
    per item with at least one map, in item order; a text's maps in assignment-slot order (HAM1, HAM2,
    ...). Also returns how many counted answers carried a map of the wrong length (left out)."""
    by_item: dict[int, list[Answer]] = defaultdict(list)
    for a in data.counted():
        if a.map is not None:
            by_item[a.item].append(a)
    records, bad = [], 0
    for item in data.items:
        if item["is_gold"] or item["retired"] or item["document"] is None:
            continue
        n = len(item["words"])
        annotations = []
        for a in by_item.get(item["item"], ()):
            assert a.map is not None  # by_item holds answers with a map
            if len(a.map) != n or any(v not in (0, 1) for v in a.map):
                bad += 1
                continue
            annotations.append({"label": a.label, "map": a.map})
        if annotations:
            records.append(
                {
                    "id": str(item["item"]),
                    "item": item["item"],
                    "document": item["document"],
                    "external_id": item["external_id"],
                    "text": item["text"],
                    "words": item["words"],
                    "label": sentiment_code(item["label"]),
                    "document_label": item["label"],
                    "annotations": annotations,
                }
            )
    return records, bad


# ------------------------------------------------------------------------------------------ machine


@dataclass(frozen=True)
class Selection:
    """One machine map source: a model run and a method (``ATTENTION`` = the run's training attention)."""

    run: int
    method: str

    @property
    def key(self) -> str:
        return f"{self.run}:{self.method}"

    @classmethod
    def parse(cls, value: str) -> Selection:
        """``"<run id>:<method>"``; ``ValueError`` saying what is wrong."""
        run, sep, method = str(value).partition(":")
        if not sep or not method.strip():
            raise ValueError(f"{value!r} is not <model run id>:<method>")
        try:
            run_id = int(run)
        except ValueError:
            raise ValueError(f"{value!r}: the model run id must be a whole number") from None
        return cls(run_id, method.strip())


def machine_options(runs, *, duplicates: bool = False) -> list[dict]:
    """For each finished run of ``runs``: the methods with stored maps (training attention first) and
    how many documents each covers. The ``attention`` method recomputes the training attention (the
    same weights α_t of the same model), so it is left out where the training attention covers as many
    documents; ``duplicates`` keeps it (a selection of it stays valid). Two queries."""
    runs = list(runs)
    ids = [r.pk for r in runs]
    attention = dict(
        Prediction.objects.filter(model_run_id__in=ids, attention__isnull=False)
        .values_list("model_run_id")
        .annotate(n=Count("id"))
        .values_list("model_run_id", "n")
    )
    methods: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for run, method, n in (
        Explanation.objects.filter(model_run_id__in=ids)
        .values_list("model_run_id", "method")
        .annotate(n=Count("document_id", distinct=True))
        .order_by("model_run_id", "method")
        .values_list("model_run_id", "method", "n")
    ):
        methods[run].append((method, n))
    out = []
    for run in runs:
        listed = ([(ATTENTION, attention[run.pk])] if attention.get(run.pk) else []) + [
            (m, n)
            for m, n in methods.get(run.pk, [])
            if duplicates or m != ATTENTION_METHOD or n > attention.get(run.pk, 0)
        ]
        out.append(
            {
                "run": run.pk,
                "name": run.name,
                "architecture": run.architecture,
                "methods": [
                    {"method": m, "documents": n, "key": Selection(run.pk, m).key} for m, n in listed
                ],
            }
        )
    return out


def _finite_scores(scores: Any, n_words: int) -> list[float] | None:
    if not isinstance(scores, list) or len(scores) != n_words:
        return None
    out = []
    for s in scores:
        if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s):
            return None
        out.append(float(s))
    return out


def machine_maps(
    selection: Selection, documents: dict[int, int], labels: dict[int, str], target: str = TARGET_PREDICTED
) -> tuple[dict[int, list[float]], dict[int, str], int]:
    """One machine map per document of ``documents`` (id → number of words) for ``selection``.

    The training attention comes from the run's predictions. An explanation method may hold one map
    per target class; ``target`` picks the one for the run's predicted class (``predicted``) or for the
    document's gold label (``gold``, ``labels``), and a document with a single target uses that one.
    Returns ``(document → scores, document → target used, documents whose map was unusable)``.
    One or two queries.
    """
    ids = list(documents)
    predicted = {}
    if selection.method == ATTENTION or target == TARGET_PREDICTED:
        for doc, label, attention in Prediction.objects.filter(
            model_run_id=selection.run, document_id__in=ids
        ).values_list("document_id", "label", "attention"):
            predicted[doc] = (label, attention)
    maps: dict[int, list[float]] = {}
    used: dict[int, str] = {}
    bad = 0
    if selection.method == ATTENTION:
        for doc, (label, attention) in predicted.items():
            scores = _finite_scores(attention, documents[doc])
            if scores is None:
                bad += attention is not None
                continue
            maps[doc], used[doc] = scores, label
        return maps, used, bad
    per_doc: dict[int, dict[str, Any]] = defaultdict(dict)
    for doc, tgt, scores in Explanation.objects.filter(
        model_run_id=selection.run, method=selection.method, document_id__in=ids
    ).values_list("document_id", "target", "scores"):
        per_doc[doc][tgt] = scores
    for doc, by_target in per_doc.items():
        wanted = predicted.get(doc, (None, None))[0] if target == TARGET_PREDICTED else labels.get(doc)
        chosen = wanted if wanted in by_target else (next(iter(by_target)) if len(by_target) == 1 else None)
        if chosen is None:
            bad += 1
            continue
        scores = _finite_scores(by_target[chosen], documents[doc])
        if scores is None:
            bad += 1
            continue
        maps[doc], used[doc] = scores, chosen
    return maps, used, bad


def runs_by_id(ids) -> dict[int, ModelRun]:
    return {r.pk: r for r in ModelRun.objects.filter(pk__in=list(ids)).select_related("dataset")}
