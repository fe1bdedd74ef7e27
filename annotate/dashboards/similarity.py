"""Human vs machine (Sen et al. 2020 §4): for a study and one or more (model run, method) selections, the
behavioral similarity (Table 2), lexical similarity with its random baseline (Table 3), the
cross-sentiment selection rates (Table 4, with Hu & Liu's lexicon) and the distribution over Penn
tags (Table 5), plausibility against faithfulness (:mod:`~annotate.dashboards.faithfulness`), ERASER's
plausibility and the alignment with the share of annotators (:mod:`~annotate.dashboards.human_share`) — and
the drill-down to one text with its human maps, CAM, SAM and the machine maps.

The engine computes every figure (:func:`explain_engine.api.similarity_report` per selection,
``human_human_similarity``, ``roc_auc_per_text``); this module gathers the maps and shapes the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from annotate.corpus.lexicon import lexicon_dir
from annotate.dashboards import faithfulness, gather, human_share, notes
from annotate.dashboards.cache import ensure_pos_tags
from annotate.dashboards.charts import chart, estimate_series, figures, table
from annotate.dashboards.presentation import FigureBuilder, Omitted, Shown, present
from annotate.machine.heatmap import signed_levels
from annotate.machine.progress import Progress, no_progress
from annotate.models import Item, Response, Study
from annotate.quality.exclusion import standing
from annotate.tasks.page_words import word_breaks
from explain_engine import api as engine
from explain_engine.api import (
    N_BOOT,
    HumanMaps,
    Ragged,
    consensus_maps,
    human_human_similarity,
    json_safe,
    roc_auc_per_text,
    similarity_report,
)

MAX_SELECTIONS = 6
LEXICON_NOTE = (
    "Cross-sentiment selection rates need Hu & Liu's opinion lexicon: upload positive-words.txt and "
    "negative-words.txt on the lexicon settings page."
)


def selection_label(run_name: str, method: str) -> str:
    """A selection by its method code (``bilstm · grad_l2_1s``): the API's stable ``label``."""
    return f"{run_name} · {method}"


def selection_name(run_name: str, method: str) -> str:
    """A selection as people read it (``bilstm · Simple gradient of s, L2 norm``): chart series, tables, notes."""
    return f"{run_name} · {engine.describe_method(method).title}"


def _texts_table_links(records: list[dict], text_url: Callable[[int], str] | None) -> list[Any]:
    if text_url is None:
        return [r["external_id"] for r in records]
    return [{"text": r["external_id"], "href": text_url(r["item"])} for r in records]


def similarity_dashboard(
    study: Study,
    params: dict,
    progress: Progress = no_progress,
    n_boot: int = N_BOOT,
    seed: int = 0,
    text_url: Callable[[int], str] | None = None,
) -> dict[str, Any]:
    """The human-vs-machine figures of Sen et al. 2020 for ``params["selections"]``
    (``[[run id, method], ...]``) against the study's counted maps; ``params["target"]`` picks an explanation's class
    (``predicted`` or ``gold``, see :func:`annotate.dashboards.gather.machine_maps`)."""
    selections = [gather.Selection(int(run), str(method)) for run, method in params["selections"]]
    target = params.get("target", gather.TARGET_PREDICTED)
    progress(0.02, "reading the maps")
    data = gather.study_data(study, with_text=True)
    records, bad_maps = gather.map_records(data)
    ensure_pos_tags(study, records, progress=lambda f, m: progress(0.05 + 0.45 * f, m))
    runs = gather.runs_by_id(s.run for s in selections)
    lexicon = lexicon_dir(study.owner_id)
    documents = {r["document"]: len(r["words"]) for r in records}
    doc_labels = {r["document"]: r["document_label"] for r in records}
    sels, reports, per_text = [], [], []
    for i, sel in enumerate(selections):
        run = runs.get(sel.run)
        maps, used, unusable = gather.machine_maps(sel, documents, doc_labels, target)
        predictions = {r["id"]: maps[r["document"]] for r in records if r["document"] in maps}
        report = similarity_report(records, predictions, lexicon, n_boot=n_boot, seed=seed, progress=False)
        reports.append(report)
        run_name = run.name if run else f"run {sel.run}"
        label = selection_label(run_name, sel.method)
        sels.append(
            {
                "key": sel.key,
                "run": sel.run,
                "run_name": run.name if run else "",
                "architecture": run.architecture if run else "",
                "method": sel.method,
                "label": label,
                "name": selection_name(run_name, sel.method),
                "texts": report["texts"],
                "texts_without_map": report["texts_without_prediction"],
                "unusable_maps": unusable,
                "targets": sorted(set(used.values())),
                "faithfulness": faithfulness.faithfulness_figures(
                    faithfulness.stored_faithfulness(sel.run, sel.method, used), n_boot, seed
                ),
                "eraser": human_share.eraser_figures(records, predictions, n_boot, seed),
                "alignment": human_share.alignment_figures(records, predictions, n_boot, seed),
            }
        )
        per_text.append(_auc_against_sam(records, predictions))
        progress(0.5 + 0.45 * (i + 1) / len(selections), f"compared {sels[-1]['name']}")
    humans = HumanMaps.from_records(records)
    left_out = data.left_out()
    result = {
        "kind": "similarity",
        "study": {"uid": str(study.uid), "name": study.name, "kind": study.kind, "status": study.status},
        "target": target,
        "texts": len(records),
        "answers": {"counted": len(data.counted()), **left_out},
        "selections": sels,
        "reports": reports,
        "human_human": human_human_similarity(humans, n_boot, seed=seed) if records else [],
        "cssr_available": lexicon is not None,
        "notes": notes.left_out_notes(left_out, "the human maps")
        + _notes(sels, reports, bad_maps, lexicon is not None, len(records))
        + faithfulness.faithfulness_notes(sels)
        + human_share.alignment_notes(sels),
    }
    result["charts"], result["tables"] = figures(*_presentation(result, records, per_text, text_url))
    progress(1.0, "done")
    return json_safe(result)


