"""Per selection of the human-vs-machine dashboard, two comparisons with the people's maps that also hold for an
imported rationale set (Zaidan et al. 2007, ERASER, YELP-HAT, HateXplain: one or more annotators per text):

* **plausibility as ERASER defines it** (DeYoung et al. 2020 §4.1): token F1, IOU F1 and AUPRC of the machine
  map against every annotator's map (one instance per map, as ERASER scores an annotation), shown beside the
  stored faithfulness (:mod:`annotate.dashboards.faithfulness`);
* **alignment with the share of annotators** (after Prasad et al. 2021 §3): C = arctanh(r(|map|, share))
  per text, against a permutation null (:func:`explain_engine.api.shared_marks_alignment`; not the paper's
  control-item C_R, which such sets cannot give).

The engine computes every figure; this module gathers the maps and shapes the figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate.dashboards.charts import chart, estimate_series, table
from explain_engine.api import N_BOOT, eraser_plausibility, shared_marks_alignment

ERASER_FIGURES = (("token_f1", "token F1"), ("iou_f1", "IOU F1"), ("auprc", "AUPRC"))
MIN_ALIGNMENT_TEXTS = 2


def _kept(records: Sequence[dict], predictions: dict[str, list[float]]) -> list[dict]:
    return [r for r in records if r["id"] in predictions and r["annotations"]]


def eraser_figures(
    records: Sequence[dict], predictions: dict[str, list[float]], n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any] | None:
    """ERASER's token F1, IOU F1 and AUPRC (``Estimate.to_dict()``) of the machine maps against every
    annotator's map of the texts that have both, and how many maps they count; None without any."""
    human: list[list[int]] = []
    machine: list[list[float]] = []
    for rec in _kept(records, predictions):
        for a in rec["annotations"]:
            human.append(a["map"])
            machine.append(predictions[rec["id"]])
    if not human:
        return None
    figures = eraser_plausibility(human, machine, n_boot=n_boot, seed=seed)
    return {key: figures[key].to_dict() for key, _ in ERASER_FIGURES} | {"maps": len(human)}


def alignment_figures(
    records: Sequence[dict], predictions: dict[str, list[float]], n_boot: int = N_BOOT, seed: int = 0
) -> dict[str, Any] | None:
    """Mean C, mean C_null and ΔA of the machine maps against the share of annotators who marked each
    word (:func:`explain_engine.api.shared_marks_alignment`); None with fewer than two texts."""
    kept = _kept(records, predictions)
    if len(kept) < MIN_ALIGNMENT_TEXTS:
        return None
    markings = [[a["map"] for a in rec["annotations"]] for rec in kept]
    attributions = [predictions[rec["id"]] for rec in kept]
    return shared_marks_alignment(markings, attributions, n_boot=n_boot, seed=seed)


def alignment_presentation(sels: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """The alignment chart (mean C and mean C_null per selection, with intervals) and its table; nothing
    when no selection has the figures."""
    shown = [s for s in sels if s.get("alignment")]
    if not shown:
        return [], []
    names = [s["name"] for s in shown]
    figures = [s["alignment"] for s in shown]
    charts = [
        chart(
            "share_alignment",
            "Alignment of each machine map with the share of annotators who marked each word: mean "
            "C = arctanh(Pearson r) per text (after Prasad et al. 2021 §3), beside the permutation null C_null "
            "(the same shares shuffled over the text's words; 0 = no alignment)",
            names,
            [
                estimate_series("C (the people's shares)", [f["mean_c"] for f in figures]),
                estimate_series("C_null (shares permuted)", [f["mean_c_null"] for f in figures]),
            ],
            "mean arctanh r",
        )
    ]
    rows = []
    for name, f in zip(names, figures, strict=True):
        cells: list[Any] = [name]
        for key in ("mean_c", "mean_c_null", "delta_a"):
            e = f[key]
            cells += [e.get("value"), e.get("ci_low"), e.get("ci_high")]
        rows.append([*cells, f["mean_c"].get("n"), f["mean_c"].get("skipped"), f["permutations"]])
    tables = [
        table(
            "share_alignment-table",
            "Alignment with the share of annotators (C and ΔA after Prasad et al. 2021 eqs. 5, 7) against a "
            "permutation null, not the paper's C_R (see the notes)",
            [
                "selection",
                "mean C",
                "ci_low",
                "ci_high",
                "mean C_null",
                "ci_low",
                "ci_high",
                "ΔA",
                "ci_low",
                "ci_high",
                "texts",
                "skipped",
                "permutations",
            ],
            rows,
        )
    ]
    return charts, tables


def alignment_notes(sels: Sequence[dict]) -> list[str]:
    """How the alignment figure is read, when it is shown."""
    shown = [s["alignment"] for s in sels if s.get("alignment")]
    if not shown:
        return []
    return [
        "Alignment with the people's shares: the expert oracle of a text is the share of its annotators who "
        "marked each word (Prasad et al. 2021 eq. 4; 0 or 1 with one annotator) and C the Fisher z of its "
        "Pearson r with the machine map's absolute scores. The baseline is a permutation null (the same "
        f"shares shuffled over the text's words, {shown[0]['permutations']} seeded permutations averaged), "
        "not the paper's C_R, which needs marks made against a random other explanation (control items) "
        "that an imported set does not have; its expectation is 0. ΔA = tanh(mean(C − C_null)). Intervals "
        "are 95 % bootstrap intervals over texts."
    ]
