"""Plausibility against faithfulness, per selection of the human-vs-machine dashboard.

Plausibility is how well a machine map matches the people's maps (here the behavioral similarity the
dashboard already computes, mean ROC AUC against the super map SAM, or CAM, or the first annotator's maps
when a study has too few maps per text for them; Sen et al. 2020 §4.1; the table adds ERASER's token F1,
IOU F1 and AUPRC, :mod:`annotate.dashboards.human_share`). Faithfulness is how much the model
depends on the words the map ranks first: ERASER's comprehensiveness AOPC (DeYoung et al. 2020 §4), with
sufficiency AOPC and Kendall's τ against leave-one-word-out (Jain & Wallace 2019 §4) in the table.

The faithfulness of each explanation is measured by the explanation job, which has the run's model loaded,
and stored with it (``Explanation.faithfulness``); the dashboard averages the stored values over the texts
whose maps it compares — measuring them here would load every selected run's model and run several
forward passes per word of every text inside a request. The training attention (read from the run's
predictions) and explanations stored before the measure existed have none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate.dashboards.charts import estimate_point, scatter, table
from annotate.dashboards.human_share import ERASER_FIGURES
from annotate.models import Explanation
from explain_engine import api as engine
from explain_engine.api import N_BOOT

PLAUSIBILITY_REFERENCES = ("SAM", "CAM", "HAM1")


def stored_faithfulness(run: int, method: str, used: dict[int, str]) -> list[dict]:
    """The stored per-text faithfulness of ``method``'s explanations of run ``run``, for the documents and
    explained classes in ``used`` (document → target, as the dashboard chose its maps), in document order:
    the bootstrap resamples by position, so its intervals must not follow the order rows come back in.
    One query."""
    rows = (
        Explanation.objects.filter(
            model_run_id=run, method=method, document_id__in=list(used), faithfulness__isnull=False
        )
        .order_by("document_id", "target")
        .values_list("document_id", "target", "faithfulness")
    )
    return [f for doc, target, f in rows if used.get(doc) == target and isinstance(f, dict)]


def faithfulness_figures(per_text: Sequence[dict], n_boot: int = N_BOOT, seed: int = 0) -> dict[str, Any]:
    """Means with n and intervals (``Estimate.to_dict()``) of every faithfulness metric, and the texts."""
    summary = engine.summarize_faithfulness(per_text, n_boot, seed=seed)
    figures: dict[str, Any] = {
        name: [e.to_dict() for e in est] if isinstance(est, list) else est.to_dict()
        for name, est in summary.items()
    }
    figures["texts"] = len(per_text)
    figures["bins"] = (
        list(per_text[0].get("bins", engine.FAITHFULNESS_BINS))
        if per_text
        else list(engine.FAITHFULNESS_BINS)
    )
    return figures


def plausibility_of(report: dict) -> tuple[str | None, dict | None]:
    """The reference and behavioral similarity (mean ROC AUC) that stand for a selection's plausibility:
    against SAM, else CAM, else HAM1 — the first with a value."""
    rows = {row["reference"]: row for row in report.get("references", ())}
    for ref in PLAUSIBILITY_REFERENCES:
        est = rows.get(ref, {}).get("behavioral")
        if est and est.get("n") and est.get("value") is not None:
            return ref, est
    return None, None


def presentation(sels: Sequence[dict], reports: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """The plausibility-versus-faithfulness scatter chart (one point per selection, its intervals on both
    axes) and its table; nothing when no selection has a stored faithfulness."""
    if not any((s.get("faithfulness") or {}).get("texts") for s in sels):
        return [], []
    plaus = [plausibility_of(rep) for rep in reports]
    faith = [s.get("faithfulness") or {} for s in sels]
    refs = sorted({ref for ref, _ in plaus if ref})
    comp = [f.get("comprehensiveness_aopc") for f in faith]
    points = [estimate_point(s["name"], est, c) for s, (_, est), c in zip(sels, plaus, comp, strict=True)]
    levels = {e["level"] for e in [*(est for _, est in plaus), *comp] if e and e.get("level")}
    whiskers = f"; whiskers: {100 * levels.pop():g} % bootstrap intervals" if len(levels) == 1 else ""
    charts = [
        scatter(
            "plausibility_faithfulness",
            "Plausibility (agreement with the human maps) against faithfulness (the model's drop in p of the "
            f"explained class without the map's top words, averaged over 1–50 % of the words){whiskers}",
            points,
            f"plausibility: behavioral similarity vs {'/'.join(refs) or 'humans'} (ROC AUC)",
            "faithfulness: comprehensiveness AOPC",
            better=("top right", "plausible and faithful"),
        )
    ]
    rows = []
    for s, (ref, est), f in zip(sels, plaus, faith, strict=True):
        cells: list[Any] = [s["name"], ref, *(_est(est) if est else [None] * 4), f.get("texts", 0)]
        eraser = s.get("eraser") or {}
        for key, _ in ERASER_FIGURES:
            cells += _est(eraser.get(key))[:3]
        for name in ("comprehensiveness_aopc", "sufficiency_aopc", "kendall_tau_loo"):
            cells += _est(f.get(name))
        rows.append(cells)
    columns = ["selection", "reference", "ROC AUC", "ci_low", "ci_high", "n", "texts measured"]
    for _, heading in ERASER_FIGURES:
        columns += [heading, "ci_low", "ci_high"]
    for name in ("comprehensiveness AOPC", "sufficiency AOPC", "Kendall τ vs leave-one-out"):
        columns += [name, "ci_low", "ci_high", "n"]
    tables = [
        table(
            "plausibility_faithfulness-table",
            "Plausibility (ROC AUC against the reference; ERASER's token F1, IOU F1 and AUPRC against every "
            "annotator's map) and faithfulness (DeYoung et al. 2020 §4; Jain & Wallace 2019 §4)",
            columns,
            rows,
        )
    ]
    return charts, tables


def faithfulness_notes(sels: Sequence[dict]) -> list[str]:
    """A note for each selection with maps but no stored faithfulness, and how the figures are read."""
    out = []
    missing = [s["name"] for s in sels if s["texts"] and not (s.get("faithfulness") or {}).get("texts")]
    if missing:
        out.append(
            f"{', '.join(missing)}: no faithfulness measured for these maps (the training attention, or "
            "explanations computed before it was measured): run the explanation job again to add it."
        )
    if len(missing) < len(sels):
        out.append(
            "Faithfulness: comprehensiveness is p(x) − p(x without the map's top k words), sufficiency "
            "p(x) − p(only those words), k = ⌈f·n⌉ for f = 1, 5, 10, 20, 50 % of the words, averaged over the "
            "bins (AOPC, DeYoung et al. 2020 §4); higher comprehensiveness and lower sufficiency are more "
            "faithful. τ is Kendall's τ-b between the map and leave-one-word-out (Jain & Wallace 2019 §4)."
        )
    return out


def _est(e: dict | None) -> list[Any]:
    if not e:
        return [None, None, None, None]
    return [e.get("value"), e.get("ci_low"), e.get("ci_high"), e.get("n")]
