"""The study dashboard: label distribution, agreement with bootstrap intervals (and notes where a value
misleads), the human maps' agreement (Sen et al. 2020: words selected k, human–human behavioral
similarity) and a per-annotator table.

The figures are the engine's (:mod:`explain_engine.api`); this module gathers the labels and maps
of the counted answers (see :mod:`annotate.dashboards.gather`) and shapes the result for the page.
Agreement between annotators is computed over the answer categories of the study's task kind.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from statistics import median
from typing import Any

from annotate.dashboards import gather, notes
from annotate.dashboards.charts import chart, estimate_series, figures, table
from annotate.dashboards.presentation import FigureBuilder, Omitted, Shown, present
from annotate.machine.progress import Progress, no_progress
from annotate.models import Study
from annotate.tasks import get_kind
from explain_engine.api import (
    N_BOOT,
    HumanMaps,
    average_k,
    category_counts,
    encode_ratings,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    human_human_similarity,
    json_safe,
    krippendorff_alpha,
    observed_agreement,
    wilson_interval,
)
from explain_engine.api import majority_agreement as engine_majority_agreement

NO_LABEL = "(no label)"


def label_ratings(data: gather.StudyData, counted: list[gather.Answer]) -> tuple[list[int], list[list]]:
    """Counted items (in item order) and the labels their answers gave (None: no label / unknown)."""
    known = set(data.categories)
    by_item: dict[int, list] = defaultdict(list)
    for a in counted:
        by_item[a.item].append(a.label if a.label in known else None)
    items = [i["item"] for i in data.items if i["item"] in by_item]
    return items, [by_item[i] for i in items]


def majority_agreement(
    data: gather.StudyData, counted_items: list[int], counts: Sequence[Sequence[int]]
) -> dict[int, tuple[int, int]]:
    """Per worker: ``(answers equal to the majority of the other answers, answers with such a majority)``.

    The majority is leave-one-out (the answer under test is not part of it) and must be unique; an
    item counts for a worker only when the others' answers have one. Answers that do not count (their
    worker is excluded, or pending their minimum golds) are compared with the counted majority too, so
    the table shows how far they were from it.
    """
    index = {item: i for i, item in enumerate(counted_items)}
    cat_index = {c: i for i, c in enumerate(data.categories)}
    left_out = data.standing.left_out
    rows = [
        (index[a.item], cat_index[a.label], a.worker, a.worker not in left_out)
        for a in data.scored()
        if a.item in index and a.label in cat_index
    ]
    if not rows:
        return {}
    items, codes, workers, own = zip(*rows, strict=True)
    return engine_majority_agreement(items, codes, workers, own, counts)


def annotator_rows(data: gather.StudyData, agreement: dict[int, tuple[int, int]]) -> list[dict]:
    """One row per worker who answered: answers, median time, agreement with the majority (Wilson
    interval), gold accuracy (Wilson interval) when they answered golds, and trust status."""
    answers: dict[int, int] = Counter(a.worker for a in data.answers)
    times: dict[int, list[int]] = defaultdict(list)
    golds: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for a in data.answers:
        if a.time_ms is not None:
            times[a.worker].append(a.time_ms)
        if a.gold_passed is not None:
            golds[a.worker][0] += int(a.gold_passed)
            golds[a.worker][1] += 1
    order = sorted(answers, key=lambda w: (-answers[w], w))
    hit = [agreement.get(w, (0, 0))[0] for w in order]
    n = [agreement.get(w, (0, 0))[1] for w in order]
    g_pass = [golds[w][0] if w in golds else 0 for w in order]
    g_seen = [golds[w][1] if w in golds else 0 for w in order]
    intervals: Any = (
        (wilson_interval(hit, n), wilson_interval(g_pass, g_seen)) if order else (([], []), ([], []))
    )
    (a_low, a_high), (g_low, g_high) = intervals
    rows = []
    for i, w in enumerate(order):
        worker = data.workers.get(w, {"provider": "?", "external_id": str(w), "name": "?"})
        rows.append(
            {
                "worker": worker["name"],
                "provider": worker["provider"],
                "answers": answers[w],
                "median_time_ms": float(median(times[w])) if times.get(w) else None,
                "majority_agreement": {
                    "value": float(hit[i] / n[i]) if n[i] else None,
                    "n": int(n[i]),
                    "ci_low": float(a_low[i]) if n[i] else None,
                    "ci_high": float(a_high[i]) if n[i] else None,
                },
                "gold": None
                if not g_seen[i]
                else {
                    "passed": int(g_pass[i]),
                    "seen": int(g_seen[i]),
                    "accuracy": float(g_pass[i] / g_seen[i]),
                    "ci_low": float(g_low[i]),
                    "ci_high": float(g_high[i]),
                },
                "status": data.status(w),
            }
        )
    return rows


def maps_section(records: list[dict], n_boot: int, seed: int) -> dict[str, Any]:
    """The human-map figures of Sen et al. 2020 over the records: k per reference (HAM1…, CAM, SAM),
    human–human behavioral similarity of every ordered pair of annotator slots, and Fleiss κ of word
    selections."""
    humans = HumanMaps.from_records(records)
    refs = humans.references(min_maps=2)
    k = {
        name: average_k(maps, n_boot, seed).to_dict() | {"texts": int(len(idx))}
        for name, (idx, maps) in refs.items()
    }
    pairs = human_human_similarity(humans, n_boot, seed=seed)
    # Word selections as ratings: every word of a text with two or more maps is a unit, its maps the raters.
    n_maps = humans.maps_per_text
    word_table = humans.word_table()
    word_kappa = fleiss_kappa_from_counts(word_table, n_boot, seed=seed).to_dict()
    share_selected = float(word_table[:, 1].sum() / word_table.sum()) if len(word_table) else 0.0
    return {
        "texts": len(humans),
        "maps": int(n_maps.sum()),
        "maps_per_text": {str(int(m)): int((n_maps == m).sum()) for m in sorted(set(n_maps.tolist()))},
        "k": k,
        "human_human": pairs,
        "word_kappa": word_kappa,
        "word_shares": [1.0 - share_selected, share_selected],
        "word_observed_agreement": observed_agreement(word_table),
    }


def study_dashboard(
    study: Study, progress: Progress = no_progress, n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any]:
    """Every figure of the study dashboard, as JSON-ready data (see the module docstring)."""
    progress(0.05, "reading the answers")
    data = gather.study_data(study)
    counted = data.counted()
    counted_items, ratings = label_ratings(data, counted)
    progress(0.2, "label agreement")
    counts, agreement, agreement_notes = _label_agreement(data.categories, ratings, n_boot, seed)
    left_out = data.left_out()
    progress(0.4, "human maps")
    records, bad_maps = gather.map_records(data)
    maps = maps_section(records, n_boot, seed) if records else None
    text_notes = notes.left_out_notes(left_out) + agreement_notes + _maps_notes(maps, bad_maps)
    progress(0.8, "annotators")
    annotators = annotator_rows(data, majority_agreement(data, counted_items, counts))
    result = {
        "kind": "study",
        "study": {"uid": str(study.uid), "name": study.name, "kind": study.kind, "status": study.status},
        "answers": {
            "total": len(data.answers),
            "counted": len(counted),
            "items": len(counted_items),
            "gold_answers": sum(1 for a in data.answers if a.is_gold),
            **left_out,
        },
        "labels_items": get_kind(study.kind).labels_items,
        "label_distribution": _label_distribution(data, counted, counted_items),
        "agreement": agreement,
        "maps": maps,
        "annotators": annotators,
        "notes": text_notes,
    }
    result["charts"], result["tables"] = figures(*_presentation(result))
    progress(1.0, "done")
    return json_safe(result)


def _label_agreement(
    categories: list, ratings: list[list], n_boot: int, seed: int
) -> tuple[Any, dict[str, Any], list[str]]:
    """Per item category counts, the labels' agreement (Fleiss κ, Krippendorff α, observed agreement)
    and the notes on where κ or α mislead."""
    counts = category_counts(encode_ratings(ratings, categories), len(categories))
    fleiss = fleiss_kappa(ratings, categories, n_boot, seed=seed).to_dict()
    alpha = krippendorff_alpha(ratings, "nominal", categories, n_boot, seed=seed).to_dict()
    total = counts.sum()
    shares = (counts.sum(axis=0) / total).tolist() if total else [0.0] * len(categories)
    observed = observed_agreement(counts)
    cat_names = [str(c) for c in categories]
    text_notes = notes.chance_corrected_notes("Fleiss κ", fleiss, shares, cat_names, observed)
    text_notes += [
        n
        for n in notes.chance_corrected_notes("Krippendorff α", alpha, shares, cat_names, observed)
        if "may mislead" in n or "undefined" in n
    ]
    agreement = {
        "categories": categories,
        "fleiss_kappa": fleiss,
        "krippendorff_alpha": alpha,
        "observed_agreement": observed,
    }
    return counts, agreement, text_notes


def _maps_notes(maps: dict[str, Any] | None, bad_maps: int) -> list[str]:
    """Notes on the human maps: maps left out, where κ of word selections misleads, the human–human
    similarities' skipped texts and few texts."""
    text_notes = []
    if bad_maps:
        text_notes.append(f"{bad_maps} maps whose length differs from their text's words are left out.")
    if maps is None:
        return text_notes
    text_notes += notes.chance_corrected_notes(
        "Fleiss κ of word selections",
        maps["word_kappa"],
        maps["word_shares"],
        ["not selected", "selected"],
        maps["word_observed_agreement"],
    )
    text_notes.append(
        "Fleiss κ of word selections treats every word as an item; its interval resamples words, not "
        "texts, and is narrower than one over texts would be."
    )
    for row in maps["human_human"]:
        text_notes += notes.auc_notes(
            f"Human–human similarity (truth {row['truth']}, score {row['score']})", row, few=False
        )
    text_notes += notes.few_texts_note(
        [row["n"] for row in maps["human_human"]], "The human–human similarities"
    )
    return text_notes


