"""The human-vs-machine dashboard's plausibility-versus-faithfulness chart, a scatter of one point per
selection: its faithfulness (y) is the mean of the values stored with the explanations of the counted
texts, for the class the dashboard chose, with the engine's intervals; its plausibility (x) is the
dashboard's own behavioral similarity against SAM. The scatter's CSV rows are the points; its table's CSV
holds the table's columns."""

from __future__ import annotations

import random

import numpy as np
import pytest

from annotate.dashboards.charts import chart_rows, estimate_point, scatter, to_csv
from annotate.dashboards.faithfulness import stored_faithfulness
from annotate.dashboards.similarity import similarity_dashboard
from annotate.models import Explanation, Item
from annotate.quality import grading
from explain_engine.api import FAITHFULNESS_BINS, summarize_faithfulness
from tests.annotate.conftest import make_dataset, make_study, make_worker
from tests.annotate.test_dashboards import answer, assert_figures_have_own_ids_and_csv, machine_run, noisy

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def study(researcher):
    """A highlight study of 10 texts (2 gold), three workers' maps on every text; every worker passed both
    golds and their trust is current, so all their maps count."""
    dataset = make_dataset(researcher, n=10, gold_every=5)
    study = make_study(researcher, dataset, annotators_per_item=3)
    workers = [make_worker(f"w{i}") for i in range(3)]
    rng = random.Random(3)
    for item in Item.objects.filter(study=study).select_related("document").order_by("position"):
        base = [int(w.strip(".,!?").lower() in ("delicious", "bland")) for w in item.payload["words"]]
        for slot, worker in enumerate(workers):
            word_map = base if slot == 0 else noisy(base, rng, flips=slot)
            answer(
                item, worker, slot, item.document.label, word_map, gold_passed=True if item.is_gold else None
            )
    grading.refresh_trust(study)
    return study


def measured(doc_id: int, target: str) -> dict:
    """A stored per-text faithfulness whose values differ by document and by class."""
    shift = 0.5 if target == "positive" else 0.0
    comp = [round(0.01 * doc_id + shift + 0.1 * b, 4) for b in range(len(FAITHFULNESS_BINS))]
    suff = [round(0.2 - 0.01 * doc_id, 4)] * len(FAITHFULNESS_BINS)
    return {
        "comprehensiveness": comp,
        "sufficiency": suff,
        "comprehensiveness_aopc": float(np.mean(comp)),
        "sufficiency_aopc": float(np.mean(suff)),
        "kendall_tau_loo": round(0.3 + shift - 0.02 * doc_id, 4),
        "bins": list(FAITHFULNESS_BINS),
        "target": target,
        "probability": 0.9,
    }


@pytest.mark.parametrize("target", ["gold", "predicted"])
def test_the_chart_averages_the_stored_faithfulness_of_the_compared_maps(study, researcher, target):
    run = machine_run(researcher, study.dataset, methods=("omit_1", "grad_l2_1s"))
    for row in Explanation.objects.filter(model_run=run, method="omit_1"):
        row.faithfulness = measured(row.document_id, row.target)
        row.save(update_fields=["faithfulness"])
    counted = (
        Item.objects.filter(study=study, is_gold=False).select_related("document").order_by("document_id")
    )
    predicted = {p.document_id: p.label for p in run.predictions.all()}
    chosen = {
        i.document_id: i.document.label if target == "gold" else predicted[i.document_id] for i in counted
    }
    expected = [measured(doc, label) for doc, label in chosen.items()]

    result = similarity_dashboard(
        study, {"selections": [[run.pk, "omit_1"], [run.pk, "grad_l2_1s"]], "target": target}, n_boot=200
    )
    charts = {c["id"]: c for c in result["charts"]}
    chart = charts["plausibility_faithfulness"]
    assert chart["kind"] == "scatter"
    assert [p["label"] for p in chart["points"]] == [s["name"] for s in result["selections"]]
    assert "SAM" in chart["xLabel"] and chart["yLabel"] == "faithfulness: comprehensiveness AOPC"
    assert chart["better"] == {"corner": "top right", "text": "plausible and faithful"}
    assert "whiskers: 95 % bootstrap intervals" in chart["title"]
    measured_point, unmeasured_point = chart["points"]
    sam = {r["reference"]: r for r in result["reports"][0]["references"]}["SAM"]["behavioral"]
    assert [measured_point[k] for k in ("x", "xLower", "xUpper")] == [
        sam["value"],
        sam["ci_low"],
        sam["ci_high"],
    ]
    aopc = [e["comprehensiveness_aopc"] for e in expected]
    assert len(aopc) == 8  # the two gold texts are not compared
    assert measured_point["y"] == pytest.approx(np.mean(aopc))
    engine = summarize_faithfulness(expected, 200, seed=0)["comprehensiveness_aopc"]
    assert measured_point["yLower"] == pytest.approx(engine.ci_low)
    assert measured_point["yUpper"] == pytest.approx(engine.ci_high)
    # the second selection has a plausibility but no stored faithfulness: a point without a y
    sam2 = {r["reference"]: r for r in result["reports"][1]["references"]}["SAM"]["behavioral"]
    assert unmeasured_point["x"] == sam2["value"] and unmeasured_point["y"] is None

    figures = result["selections"][0]["faithfulness"]
    assert figures["texts"] == 8 and len(figures["comprehensiveness"]) == len(FAITHFULNESS_BINS)
    assert figures["kendall_tau_loo"]["value"] == pytest.approx(
        np.mean([e["kendall_tau_loo"] for e in expected])
    )
    assert result["selections"][1]["faithfulness"]["texts"] == 0
    table = {t["id"]: t for t in result["tables"]}["plausibility_faithfulness-table"]
    row = table["rows"][0]
    assert row[:3] == [result["selections"][0]["name"], "SAM", sam["value"]]
    assert row[table["columns"].index("sufficiency AOPC")] == pytest.approx(
        np.mean([e["sufficiency_aopc"] for e in expected])
    )
    assert any("no faithfulness measured" in n for n in result["notes"])
    assert any(result["selections"][1]["name"] in n for n in result["notes"])