def _auc_against_sam(records: list[dict], predictions: dict[str, list[float]]) -> dict[str, float]:
    """Per text with two or more maps, the ROC AUC of the machine map against its SAM (one engine call)."""
    kept = [r for r in records if r["id"] in predictions]
    if not kept:
        return {}
    humans = HumanMaps.from_records(kept)
    texts, sam = humans.super_map(min_maps=2)
    if len(texts) == 0:
        return {}
    scores = Ragged.from_lists([predictions[humans.ids[t]] for t in texts])
    aucs = roc_auc_per_text(sam, scores)
    return {humans.ids[t]: float(a) for t, a in zip(texts, aucs, strict=True)}


def _notes(sels: list[dict], reports: list[dict], bad_maps: int, cssr: bool, texts: int) -> list[str]:
    out: list[str] = []
    counts: list[int] = []
    lexical: list[tuple[str, dict, int]] = []
    if texts == 0:
        out.append("The study has no counted human map yet.")
    if bad_maps:
        out.append(f"{bad_maps} human maps whose length differs from their text's words are left out.")
    for sel, rep in zip(sels, reports, strict=True):
        label = sel["name"]
        if sel["texts_without_map"]:
            out.append(
                f"{label}: {sel['texts_without_map']} of {texts} texts have no machine map and are left out."
            )
        if sel["unusable_maps"]:
            out.append(
                f"{label}: {sel['unusable_maps']} stored maps are left out (wrong length, a non-finite score, "
                "or no map for the chosen class)."
            )
        for row in rep["references"]:
            ref = row["reference"]
            if not row["texts"]:  # CAM and SAM need two maps of a text (an imported set may have one)
                out.append(
                    f"{ref} needs two or more maps of a text and no text has them: its figures are empty."
                )
                continue
            out += notes.auc_notes(f"Behavioral similarity against {ref}", row["behavioral"], few=False)
            counts.append(row["behavioral"].get("n", 0))
            k = row["k"]["value"] or 0.0
            lexical.append((f"{label} against {ref}", row["lexical"], int(round(k * row["texts"]))))
            if cssr:
                for which, est in row["cssr_human"].items():
                    out += notes.ratio_notes(f"{which.upper()} of the humans against {ref}", est)
                for which, est in row["cssr_machine"].items():
                    out += notes.ratio_notes(f"{which.upper()} of {label} against {ref}", est)
    out += notes.few_texts_note(counts)
    out += notes.lexical_notes(lexical)
    if not cssr:
        out.append(LEXICON_NOTE)
    out.append(
        "A continuous machine map selects its top-k words per text, k = the number of words the human reference "
        "selected (Sen et al. 2020 §4.2); the POS distribution compares the words of the CAM (AND of a text's maps) "
        "with the machine's top-k words for them."
    )
    return list(dict.fromkeys(out))


