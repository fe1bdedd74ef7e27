"""Aggregating a study's answers into one label per item: majority vote and Dawid & Skene (1979).

The label of an answer is its task kind's ``agreement_value`` (the highlight label, the rating, the
forced choice). Gold items and the answers of workers excluded by their gold trust are left out.
Per item we report (Pappas & Popescu-Belis 2016 §3):

* ``majority`` — the most frequent answer (:func:`explain_engine.api.majority_vote`; a tie goes to
  the first label in sorted order);
* ``confidence`` — the trust-weighted share of the majority answer, i.e. the sum of the trust of the
  workers who gave it over the sum of the trust of all who answered (the same vote weighted by each
  answer's trust). A worker with no gold answered yet weighs the study's threshold;
* ``ds_label`` / ``ds_probability`` — Dawid & Skene's (1979) EM estimate of the true label and its
  posterior probability (:func:`explain_engine.api.dawid_skene`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from annotate.models import Item, Response, Study, WorkerTrust
from annotate.quality.exclusion import excluded_worker_ids
from annotate.quality.policy import policy_for
from annotate.tasks import get_kind
from explain_engine.api import dawid_skene, majority_vote

COLUMNS = ("task", "worker", "label")
FIELDS = ("item", "document", "responses", "majority", "confidence", "ds_label", "ds_probability", "labels")


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
    """Each worker's trust (share of golds passed); the study's threshold for a worker with none yet."""
    policy = policy_for(study)
    known = dict(
        WorkerTrust.objects.filter(study=study, golds_seen__gt=0, trust__isnull=False).values_list(
            "worker_id", "trust"
        )
    )
    ids = pd.Index(pd.unique(pd.Series(workers)), name="worker")
    return pd.Series([known.get(w, policy.trust_threshold) for w in ids], index=ids, dtype=float)


def aggregate(frame: pd.DataFrame, weights: pd.Series, *, ds_iterations: int = 100) -> pd.DataFrame:
    """Per task: ``responses``, ``majority``, ``confidence``, ``ds_label``, ``ds_probability``.

    ``confidence`` is the trust-weighted vote's share at the unweighted majority label.
    """
    columns = ["responses", "majority", "confidence", "ds_label", "ds_probability"]
    if frame.empty:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="task"))
    tasks, workers, labels = frame["task"].to_numpy(), frame["worker"].to_numpy(), frame["label"].tolist()
    categories = sorted(set(labels))  # ties go to the first category in this order
    majority = majority_vote(tasks, workers, labels, categories=categories)
    answer_trust = weights.reindex(frame["worker"]).fillna(0.0).to_numpy()
    weighted = majority_vote(tasks, workers, labels, weights=answer_trust, categories=categories)
    column = {category: k for k, category in enumerate(categories)}
    at_majority = [column[label] for label in majority.label]
    ds = dawid_skene(tasks, workers, labels, categories=categories, n_iter=ds_iterations)
    out = pd.DataFrame(
        {
            "responses": majority.answers,
            "majority": majority.label,
            "confidence": weighted.probabilities[np.arange(len(at_majority)), at_majority],
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
