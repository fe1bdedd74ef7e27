"""Results of sentence_rating (paper 001) and token_marking (paper 003) studies, read from the database.

Only answers to non-gold items count, and not those of workers their gold trust excluded
(:mod:`annotate.quality`). A worker's weight is their trust (share of golds passed) when they have
answered a gold item, else 1.0. The numbers come from :mod:`annotate.ratings.scoring`.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from typing import Any

import numpy as np

from annotate.models import Document, Explanation, ModelRun, Prediction, Response, Study, Worker, WorkerTrust
from annotate.quality.exclusion import excluded_worker_ids
from annotate.ratings.scoring import (
    LEVELS,
    N_BOOT,
    THRESHOLDS,
    attention_levels,
    confidence_curve,
    crowd_labels,
    marking_alignment,
    mean_of,
    pairwise_agreement,
    rating_matrix,
    sentence_scores,
)
from annotate.tasks.sentence_rating import PAPER_JUDGES, RATING_LABELS, document_sentences
from explain_engine.metrics.agreement import fleiss_kappa_from_counts
from explain_engine.metrics.alignment import expert_oracle

RATING_TABLES = ("labels", "agreement", "machine")
MARKING_TABLES = ("oracle", "examples")
ALL_ASPECTS = "all"
#: Integrated gradients (dot product with the embedding, class score) first: paper 003's method.
PREFERRED_METHODS = ("grad_dot_int_s", "grad_dot_int_p", "grad_l2_int_s", "grad_l2_int_p")


def worker_trust(study: Study, worker_ids) -> dict[int, float]:
    """Each worker's trust in ``study``: the share of golds passed, 1.0 for one without golds yet."""
    known = dict(
        WorkerTrust.objects.filter(
            study=study, worker_id__in=list(worker_ids), golds_seen__gt=0, trust__isnull=False
        ).values_list("worker_id", "trust")
    )
    return {w: float(known.get(w, 1.0)) for w in worker_ids}


def _counted_responses(study: Study):
    return Response.objects.filter(study=study, item__is_gold=False).exclude(
        worker_id__in=excluded_worker_ids(study)
    )


def _worker_names(worker_ids) -> dict[int, str]:
    return {w.pk: w.anonymous_id for w in Worker.objects.filter(pk__in=list(worker_ids))}


# ------------------------------------------------------------------------------------ model runs


def attention_runs(study: Study):
    """Model runs on the study's dataset with attention stored for its documents, newest first."""
    if study.dataset_id is None:
        return ModelRun.objects.none()
    with_attention = Prediction.objects.filter(attention__isnull=False).values("model_run_id")
    return ModelRun.objects.filter(dataset_id=study.dataset_id, pk__in=with_attention).order_by(
        "-created", "-pk"
    )


def explanation_runs(study: Study):
    """Model runs on the study's dataset with stored explanations, newest first."""
    if study.dataset_id is None:
        return ModelRun.objects.none()
    explained = Explanation.objects.values("model_run_id")
    return ModelRun.objects.filter(dataset_id=study.dataset_id, pk__in=explained).order_by("-created", "-pk")


def explanation_methods(run: ModelRun) -> list[str]:
    """The run's stored methods, integrated gradients first (paper 003), then by name."""
    methods = sorted(set(Explanation.objects.filter(model_run=run).values_list("method", flat=True)))
    preferred = [m for m in PREFERRED_METHODS if m in methods]
    return preferred + [m for m in methods if m not in preferred]


# ----------------------------------------------------------------------------- sentence ratings


def rating_results(study: Study, model_run: ModelRun | None = None, n_boot: int = N_BOOT) -> dict[str, Any]:
    """Crowd labels, agreement and (with ``model_run``) the Figure 4 comparison of a sentence_rating study."""
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
    answers = list(_counted_responses(study).values_list("item_id", "worker_id", "answer__rating"))
    answers = [(i, w, r) for i, w, r in answers if r in LEVELS and i in items]
    worker_ids = sorted({w for _, w, _ in answers})
    trust = worker_trust(study, worker_ids)
    names = _worker_names(worker_ids)
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
            "confidence": None if k is None else _num(crowd.confidence[k]),
            "mean": None if k is None else _num(crowd.mean[k]),
            "counts": [0] * len(LEVELS) if k is None else [int(c) for c in crowd.counts[k]],
        }
        row["enough_judges"] = row["responses"] >= min_judges
        label_rows.append(row)
    result["labels"] = label_rows
    result["summary"] = [_aspect_summary(a, titles.get(a, a), label_rows) for a in [*aspects, ALL_ASPECTS]]
    result["agreement"] = _agreement(answers, items, names, aspects, n_boot)
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
    conf = np.array([r["confidence"] for r in done if r["confidence"] is not None], dtype=float)
    distribution = [sum(1 for r in done if r["majority"] == level) for level in LEVELS]
    return {
        "aspect": aspect,
        "title": "All aspects" if aspect == ALL_ASPECTS else title,
        "sentences": len(chosen),
        "labelled": len(done),
        "judgments": sum(r["responses"] for r in done),
        "enough_judges": sum(1 for r in done if r["enough_judges"]),
        "mean_confidence": _num(conf.mean()) if conf.size else None,
        "share_confidence_05": _num((conf >= 0.5).mean()) if conf.size else None,
        "share_confidence_08": _num((conf >= 0.8).mean()) if conf.size else None,
        "distribution": distribution,
    }