def _label_distribution(
    data: gather.StudyData, counted: list[gather.Answer], counted_items: list[int]
) -> dict[str, Any]:
    """How many counted answers gave each category (and no label), and the counted items' gold labels."""
    categories = data.categories
    label_counts = Counter(a.label if a.label in set(categories) else None for a in counted)
    counted_set = set(counted_items)
    doc_labels = Counter(i["label"] for i in data.items if i["item"] in counted_set and i["label"])
    return {
        "categories": categories,
        "counts": [label_counts.get(c, 0) for c in categories],
        "no_label": label_counts.get(None, 0),
        "document_labels": dict(doc_labels),
    }


NO_MAPS = "No counted answer has a word map of its text's length."


NO_LABELS = "The answers of this kind mark words; they give no label."


def _labels_figure(r: dict) -> Shown | Omitted:
    """The label distribution of the answers, beside the documents' gold labels (none for a kind whose
    answers give no label: every answer would read as "no label" beside labels nobody could choose)."""
    if not r.get("labels_items", True):
        return Omitted("labels", NO_LABELS)
    dist = r["label_distribution"]
    labels = [str(c) for c in dist["categories"]] + ([NO_LABEL] if dist["no_label"] else [])
    answer_counts = dist["counts"] + ([dist["no_label"]] if dist["no_label"] else [])
    n_answers = sum(answer_counts)
    extra_doc = [str(k) for k in dist["document_labels"] if str(k) not in labels]
    labels += extra_doc
    answer_counts += [0] * len(extra_doc)
    n_docs = sum(dist["document_labels"].values())
    doc_counts = [dist["document_labels"].get(label, 0) for label in labels]
    series = [{"name": "answers", "values": [c / n_answers if n_answers else 0.0 for c in answer_counts]}]
    if n_docs:
        series.append({"name": "documents (gold label)", "values": [c / n_docs for c in doc_counts]})
    return Shown(
        [chart("labels", "Label distribution", labels, series, "share")],
        [
            table(
                "labels-table",
                "Label distribution",
                ["label", "answers", "share of answers", "documents (gold label)"],
                [
                    [lab, a, a / n_answers if n_answers else None, d]
                    for lab, a, d in zip(labels, answer_counts, doc_counts, strict=True)
                ],
            )
        ],
    )