def test_stored_faithfulness_comes_in_document_order(study, researcher):
    """The intervals are a bootstrap over the texts' positions: the rows are read in document order, not
    in the order the database keeps them (here the reverse: each row is rewritten, the last one first)."""
    run = machine_run(researcher, study.dataset, methods=("omit_1",))
    rows = list(Explanation.objects.filter(model_run=run).order_by("-document_id", "target"))
    for row in rows:
        row.faithfulness = measured(row.document_id, row.target)
        row.save(update_fields=["faithfulness"])
    used = {row.document_id: "positive" for row in rows}
    got = stored_faithfulness(run.pk, "omit_1", used)
    assert got == [measured(doc, "positive") for doc in sorted(used)]


def test_no_chart_without_measured_faithfulness(study, researcher):
    run = machine_run(researcher, study.dataset)
    result = similarity_dashboard(study, {"selections": [[run.pk, "grad_l2_1s"]], "target": "gold"}, n_boot=0)
    assert "plausibility_faithfulness" not in {c["id"] for c in result["charts"]}
    assert any("run the explanation job again" in n for n in result["notes"])


def test_the_chart_comes_with_the_page_and_its_csv(study, researcher, client):
    run = machine_run(researcher, study.dataset, methods=("omit_1",))
    for row in Explanation.objects.filter(model_run=run):
        row.faithfulness = measured(row.document_id, row.target)
        row.save(update_fields=["faithfulness"])
    client.force_login(researcher)
    url = f"/api/dashboards/studies/{study.uid}/similarity/"
    data = client.get(url, {"select": [f"{run.pk}:omit_1"], "target": "gold"}).json()
    chart = {c["id"]: c for c in data["charts"]}["plausibility_faithfulness"]
    lines = client.get(chart["csv"]).content.decode().splitlines()
    x, y = chart["xLabel"], chart["yLabel"]
    assert lines[0] == f"label,{x},{x} lower,{x} upper,{y},{y} lower,{y} upper"
    assert x == "plausibility: behavioral similarity vs SAM (ROC AUC)"
    point = chart["points"][0]
    assert lines[1].startswith(data["selections"][0]["name"] + ",")
    assert [float(v) for v in lines[1].split(",")[-6:]] == pytest.approx(
        [point[k] for k in ("x", "xLower", "xUpper", "y", "yLower", "yUpper")]
    )
    # the scatter's table is a figure of its own with its own CSV, as is every other figure of the page
    ids = assert_figures_have_own_ids_and_csv(client, data)
    assert {"plausibility_faithfulness", "plausibility_faithfulness-table"} <= set(ids)
    table = {t["id"]: t for t in data["tables"]}["plausibility_faithfulness-table"]
    assert client.get(table["csv"]).content.decode().splitlines()[0] == ",".join(table["columns"])
    assert len(lines) == 2


def test_scatter_rows_and_csv_are_the_points():
    """One row per point, missing values blank, numbers as the page's CSV writes them."""
    est = {"value": 0.7, "ci_low": 0.6, "ci_high": 0.8, "n": 8, "level": 0.95}
    points = [
        estimate_point("=LIME", est, {"value": 0.25, "ci_low": 0.125, "ci_high": 0.5}),
        estimate_point("attention", None, {"value": 1.0, "ci_low": 0.5, "ci_high": 1.5}),
    ]
    data = scatter("pf", "P vs F", points, "AUC", "AOPC", better=("top right", "both"))
    assert data["kind"] == "scatter" and data["better"] == {"corner": "top right", "text": "both"}
    header, rows = chart_rows(data)
    assert header == ["label", "AUC", "AUC lower", "AUC upper", "AOPC", "AOPC lower", "AOPC upper"]
    assert rows == [
        ["=LIME", 0.7, 0.6, 0.8, 0.25, 0.125, 0.5],
        ["attention", None, None, None, 1.0, 0.5, 1.5],
    ]
    assert to_csv(header, rows).splitlines()[1:] == [
        "'=LIME,0.7,0.6,0.8,0.25,0.125,0.5",
        "attention,,,,1,0.5,1.5",
    ]


@pytest.mark.parametrize(
    ("axes", "better", "message"),
    [
        (("AUC", " "), None, "both axes need a title"),
        (("AUC", "AOPC"), ("upper right", "x"), "better corner must be one of"),
    ],
)
def test_scatter_refuses_untitled_axes_and_unknown_corners(axes, better, message):
    with pytest.raises(ValueError, match=message):
        scatter("pf", "P vs F", [], *axes, better=better)