def _agreement(answers, items, names, aspects, n_boot) -> dict[str, Any]:
    """Table 1 of paper 001: pairwise r and weighted κ per aspect and over all aspects."""
    out: dict[str, Any] = {"pairs": [], "averages": []}
    for aspect in [*aspects, ALL_ASPECTS]:
        chosen = [a for a in answers if aspect == ALL_ASPECTS or items[a[0]][3] == aspect]
        if not chosen:
            out["averages"].append({"aspect": aspect, "pairs": 0, "r": None, "kappa": None})
            continue
        matrix, _, worker_ids = rating_matrix(
            [a[0] for a in chosen], [a[1] for a in chosen], [a[2] for a in chosen]
        )
        rows = pairwise_agreement(matrix, [names[int(w)] for w in worker_ids], n_boot=n_boot)
        for row in rows:
            out["pairs"].append({"aspect": aspect, **row})
        out["averages"].append(
            {"aspect": aspect, "pairs": len(rows), "r": mean_of(rows, "r"), "kappa": mean_of(rows, "kappa")}
        )
    return out


def _machine_comparison(run: ModelRun, rows: list[dict], aspects: list[str]) -> dict[str, Any]:
    """Paper 001, Figure 4: sentence attention (sum of word attention) against crowd labels."""
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
    series.append({"name": "random", "values": [1.0 / len(LEVELS)] * len(THRESHOLDS)})
    return {
        "labels": [f"≥ {t:g}" for t in THRESHOLDS],
        "series": series,
        "title": "Accuracy of the model's sentence attention against the crowd label",
        "yLabel": "accuracy",
    }


# ------------------------------------------------------------------------------- token marking


def marking_results(
    study: Study, model_run: ModelRun | None = None, method: str | None = None, n_boot: int = N_BOOT
) -> dict[str, Any]:
    """Expert oracles, agreement over words and (with a run and method) importance alignment ΔA."""
    items = {
        row[0]: row
        for row in study.items.filter(is_gold=False)
        .order_by("position", "id")
        .values_list(
            "id",
            "document_id",
            "document__external_id",
            "payload__words",
            "payload__explanation",
            "payload__label",
        )
    }
    maps: dict[int, list[list[int]]] = defaultdict(list)
    workers = set()
    for item_id, worker_id, word_map in _counted_responses(study).values_list(
        "item_id", "worker_id", "answer__map"
    ):
        if item_id in items and isinstance(word_map, list) and len(word_map) == len(items[item_id][3] or []):
            maps[item_id].append(word_map)
            workers.add(worker_id)
    examples = []
    for item_id, (_, doc_id, external, words, explanation, label) in items.items():
        marked = maps.get(item_id, [])
        oracle = expert_oracle(marked) if marked else None
        examples.append(
            {
                "item": item_id,
                "document": external,
                "document_id": doc_id,
                "label": label,
                "explanation": explanation,
                "words": words or [],
                "annotators": len(marked),
                "oracle": None if oracle is None else [round(float(v), 6) for v in oracle],
                "top_words": [] if oracle is None else _top_words(words or [], oracle),
            }
        )
    result: dict[str, Any] = {
        "answers": sum(len(m) for m in maps.values()),
        "workers": len(workers),
        "items": len(items),
        "marked_items": sum(1 for e in examples if e["annotators"]),
        "agreement": _word_agreement(maps.values(), n_boot),
        "examples": examples,
        "model_run": None,
        "method": method,
        "alignment": None,
    }
    if model_run is not None and method:
        result["model_run"] = {
            "id": model_run.pk,
            "name": model_run.name,
            "architecture": model_run.architecture,
        }
        result["alignment"] = _alignment(model_run, method, examples, maps, n_boot)
    return result


def _top_words(words: list[str], oracle: np.ndarray, k: int = 5) -> list[dict]:
    order = np.argsort(-oracle, kind="stable")[:k]
    return [{"word": words[i], "share": round(float(oracle[i]), 3)} for i in order if oracle[i] > 0]