def _references(reports: Sequence[dict]) -> list[str]:
    names: list[str] = []
    for rep in reports:
        for row in rep["references"]:
            if row["reference"] not in names:
                names.append(row["reference"])
    return names


def _by_reference(report: dict) -> dict[str, dict]:
    return {row["reference"]: row for row in report["references"]}


@dataclass(frozen=True)
class _Computed:
    """A computed similarity dashboard as its figure builders read it: the result, the human records,
    each selection's AUC against SAM per text, the link to a text's page, and the references in order
    with each selection's report rows by reference."""

    r: dict
    records: list[dict]
    per_text: list[dict]
    text_url: Callable[[int], str] | None
    refs: list[str]
    rows: list[dict[str, dict]]

    @property
    def sels(self) -> list[dict]:
        return self.r["selections"]

    def column(self, row_map: dict, *path: str) -> list[Any]:
        """The value at ``path`` of ``row_map``'s row for each reference (None where it has none)."""
        values = []
        for ref in self.refs:
            value = row_map.get(ref)
            for key in path:
                value = None if value is None else value.get(key)
            values.append(value)
        return values

    def cells(self) -> list[tuple[dict, str, dict]]:
        """(selection, reference, its report row) for each selection and each reference it has."""
        return [
            (s, ref, m[ref])
            for s, m in zip(self.sels, self.rows, strict=True)
            for ref in self.refs
            if ref in m
        ]


def _behavioral_figure(c: _Computed) -> Shown:
    """Behavioral similarity (mean ROC AUC) to each human reference (Sen et al. 2020 Table 2)."""
    series = [
        estimate_series(s["name"], c.column(m, "behavioral")) for s, m in zip(c.sels, c.rows, strict=True)
    ]
    return Shown(
        [
            chart(
                "behavioral",
                "Behavioral similarity to each human reference (mean ROC AUC; 0.5 = none, 1 = perfect)",
                c.refs,
                series,
                "ROC AUC",
            )
        ],
        [
            table(
                "behavioral-table",
                "Behavioral similarity (Sen et al. 2020 Table 2)",
                ["selection", "reference", "texts", "k", "value", "ci_low", "ci_high", "n", "skipped"],
                [
                    [
                        s["name"],
                        ref,
                        row["texts"],
                        row["k"]["value"],
                        *_est(row["behavioral"]),
                        row["behavioral"].get("skipped"),
                    ]
                    for s, ref, row in c.cells()
                ],
            )
        ],
    )


LEXICAL_COLUMNS = (
    "selection",
    "reference",
    "LS",
    "ci_low",
    "ci_high",
    "n",
    "random LS",
    "random sd",
    "adjusted LS",
)


def _lexical_figure(c: _Computed) -> Shown:
    """Lexical similarity over Penn tags with its random top-k baseline (Sen et al. 2020 Table 3)."""
    series = []
    for s, m in zip(c.sels, c.rows, strict=True):
        series.append(estimate_series(s["name"], c.column(m, "lexical")))
        series.append(
            {"name": f"{s['name']} · random top-k", "values": c.column(m, "lexical_random", "value")}
        )
    return Shown(
        [chart("lexical", "Lexical similarity over Penn tags (Pearson r)", c.refs, series, "LS")],
        [
            table(
                "lexical-table",
                "Lexical similarity (Sen et al. 2020 Table 3)",
                LEXICAL_COLUMNS,
                [
                    [
                        s["name"],
                        ref,
                        *_est(row["lexical"]),
                        row["lexical_random"]["value"],
                        row["lexical_random"].get("sd"),
                        row["lexical_adjusted"],
                    ]
                    for s, ref, row in c.cells()
                ],
            )
        ],
    )


CSSR_WHICH = ("cssr_p", "cssr_n")
CSSR_COLUMNS = (
    "selection",
    "reference",
    "humans CSSR_p",
    "ci_low",
    "ci_high",
    "humans CSSR_n",
    "ci_low",
    "ci_high",
    "machine CSSR_p",
    "ci_low",
    "ci_high",
    "machine CSSR_n",
    "ci_low",
    "ci_high",
)


