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

from annotate.kinds.sentence_rating.config import PAPER_JUDGES, RATING_LABELS
from annotate.models import Document, ModelRun, Prediction, Study
from annotate.quality.exclusion import answer_weights, counted_responses
from annotate.tasks.page_words import document_sentences
from annotate.tasks.results import (
    N_BOOT,
    ChoiceField,
    ResultsPage,
    RunField,
    from_results,
    worker_names,
)
from explain_engine.api import (
    DEFAULT_KAPPA,
    KAPPA_KINDS,
    rating_report,
)
from explain_engine.api import RATING_ALL_ASPECTS as ALL_ASPECTS
from explain_engine.api import RATING_LEVELS as LEVELS

TABLES = ("labels", "agreement", "machine")


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
    items = _rated_items(study)
    answers = list(counted_responses(study).values_list("item_id", "worker_id", "answer__rating"))
    answers = [(i, w, r) for i, w, r in answers if r in LEVELS and i in items]
    worker_ids = sorted({w for _, w, _ in answers})
    trust = answer_weights(study, worker_ids)
    names = worker_names(study, worker_ids)
    result: dict[str, Any] = {
        "answers": len(answers),
        "workers": len(worker_ids),
        "sentences": len(items),
        "min_judges": min_judges,
        "aspects": [{"name": a, "title": titles[a]} for a in aspects],
        "level_names": list(RATING_LABELS),
    }
    weights = [trust[a[1]] for a in answers]
    sentences = [
        {"item": item_id, "aspect": row[3], "document": row[1], "sentence": row[4]}
        for item_id, row in items.items()
    ]
    attention = None if model_run is None else _sentence_attention(model_run, {r[1] for r in items.values()})
    report = rating_report(
        sentences=sentences,
        items=[a[0] for a in answers],
        workers=[a[1] for a in answers],
        ratings=[a[2] for a in answers],
        weights=weights,
        worker_names=names,
        aspects=aspects,
        min_judges=min_judges,
        n_boot=n_boot,
        kappa=kappa,
        attention=attention,
    )
    label_rows = [
        _label_row(item, label) for item, label in zip(items.items(), report["labels"], strict=True)
    ]
    result["labels"] = label_rows
    result["summary"] = [
        {"aspect": summary["aspect"], "title": titles.get(summary["aspect"], summary["aspect"]), **summary}
        for summary in report["summary"]
    ]
    result["summary"][-1]["title"] = "All aspects"
    result["kappa"] = kappa
    result["agreement"] = report["agreement"]
    result["model_run"] = None
    if model_run is not None:
        result["model_run"] = {
            "id": model_run.pk,
            "name": model_run.name,
            "architecture": model_run.architecture,
        }
        result["machine"] = _machine_section(report["machine"], label_rows)
    return result


def _rated_items(study: Study) -> dict[int, tuple]:
    """The study's non-gold items by id: ``id, document, external id, aspect, sentence index, span, words``."""
    rows = (
        study.items.filter(is_gold=False)
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
    )
    return {row[0]: row for row in rows}


def _label_row(item: tuple[int, tuple], label: dict[str, Any]) -> dict[str, Any]:
    """One rated sentence's row of the labels table, from the engine's crowd label of it."""
    item_id, (_, doc_id, external, aspect, index, span, words) = item
    first, end = span
    majority = label["majority"]
    return {
        "item": item_id,
        "document": external,
        "document_id": doc_id,
        "aspect": aspect,
        "sentence": index,
        "text": " ".join((words or [])[first:end]),
        "responses": label["responses"],
        "majority": majority,
        "majority_text": None if majority is None else RATING_LABELS[majority - 1],
        "confidence": label["confidence"],
        "mean": label["mean"],
        "counts": label["counts"],
        "enough_judges": label["enough_judges"],
    }


def _machine_section(machine: dict[str, Any], label_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The Figure 4 comparison: each compared sentence's row with the model's score and level."""
    by_item = {r["item"]: r for r in label_rows}
    compared = [
        {**by_item[c["item"]], "machine_score": c["machine_score"], "machine_level": c["machine_level"]}
        for c in machine["compared"]
    ]
    return {
        "compared": len(compared),
        "skipped": machine["skipped"],
        "curve": machine["curve"],
        "sentences": compared,
    }


def _sentence_attention(run: ModelRun, doc_ids: set[int]) -> dict[int, tuple[list, list]]:
    """``{document: (word attention, sentence spans)}`` of the run's stored attention that fits its document."""
    attention = dict(
        Prediction.objects.filter(
            model_run=run, document_id__in=doc_ids, attention__isnull=False
        ).values_list("document_id", "attention")
    )
    out = {}
    documents = Document.objects.filter(pk__in=list(attention)).only("id", "text", "words", "sentences")
    for doc in documents:
        weights = attention[doc.pk]
        if isinstance(weights, list) and len(weights) == len(doc.words):
            out[doc.pk] = (weights, document_sentences(doc))
    return out


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