def _word_agreement(all_maps, n_boot: int) -> dict[str, Any] | None:
    """Fleiss κ over words (categories marked / not marked), every word of a multiply-marked item a unit."""
    tables = []
    for marked in all_maps:
        if len(marked) >= 2:
            m = np.asarray(marked, dtype=np.int64)
            on = m.sum(axis=0)
            tables.append(np.stack([m.shape[0] - on, on], axis=1))
    if not tables:
        return None
    estimate = fleiss_kappa_from_counts(np.concatenate(tables), n_boot=n_boot)
    return {"fleiss_kappa": estimate.to_dict(), "items": len(tables)}


def _alignment(run: ModelRun, method: str, examples: list[dict], maps, n_boot: int) -> dict[str, Any]:
    """Paper 003's ΔA of the run's ``method`` attributions against the expert and hard oracles."""
    marked = [e for e in examples if e["annotators"]]
    rows = Explanation.objects.filter(
        model_run=run, method=method, document_id__in=[e["document_id"] for e in marked]
    ).values_list("document_id", "target", "scores")
    by_doc: dict[int, dict[str, list]] = defaultdict(dict)
    for doc_id, target, scores in rows:
        by_doc[doc_id][target] = scores
    usable = []
    for example in marked:
        targets = by_doc.get(example["document_id"], {})
        # Paper 003 attributes with respect to the gold label; another target only when that is missing.
        scores = targets.get(example["label"]) or next(iter(targets.values()), None)
        if isinstance(scores, list) and len(scores) == len(example["words"]):
            usable.append((example, np.nan_to_num(np.asarray(scores, dtype=float))))
    out: dict[str, Any] = {"examples": len(usable), "skipped": len(marked) - len(usable), "per_example": []}
    if len(usable) < 2:
        out["error"] = "needs at least two marked examples with attributions of this method"
        return out
    scored = marking_alignment(
        [e["words"] for e, _ in usable],
        [e["explanation"] for e, _ in usable],
        [maps[e["item"]] for e, _ in usable],
        [a for _, a in usable],
        n_boot=n_boot,
    )
    out.update(expert=scored["expert"], hard=scored["hard"])
    for (example, attr), values, partner in zip(usable, scored["examples"], scored["pairing"], strict=True):
        out["per_example"].append(
            {
                "item": example["item"],
                "document": example["document"],
                "random_partner": usable[partner][0]["document"],
                **values,
            }
        )
        example["attribution"] = [round(float(v), 6) for v in attr]
    return out


def alignment_chart(results: dict[str, Any]) -> dict[str, Any] | None:
    """Bar chart data: ΔA with its bootstrap interval for the expert and the hard oracle."""
    alignment = results.get("alignment")
    if not alignment or "expert" not in alignment:
        return None
    names = ("expert", "hard")
    return {
        "labels": ["expert oracle (markings)", "hard oracle (explanation words)"],
        "series": [
            {
                "name": "ΔA",
                "values": [alignment[n]["delta_a"]["value"] for n in names],
                "lower": [alignment[n]["delta_a"]["ci_low"] for n in names],
                "upper": [alignment[n]["delta_a"]["ci_high"] for n in names],
            }
        ],
        "title": f"Importance alignment ΔA of {results['method']}",
        "yLabel": "ΔA",
    }


# ----------------------------------------------------------------------------------------- CSV


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


def marking_table(results: dict[str, Any], table: str) -> tuple[list[str], list[list]]:
    """Columns and rows of one CSV table of :func:`marking_results`."""
    if table == "oracle":
        columns = ["item", "document", "word_index", "word", "annotators", "share", "attribution"]
        rows = []
        for e in results["examples"]:
            if e["oracle"] is None:
                continue
            attribution = e.get("attribution")
            for i, (word, share) in enumerate(zip(e["words"], e["oracle"], strict=True)):
                rows.append(
                    [
                        e["item"],
                        e["document"],
                        i,
                        word,
                        e["annotators"],
                        share,
                        None if attribution is None else attribution[i],
                    ]
                )
        return columns, rows
    if table == "examples":
        columns = ["item", "document", "random_partner", "c_expert", "c_hard", "c_random"]
        per_example = (results.get("alignment") or {}).get("per_example", [])
        return columns, [[p[c] for c in columns] for p in per_example]
    raise KeyError(table)


def csv_text(columns: list[str], rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return out.getvalue()


def _cell(value) -> Any:
    """A CSV cell: empty for None/NaN; text that a spreadsheet would run as a formula is quoted."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _num(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