def _cssr_figure(c: _Computed) -> Shown | Omitted:
    """Cross-sentiment selection rates of the humans and of each selection (Sen et al. 2020 Table 4)."""
    if not c.r["cssr_available"]:
        return Omitted("cssr", LEXICON_NOTE)
    if not c.rows:
        return Omitted("cssr", "No selection to compare.")
    series = [
        estimate_series(f"humans {which.upper()}", c.column(c.rows[0], "cssr_human", which))
        for which in CSSR_WHICH
    ]
    for s, m in zip(c.sels, c.rows, strict=True):
        for which in CSSR_WHICH:
            series.append(estimate_series(f"{s['name']} {which.upper()}", c.column(m, "cssr_machine", which)))
    rows = []
    for s, ref, row in c.cells():
        cells = [s["name"], ref]
        for side in ("cssr_human", "cssr_machine"):
            for which in CSSR_WHICH:
                cells += _est(row[side][which])[:3]
        rows.append(cells)
    return Shown(
        [chart("cssr", "Cross-sentiment selection rate", c.refs, series, "CSSR")],
        [table("cssr-table", "Cross-sentiment selection rate (Sen et al. 2020 Table 4)", CSSR_COLUMNS, rows)],
    )


def _pos_figure(c: _Computed) -> Shown | Omitted:
    """The distribution over Penn Treebank tags of the CAM words, each machine's top-k words and all words
    (Sen et al. 2020 Table 5); the chart keeps the tags someone selected or the corpus has."""
    tag_tables = [rep.get("tag_distribution") for rep in c.r["reports"]]
    first = next((t for t in tag_tables if t), None)
    if not first:
        return Omitted("pos", "No selection has a distribution over Penn tags (no counted human map).")
    tags = [t["tag"] for t in first]
    keep = [
        i
        for i in range(len(tags))
        if first[i]["human"] > 0
        or first[i]["corpus"] > 0
        or any(t and t[i].get("machine", 0) > 0 for t in tag_tables)
    ]
    series = [{"name": "humans (CAM)", "values": [first[i]["human"] for i in keep]}]
    for s, t in zip(c.sels, tag_tables, strict=True):
        series.append({"name": s["name"], "values": [t[i].get("machine") if t else None for i in keep]})
    series.append({"name": "corpus", "values": [first[i]["corpus"] for i in keep]})
    title = "Distribution over Penn Treebank tags (Sen et al. 2020 Table 5)"
    return Shown(
        [chart("pos", title, [tags[i] for i in keep], series, "share")],
        [
            table(
                "pos-table",
                "Distribution over Penn Treebank tags: CAM words, each machine's top-k words, all words",
                ["tag", "category", "humans (CAM)", *[s["name"] for s in c.sels], "corpus"],
                [
                    [
                        first[i]["tag"],
                        first[i]["category"],
                        first[i]["human"],
                        *[t[i].get("machine") if t else None for t in tag_tables],
                        first[i]["corpus"],
                    ]
                    for i in range(len(tags))
                ],
            )
        ],
    )


def _plausibility_faithfulness_figure(c: _Computed) -> Shown | Omitted:
    """Plausibility against faithfulness (:func:`annotate.dashboards.faithfulness.presentation`)."""
    charts, tables = faithfulness.presentation(c.sels, c.r["reports"])
    if not charts and not tables:
        return Omitted("plausibility_faithfulness", "No selection has a stored faithfulness.")
    return Shown(charts, tables)


def _share_alignment_figure(c: _Computed) -> Shown | Omitted:
    """Alignment with the share of annotators, against its permutation null
    (:func:`annotate.dashboards.human_share.alignment_presentation`)."""
    charts, tables = human_share.alignment_presentation(c.sels)
    if not charts:
        return Omitted(
            "share_alignment", "No selection has machine maps for two or more texts with human maps."
        )
    return Shown(charts, tables)


def _human_human_figure(c: _Computed) -> Shown:
    """Human–human behavioral similarity, for comparison."""
    return Shown(
        tables=[
            table(
                "human_human-table",
                "Human–human behavioral similarity, for comparison (truth map, score map)",
                ["truth", "score", "value", "ci_low", "ci_high", "n", "skipped"],
                [
                    [p["truth"], p["score"], *_est(p)[:3], p["n"], p.get("skipped")]
                    for p in c.r["human_human"]
                ],
            )
        ]
    )


def _texts_figure(c: _Computed) -> Shown:
    """The texts, each linked to its page, with each selection's ROC AUC against the text's SAM."""
    links = _texts_table_links(c.records, c.text_url)
    return Shown(
        tables=[
            table(
                "texts-table",
                "Texts (open one to see its maps over the words)",
                ["document", "gold label", "maps", "words", *[f"AUC vs SAM: {s['name']}" for s in c.sels]],
                [
                    [
                        link,
                        rec["document_label"],
                        len(rec["annotations"]),
                        len(rec["words"]),
                        *[aucs.get(rec["id"]) for aucs in c.per_text],
                    ]
                    for link, rec in zip(links, c.records, strict=True)
                ],
            )
        ]
    )