def _agreement_figure(r: dict) -> Shown | Omitted:
    """Fleiss κ and Krippendorff α of the labels (and κ of the word selections when there are maps)."""
    agr = r["agreement"]
    labelled = r.get("labels_items", True)
    estimates = (
        [("Fleiss κ (labels)", agr["fleiss_kappa"]), ("Krippendorff α (labels)", agr["krippendorff_alpha"])]
        if labelled
        else []
    )
    if r["maps"] is not None:
        estimates.append(("Fleiss κ (word selections)", r["maps"]["word_kappa"]))
    if not estimates:
        return Omitted("agreement", NO_LABELS + " " + NO_MAPS)
    return Shown(
        [
            chart(
                "agreement",
                "Agreement between annotators",
                [name for name, _ in estimates],
                [estimate_series("value", [e for _, e in estimates])],
                "κ / α",
            )
        ],
        [
            table(
                "agreement-table",
                "Agreement between annotators (95 % bootstrap intervals over items)",
                ["figure", "value", "ci_low", "ci_high", "n"],
                [[name, e["value"], e["ci_low"], e["ci_high"], e["n"]] for name, e in estimates]
                + (
                    [["observed agreement (labels)", agr["observed_agreement"], None, None, None]]
                    if labelled
                    else []
                ),
            )
        ],
    )


