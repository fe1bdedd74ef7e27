"""Results of a sentence-rating study (Pappas & Popescu-Belis 2016 §4, Figure 4), read from the database:
crowd labels with their confidence, agreement between annotators and, with a model run, how well the
model's sentence attention predicts the crowd's levels. The numbers come from the engine
(:mod:`explain_engine.api`); this module reads the answers and lays the figures out, and
:class:`SentenceRatingResults` is the kind's results page (tables, the Figure 4 chart and CSV downloads).
``?run=<model run id>`` picks the model whose sentence attention is compared with the crowd (``?run=none``:
no model; the newest run with attention by default); ``?kappa=`` names the κ of the agreement table
(``cohen_absolute``, the default, or ``distance_agreement``, the figure Pappas & Popescu-Belis 2016 Table 1
reports as we read it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotate.kinds.sentence_rating.config import PAPER_JUDGES, RATING_LABELS
from annotate.models import Document, ModelRun, Prediction, Study
from annotate.quality.exclusion import answer_weights, counted_responses
from annotate.tasks.page_words import document_sentences
from annotate.tasks.results import (
    N_BOOT,
    ChoiceField,
    ResultsPage,
    RunField,
    finite_or_none,
    from_results,
    worker_names,
)
from explain_engine.api import (
    DEFAULT_KAPPA,
    KAPPA_KINDS,
    attention_levels,
    confidence_curve,
    confidence_summary,
    crowd_labels,
    mean_of,
    pairwise_agreement,
    rating_matrix,
    sentence_scores,
)
from explain_engine.api import RATING_LEVELS as LEVELS

TABLES = ("labels", "agreement", "machine")
ALL_ASPECTS = "all"


def attention_runs(study: Study):
    """Model runs on the study's dataset with attention stored for its documents, newest first."""
    if study.dataset_id is None:
        return ModelRun.objects.none()
    with_attention = Prediction.objects.filter(attention__isnull=False).values("model_run_id")
    return ModelRun.objects.filter(dataset_id=study.dataset_id, pk__in=with_attention).order_by(
        "-created", "-pk"
    )


def rating_results(
    study: Study, model_run: ModelRun | None = None, n_boot: int = N_BOOT, kappa: str = DEFAULT_KAPPA
) -> dict[str, Any]:
    """Crowd labels, agreement and (with ``model_run``) the Figure 4 comparison of a sentence_rating study;
    ``kappa`` names the κ of the agreement table (``explain_engine.api.KAPPA_KINDS``)."""
    config = study.config
    aspects = [a["name"] for a in config.get("aspects", [])]
    titles = {a["name"]: a.get("title", a["name"]) for a in config.get("aspects", [])}
    min_judges = config.get("min_judges", PAPER_JUDGES)
    items = {
        row[0]: row
        for row in study.items.filter(is_gold=False)
        .order_by("position", "id")
        .values_list(
            "id",
            "document_id",
            "document__external_id",
            "payload__aspect",
            "payload__sentence_index",
            "payload__sentence",
            "payload__words",
        )
    }
    answers = list(counted_responses(study).values_list("item_id", "worker_id", "answer__rating"))
    answers = [(i, w, r) for i, w, r in answers if r in LEVELS and i in items]
    worker_ids = sorted({w for _, w, _ in answers})
    trust = answer_weights(study, worker_ids)
    names = worker_names(worker_ids)
    result: dict[str, Any] = {
        "answers": len(answers),
        "workers": len(worker_ids),
        "sentences": len(items),
        "min_judges": min_judges,
        "aspects": [{"name": a, "title": titles[a]} for a in aspects],
        "level_names": list(RATING_LABELS),
    }
    crowd = crowd_labels([a[0] for a in answers], [a[2] for a in answers], [trust[a[1]] for a in answers])
    labelled = {int(item): k for k, item in enumerate(crowd.items)}
    label_rows = []
    for item_id, (_, doc_id, external, aspect, index, span, words) in items.items():
        k = labelled.get(item_id)
        first, end = span
        row = {
            "item": item_id,
            "document": external,
            "document_id": doc_id,
            "aspect": aspect,
            "sentence": index,
            "text": " ".join((words or [])[first:end]),
            "responses": 0 if k is None else int(crowd.responses[k]),
            "majority": None if k is None else int(crowd.majority[k]),
            "majority_text": None if k is None else RATING_LABELS[int(crowd.majority[k]) - 1],
            "confidence": None if k is None else finite_or_none(crowd.confidence[k]),
            "mean": None if k is None else finite_or_none(crowd.mean[k]),
            "counts": [0] * len(LEVELS) if k is None else [int(c) for c in crowd.counts[k]],
        }
        row["enough_judges"] = row["responses"] >= min_judges
        label_rows.append(row)
    result["labels"] = label_rows
    result["summary"] = [_aspect_summary(a, titles.get(a, a), label_rows) for a in [*aspects, ALL_ASPECTS]]
    result["kappa"] = kappa
    result["agreement"] = _agreement(answers, items, names, aspects, n_boot, kappa)
    result["model_run"] = None
    if model_run is not None:
        result["model_run"] = {
            "id": model_run.pk,
            "name": model_run.name,
            "architecture": model_run.architecture,
        }
        result["machine"] = _machine_comparison(model_run, label_rows, aspects)
    return result


