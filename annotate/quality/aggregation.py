"""Aggregating a study's answers into one label per item: majority vote and Dawid & Skene (1979).

The label of an answer is its task kind's ``agreement_value`` (the highlight label, the rating, the
forced choice). Gold items and the answers of workers excluded by their gold trust are left out.
Per item we report (Pappas & Popescu-Belis 2016 §3):

* ``majority`` — the most frequent answer (:func:`explain_engine.api.majority_vote`; a tie goes to
  the label with more trust behind it, then to the first label in sorted order:
  :func:`explain_engine.api.winning_category`, the rule of the ratings results too);
* ``confidence`` — the trust-weighted share of the majority answer, i.e. the sum of the trust of the
  workers who gave it over the sum of the trust of all who answered (the same vote weighted by each
  answer's trust). Each worker weighs :func:`annotate.quality.exclusion.answer_weights` (pending
  workers' answers wait);
* ``ds_label`` / ``ds_probability`` — Dawid & Skene's (1979) EM estimate of the true label and its
  posterior probability (:func:`explain_engine.api.dawid_skene`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd

from annotate.models import Item, Response, Study
from annotate.quality.exclusion import answer_weights, excluded_worker_ids
from annotate.tasks import get_kind
from annotate.tasks.export_spec import Column, ExportTable
from explain_engine.api import dawid_skene, majority_vote

COLUMNS = ("task", "worker", "label")
#: The columns of :func:`aggregation_rows`, with what each holds (listed in the datasheet).
LABEL_COLUMNS: tuple[Column, ...] = (
    ("item", "the item's id"),
    ("document", "the document's id"),
    ("responses", "counted answers (non-gold items; workers kept by their gold trust)"),
    ("majority", "the most frequent answer (ties: more trust behind it, then the first in sorted order)"),
    ("confidence", "the trust-weighted share of the majority answer (Pappas & Popescu-Belis 2016, §3)"),
    ("ds_label", "Dawid & Skene's (1979) estimate of the true answer"),
    ("ds_probability", "its posterior probability"),
    ("labels", "every counted answer, in submission order"),
)
FIELDS = tuple(name for name, _ in LABEL_COLUMNS)


def label_frame(study: Study, *, include_excluded: bool = False) -> pd.DataFrame:
    """One row per answer to a non-gold item: ``task`` (item id), ``worker`` (worker id), ``label``."""
    kind = get_kind(study.kind)
    rows = (
        Response.objects.filter(study=study, item__is_gold=False)
        .counted()
        .values_list("item_id", "worker_id", "answer")
    )
    if not include_excluded:
        rows = rows.exclude(worker_id__in=excluded_worker_ids(study))
    records = [
        (item, worker, label)
        for item, worker, answer in rows.order_by("id").iterator(chunk_size=2000)
        if (label := kind.agreement_value(answer if isinstance(answer, dict) else {})) is not None
    ]
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


def trust_weights(study: Study, workers) -> pd.Series:
    """Each worker's answer weight (:func:`annotate.quality.exclusion.answer_weights`)."""
    ids = pd.Index(pd.unique(pd.Series(workers)), name="worker")
    weights = answer_weights(study, [int(w) for w in ids])
    return pd.Series([weights[int(w)] for w in ids], index=ids, dtype=float)


def aggregate(frame: pd.DataFrame, weights: pd.Series, *, ds_iterations: int = 100) -> pd.DataFrame:
    """Per task: ``responses``, ``majority``, ``confidence``, ``ds_label``, ``ds_probability``.

    ``confidence`` is the trust-weighted vote's share at the unweighted majority label.
    """
    columns = ["responses", "majority", "confidence", "ds_label", "ds_probability"]
    if frame.empty:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="task"))
    tasks, workers, labels = frame["task"].to_numpy(), frame["worker"].to_numpy(), frame["label"].tolist()
    categories = sorted(set(labels))  # ties go to the first category in this order
    answer_trust = weights.reindex(frame["worker"]).fillna(0.0).to_numpy()
    majority = majority_vote(tasks, workers, labels, categories=categories, tie_weights=answer_trust)
    weighted = majority_vote(tasks, workers, labels, weights=answer_trust, categories=categories)
    column = {category: k for k, category in enumerate(categories)}
    at_majority = [column[label] for label in majority.label]
    ds = dawid_skene(tasks, workers, labels, categories=categories, n_iter=ds_iterations)
    out = pd.DataFrame(
        {
            "responses": majority.answers,
            "majority": majority.label,
            "confidence": [row[k] for row, k in zip(weighted.probabilities, at_majority, strict=True)],
            "ds_label": ds.label,
            "ds_probability": ds.probability,
        },
        index=pd.Index(majority.tasks, name="task"),
    )
    return out[columns]


def aggregation_rows(study: Study) -> Iterator[dict[str, Any]]:
    """One export row per non-gold item (items without counted answers too), in item order."""
    frame = label_frame(study)
    table = aggregate(frame, trust_weights(study, frame["worker"]))
    labels = frame.groupby("task")["label"].agg(list) if not frame.empty else pd.Series(dtype=object)
    items = Item.objects.filter(study=study, is_gold=False).order_by("position", "id")
    for item_id, document in items.values_list("id", "document__external_id").iterator(chunk_size=2000):
        row = table.loc[item_id] if item_id in table.index else None
        yield {
            "item": item_id,
            "document": document or "",
            "responses": 0 if row is None else int(row["responses"]),
            "majority": None if row is None else row["majority"],
            "confidence": None if row is None else round(float(row["confidence"]), 4),
            "ds_label": None if row is None else row["ds_label"],
            "ds_probability": None if row is None else round(float(row["ds_probability"]), 4),
            "labels": list(labels.get(item_id, [])),
        }


def label_table(study: Study, unverified: bool = False) -> tuple[tuple[str, ...], Iterator[dict[str, Any]]]:
    """The ``labels`` export: :data:`FIELDS` and :func:`aggregation_rows` (verified answers only)."""
    return FIELDS, aggregation_rows(study)


#: The aggregated export a kind with one answer category per item may offer
#: (:meth:`annotate.tasks.base.TaskKind.export_tables`): each item's label by majority vote, its
#: trust-weighted confidence and Dawid & Skene's estimate, over the kind's ``agreement_value``.
LABEL_TABLE = ExportTable(
    "labels",
    "Labels per item",
    "majority answer, its trust-weighted confidence, Dawid & Skene",
    LABEL_COLUMNS,
    label_table,
)