def _human_human_figure(r: dict) -> Shown | Omitted:
    """Human–human behavioral similarity of every ordered pair of annotator slots."""
    if r["maps"] is None:
        return Omitted("human_human", NO_MAPS)
    pairs = r["maps"]["human_human"]
    pair_labels = [f"truth {p['truth']} · score {p['score']}" for p in pairs]
    return Shown(
        [
            chart(
                "human_human",
                "Human–human behavioral similarity (mean ROC AUC)",
                pair_labels,
                [estimate_series("mean ROC AUC", pairs)],
                "ROC AUC",
            )
        ],
        [
            table(
                "human_human-table",
                "Human–human behavioral similarity (Sen et al. 2020 Table 2: one map is the truth, the other the score)",
                ["truth", "score", "value", "ci_low", "ci_high", "n", "skipped"],
                [
                    [p["truth"], p["score"], p["value"], p["ci_low"], p["ci_high"], p["n"], p["skipped"]]
                    for p in pairs
                ],
            )
        ],
    )


def _words_selected_figure(r: dict) -> Shown | Omitted:
    """Words selected per map (k) for each reference: HAM1…, CAM, SAM."""
    if r["maps"] is None:
        return Omitted("words_selected", NO_MAPS)
    k = r["maps"]["k"]
    return Shown(
        [
            chart(
                "words_selected",
                "Words selected per map (k)",
                list(k),
                [estimate_series("k", list(k.values()))],
                "words",
            )
        ],
        [
            table(
                "words_selected-table",
                "Words selected per map (k); CAM = AND, SAM = OR of a text's maps",
                ["reference", "k", "ci_low", "ci_high", "texts"],
                [[name, e["value"], e["ci_low"], e["ci_high"], e["texts"]] for name, e in k.items()],
            )
        ],
    )


ANNOTATOR_COLUMNS = (
    "annotator",
    "provider",
    "answers",
    "median time (s)",
    "agreement with majority",
    "ci_low",
    "ci_high",
    "items with a majority",
    "gold accuracy",
    "gold ci_low",
    "gold ci_high",
    "golds",
    "status",
)


def _annotators_figure(r: dict) -> Shown:
    """The per-annotator table."""
    return Shown(
        tables=[
            table(
                "annotators-table",
                "Annotators",
                ANNOTATOR_COLUMNS,
                [_annotator_row(a) for a in r["annotators"]],
            )
        ]
    )


#: The study dashboard's figures, in page order.
FIGURES: tuple[FigureBuilder[dict], ...] = (
    _labels_figure,
    _agreement_figure,
    _human_human_figure,
    _words_selected_figure,
    _annotators_figure,
)


def _presentation(r: dict) -> tuple[list[dict], list[dict]]:
    """Charts and tables of a computed study dashboard (:data:`FIGURES`); the figures its data does not
    allow go to ``r["omitted_figures"]`` with the reason."""
    shown = present(FIGURES, r)
    r["omitted_figures"] = shown.omitted
    return shown.charts, shown.tables


def _annotator_row(a: dict) -> list[Any]:
    m, g = a["majority_agreement"], a["gold"]
    seconds = None if a["median_time_ms"] is None else a["median_time_ms"] / 1000.0
    return [
        a["worker"],
        a["provider"],
        a["answers"],
        seconds,
        m["value"],
        m["ci_low"],
        m["ci_high"],
        m["n"],
        None if g is None else g["accuracy"],
        None if g is None else g["ci_low"],
        None if g is None else g["ci_high"],
        None if g is None else g["seen"],
        a["status"],
    ]