def _aspect_summary(aspect: str, title: str, rows: list[dict]) -> dict[str, Any]:
    chosen = [r for r in rows if aspect == ALL_ASPECTS or r["aspect"] == aspect]
    done = [r for r in chosen if r["responses"]]
    confidence = confidence_summary([r["confidence"] for r in done])
    distribution = [sum(1 for r in done if r["majority"] == level) for level in LEVELS]
    return {
        "aspect": aspect,
        "title": "All aspects" if aspect == ALL_ASPECTS else title,
        "sentences": len(chosen),
        "labelled": len(done),
        "judgments": sum(r["responses"] for r in done),
        "enough_judges": sum(1 for r in done if r["enough_judges"]),
        "mean_confidence": confidence["mean_confidence"],
        "share_confidence_05": confidence["share_confidence_05"],
        "share_confidence_08": confidence["share_confidence_08"],
        "distribution": distribution,
    }


def _agreement(answers, items, names, aspects, n_boot, kappa: str) -> dict[str, Any]:
    """Table 1 of Pappas & Popescu-Belis 2016: pairwise r and the κ named ``kappa`` per aspect and over
    all aspects."""
    out: dict[str, Any] = {"pairs": [], "averages": []}
    for aspect in [*aspects, ALL_ASPECTS]:
        chosen = [a for a in answers if aspect == ALL_ASPECTS or items[a[0]][3] == aspect]
        if not chosen:
            out["averages"].append({"aspect": aspect, "pairs": 0, "r": None, "kappa": None})
            continue
        matrix, _, worker_ids = rating_matrix(
            [a[0] for a in chosen], [a[1] for a in chosen], [a[2] for a in chosen]
        )
        rows = pairwise_agreement(matrix, [names[int(w)] for w in worker_ids], n_boot=n_boot, kappa=kappa)
        for row in rows:
            out["pairs"].append({"aspect": aspect, **row})
        out["averages"].append(
            {"aspect": aspect, "pairs": len(rows), "r": mean_of(rows, "r"), "kappa": mean_of(rows, "kappa")}
        )
    return out