#: The similarity dashboard's figures, in page order.
FIGURES: tuple[FigureBuilder[_Computed], ...] = (
    _behavioral_figure,
    _lexical_figure,
    _cssr_figure,
    _pos_figure,
    _plausibility_faithfulness_figure,
    _share_alignment_figure,
    _human_human_figure,
    _texts_figure,
)


def _presentation(
    r: dict, records: list[dict], per_text: list[dict], text_url: Callable[[int], str] | None
) -> tuple[list[dict], list[dict]]:
    """Charts and tables of a computed similarity dashboard (:data:`FIGURES`); the figures its data does
    not allow go to ``r["omitted_figures"]`` with the reason."""
    rows = [_by_reference(rep) for rep in r["reports"]]
    shown = present(FIGURES, _Computed(r, records, per_text, text_url, _references(r["reports"]), rows))
    r["omitted_figures"] = shown.omitted
    return shown.charts, shown.tables


def _est(e: dict) -> list[Any]:
    return [e.get("value"), e.get("ci_low"), e.get("ci_high"), e.get("n")]


# -------------------------------------------------------------------------------------- drill-down


def text_detail(
    study: Study, item: Item, selections: Sequence[gather.Selection], target: str
) -> dict[str, Any]:
    """One text of the study: its words, each counted human map (slot order; the trust rule of
    :func:`annotate.quality.exclusion.standing`), CAM and SAM, and each selection's machine map with
    signed levels for the overlay (Sen et al. 2020 Figure 1)."""
    doc = item.document
    words = [doc.text[s:e] for s, e in doc.words]
    n = len(words)
    rows = list(
        Response.objects.filter(study=study, item=item)
        .counted()
        .order_by("assignment__slot", "id")
        .values_list("worker_id", "worker__provider", "worker__external_id", "answer")
    )
    left_out = standing(study, [row[0] for row in rows]).left_out
    human: list[dict[str, Any]] = []
    for worker_id, provider, external, answer in rows:
        answer = answer if isinstance(answer, dict) else {}
        word_map = answer.get("map")
        if worker_id in left_out or not isinstance(word_map, list) or len(word_map) != n:
            continue
        human.append(
            {
                "name": f"HAM{len(human) + 1}",
                "annotator": gather.anonymous_id(study, {"provider": provider, "external_id": external}),
                "label": answer.get("label"),
                "map": [1 if v else 0 for v in word_map],
            }
        )
    cam, sam = consensus_maps([h["map"] for h in human]) if len(human) >= 2 else (None, None)
    runs = gather.runs_by_id(s.run for s in selections)
    machine = []
    for sel in selections:
        maps, used, _ = gather.machine_maps(sel, {doc.pk: n}, {doc.pk: doc.label}, target)
        scores = maps.get(doc.pk)
        run = runs.get(sel.run)
        run_name = run.name if run else f"run {sel.run}"
        entry: dict[str, Any] = {
            "key": sel.key,
            "label": selection_label(run_name, sel.method),
            "name": selection_name(run_name, sel.method),
            "target": used.get(doc.pk),
            "scores": scores,
            "levels": signed_levels(scores) if scores is not None else None,
            "auc": {},
        }
        if scores is not None:
            for name, ref in (("CAM", cam), ("SAM", sam)):
                if ref is not None:
                    auc = roc_auc_per_text([ref], [scores])[0]
                    entry["auc"][name] = float(auc)
        machine.append(entry)
    neighbours = list(
        Item.objects.filter(
            study=study, is_gold=False, retired=False, document__isnull=False, responses_done__gt=0
        )
        .order_by("position", "id")
        .values_list("id", flat=True)
    )
    position = neighbours.index(item.pk) if item.pk in neighbours else -1
    return json_safe(
        {
            "kind": "text",
            "item": item.pk,
            "document": {"id": doc.pk, "external_id": doc.external_id, "label": doc.label},
            "words": words,
            "breaks": word_breaks(doc.text, doc.words),
            "human": human,
            "cam": cam,
            "sam": sam,
            "machine": machine,
            "previous": neighbours[position - 1] if position > 0 else None,
            "next": neighbours[position + 1] if 0 <= position < len(neighbours) - 1 else None,
        }
    )