def _machine_comparison(run: ModelRun, rows: list[dict], aspects: list[str]) -> dict[str, Any]:
    """Pappas & Popescu-Belis 2016 §5, Figure 4: sentence attention (sum of word attention) against crowd labels."""
    doc_ids = {r["document_id"] for r in rows if r["majority"] is not None}
    attention = dict(
        Prediction.objects.filter(
            model_run=run, document_id__in=doc_ids, attention__isnull=False
        ).values_list("document_id", "attention")
    )
    per_doc: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    documents = Document.objects.filter(pk__in=list(attention)).only("id", "text", "words", "sentences")
    for doc in documents:
        weights = attention[doc.pk]
        if not isinstance(weights, list) or len(weights) != len(doc.words):
            continue
        scores = sentence_scores(np.nan_to_num(np.asarray(weights, dtype=float)), document_sentences(doc))
        per_doc[doc.pk] = (scores, attention_levels(scores))
    compared, skipped = [], 0
    for row in rows:
        if row["majority"] is None:
            continue
        found = per_doc.get(row["document_id"])
        if found is None or row["sentence"] >= found[0].size:
            skipped += 1
            continue
        compared.append(
            {
                **row,
                "machine_score": float(found[0][row["sentence"]]),
                "machine_level": int(found[1][row["sentence"]]),
            }
        )
    curves = []
    for aspect in [*aspects, ALL_ASPECTS]:
        chosen = [r for r in compared if aspect == ALL_ASPECTS or r["aspect"] == aspect]
        for point in confidence_curve(
            [r["majority"] for r in chosen],
            [r["confidence"] if r["confidence"] is not None else -1.0 for r in chosen],
            [r["machine_level"] for r in chosen],
            [r["machine_score"] for r in chosen],
        ):
            curves.append({"aspect": aspect, **point})
    return {"compared": len(compared), "skipped": skipped, "curve": curves, "sentences": compared}


def machine_chart(results: dict[str, Any]) -> dict[str, Any] | None:
    """Bar chart data (``charts.ts``): accuracy per confidence threshold, one series per aspect."""
    machine = results.get("machine")
    if not machine or not machine["compared"]:
        return None
    aspects = [a["name"] for a in results["aspects"]]
    series = []
    for aspect in aspects:
        points = [p for p in machine["curve"] if p["aspect"] == aspect]
        series.append({"name": aspect, "values": [p["accuracy"] for p in points]})
    overall = [p for p in machine["curve"] if p["aspect"] == ALL_ASPECTS]
    series.append({"name": "random", "values": [p["random"] for p in overall]})
    return {
        "labels": [f"≥ {p['threshold']:g}" for p in overall],
        "series": series,
        "title": "Accuracy of the model's sentence attention against the crowd label",
        "yLabel": "accuracy",
    }


def rating_table(results: dict[str, Any], table: str) -> tuple[list[str], list[list]]:
    """Columns and rows of one CSV table of :func:`rating_results`."""
    if table == "labels":
        columns = [
            "item",
            "document",
            "aspect",
            "sentence",
            "text",
            "responses",
            "majority",
            "majority_text",
            "confidence",
            "mean",
            *(f"n_{level}" for level in LEVELS),
            "enough_judges",
        ]
        rows = [[r[c] for c in columns[:10]] + r["counts"] + [r["enough_judges"]] for r in results["labels"]]
        return columns, rows
    if table == "agreement":
        columns = ["aspect", "a", "b", "n", "r", "r_low", "r_high", "kappa", "kappa_low", "kappa_high"]
        return columns, [[p[c] for c in columns] for p in results["agreement"]["pairs"]]
    if table == "machine":
        columns = ["aspect", "threshold", "n", "accuracy", "accuracy_within_1", "pearson_r", "random"]
        curve = (results.get("machine") or {}).get("curve", [])
        return columns, [[p[c] for c in columns] for p in curve]
    raise KeyError(table)


class SentenceRatingResults(ResultsPage):
    """The results page of a sentence-rating study."""

    template = "sentence_rating/results.html"
    tables = {name: from_results(rating_table, name) for name in TABLES}
    query_fields = (RunField(attention_runs), ChoiceField("kappa", KAPPA_KINDS, DEFAULT_KAPPA))

    def compute(self) -> dict[str, Any]:
        return rating_results(self.study, self.query["run"], kappa=self.query["kappa"])

    def context(self) -> dict[str, Any]:
        return super().context() | {
            "kappa": self.query["kappa"],
            "kappa_kinds": KAPPA_KINDS,
            "chart": machine_chart(self.results),
        }
