"""The dashboards in a real browser: the charts are drawn from the API's JSON (the Chart instances hold
the API's numbers and the canvases have drawn pixels), each chart's CSV link holds the same table, each
table's "Download CSV" link the table's own columns and rows, the
plausibility-versus-faithfulness scatter shows one labelled point per measured method with its whiskers,
and the drill-down overlays a machine map on a human map over the words, with document text shown as
text."""

from __future__ import annotations

import random
from urllib.parse import unquote

import pytest
from django.conf import settings
from django.test import Client

from annotate.access import RESEARCHER_GROUP
from annotate.dashboards.charts import chart_rows, to_csv
from annotate.models import Document, Explanation, Item
from annotate.tasks.page_words import word_payload as highlight_payload
from explain_engine.api import FAITHFULNESS_BINS
from tests.annotate.conftest import make_dataset, make_study, make_user, make_worker
from tests.annotate.test_dashboards import answer, machine_run, noisy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE = "<img/src=x/onerror=alert(1)>"  # one whitespace word that is markup

# For every chart the page drew: its labels, each dataset's label and data, and how many canvas pixels
# are not transparent (Chart.js drew bars, axes and error bars).
CHARTS = """() => Object.fromEntries(Object.entries(window.hatlabDashboard.charts).map(([id, chart]) => {
  const canvas = chart.canvas;
  const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let drawn = 0;
  for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) drawn++;
  return [id, {
    type: chart.config.type,
    labels: chart.data.labels,
    datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })),
    drawn,
    area: canvas.width * canvas.height,
  }];
}))"""


def local_csv(data: dict) -> str:
    """What ``tableToCsv`` of charts.ts writes for a chart (numbers as JavaScript's String())."""
    header, rows = chart_rows(data)
    return to_csv(header, rows)


@pytest.fixture
def scene():
    """A researcher's highlight study (6 texts, 3 maps each; one text's first word is markup) and a
    finished model run with attention and an explanation for every text."""
    owner = make_user("rita", RESEARCHER_GROUP)
    dataset = make_dataset(owner, n=6)
    doc = dataset.documents.order_by("id")[1]
    first = doc.text.split()[0]
    hostile = Document.from_text(
        dataset, doc.external_id, doc.text.replace(first, HOSTILE, 1), label=doc.label
    )
    Document.objects.filter(pk=doc.pk).update(
        text=hostile.text, words=hostile.words, sentences=hostile.sentences
    )
    study = make_study(owner, dataset, annotators_per_item=3)
    rng = random.Random(3)
    workers = [make_worker(f"w{i}") for i in range(3)]
    for item in Item.objects.filter(study=study).select_related("document").order_by("position"):
        Item.objects.filter(pk=item.pk).update(
            payload=highlight_payload(item.document.text, item.document.words)
        )
        n = len(item.document.words)
        base = [0] * n
        for i in rng.sample(range(n), 4):
            base[i] = 1
        for slot, worker in enumerate(workers):
            label = item.document.label if slot < 2 else "cannot decide"
            answer(item, worker, slot, label, base if slot == 0 else noisy(base, rng, flips=slot + 1))
    run = machine_run(owner, dataset, name="bilstm")
    return owner, study, run


def signed_in(browser_context, live_server, user):
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    browser_context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
    )
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: errors.append(f"dialog: {d.message}") or d.dismiss())
    return page, errors


def expected_datasets(spec: dict) -> list[dict]:
    """The datasets a chart of the API draws: one per series of a bar chart; one per point of a scatter
    chart that has both coordinates."""
    if spec.get("kind") == "scatter":
        return [
            {"label": p["label"], "data": [{"x": p["x"], "y": p["y"]}]}
            for p in spec["points"]
            if p["x"] is not None and p["y"] is not None
        ]
    return [{"label": s["name"], "data": s["values"]} for s in spec["series"]]


def assert_charts_follow_the_api(page, api: dict) -> dict:
    drawn = page.evaluate(CHARTS)
    assert set(drawn) == {c["id"] for c in api["charts"]}
    for spec in api["charts"]:
        chart = drawn[spec["id"]]
        assert chart["type"] == spec.get("kind", "bar"), spec["id"]
        if chart["type"] == "bar":
            assert chart["labels"] == spec["labels"], spec["id"]
        assert chart["datasets"] == expected_datasets(spec), spec["id"]
        assert chart["drawn"] > 0.01 * chart["area"], f"{spec['id']} has no drawn pixels"
        figure = page.locator(f'figure[data-chart="{spec["id"]}"]')
        link = figure.locator("a.hatlab-csv-link")
        assert link.get_attribute("download") == f"{spec['id']}.csv"
        csv = unquote(link.get_attribute("href").removeprefix("data:text/csv;charset=utf-8,"))
        assert csv == local_csv(spec), spec["id"]
        server = page.request.get(
            page.url.split("/studies/")[0] + figure.locator("a.hatlab-server-csv").get_attribute("href")
        )
        assert server.ok and server.text() == csv, spec["id"]
    return drawn


def assert_tables_follow_the_api(page, api: dict) -> None:
    """Every table on the page is the API's, and its "Download CSV" link answers that table's columns
    and rows (not those of the chart drawn from the same figure)."""
    assert page.locator("[data-table]").evaluate_all("ts => ts.map(t => t.dataset.table)") == [
        t["id"] for t in api["tables"]
    ]
    for spec in api["tables"]:
        link = page.locator(f'[data-table="{spec["id"]}"] a.hatlab-server-csv')
        assert link.text_content() == "Download CSV"
        server = page.request.get(page.url.split("/studies/")[0] + link.get_attribute("href"))
        assert server.ok and server.text() == to_csv(spec["columns"], spec["rows"]), spec["id"]


def test_study_and_machine_dashboards_and_the_drill_down(
    live_server, browser_context, output_dir, scene, frontend_bundle
):
    assert (frontend_bundle / "dashboard.js").exists() and (frontend_bundle / "dashboard.css").exists()
    owner, study, run = scene
    page, errors = signed_in(browser_context, live_server, owner)

    # the study dashboard
    page.goto(f"{live_server.url}/studies/{study.uid}/dashboard/")
    page.wait_for_selector("#hatlab-dashboard[data-state=ready]")
    api = page.request.get(f"{live_server.url}/api/dashboards/studies/{study.uid}/").json()
    drawn = assert_charts_follow_the_api(page, api)
    assert {"labels", "agreement", "human_human", "words_selected"} <= set(drawn)
    assert_tables_follow_the_api(page, api)
    assert page.locator('[data-table="human_human-table"] thead th').first.text_content() == "truth"
    annotators = page.locator('[data-table="annotators-table"] tbody tr')
    assert annotators.count() == 3
    assert page.locator("[data-section=notes] li").count() == len(api["notes"]) > 0
    page.screenshot(path=str(output_dir / "study-dashboard.png"), full_page=True)

    # human vs machine: pick two methods in the form
    page.click("text=Human vs machine")
    page.check(f'input[value="{run.pk}:attention (training)"]')
    page.check(f'input[value="{run.pk}:grad_l2_1s"]')
    page.click("button:has-text('Compare')")
    page.wait_for_selector("#hatlab-dashboard[data-state=ready]", timeout=60_000)
    api_url = page.get_attribute("#hatlab-dashboard", "data-api")
    api = page.request.get(live_server.url + api_url).json()
    drawn = assert_charts_follow_the_api(page, api)
    assert {"behavioral", "lexical", "pos"} <= set(drawn)
    assert_tables_follow_the_api(page, api)
    assert [d["label"] for d in drawn["behavioral"]["datasets"]] == [
        "bilstm · Attention weights",
        "bilstm · Simple gradient of s, L2 norm",
    ]
    assert [s["label"] for s in api["selections"]] == ["bilstm · attention (training)", "bilstm · grad_l2_1s"]
    assert "grad_l2_1s" not in page.inner_text("#hatlab-dashboard")
    page.screenshot(path=str(output_dir / "machine-dashboard.png"), full_page=True)

    # drill down to the text whose first word is markup
    hostile_doc = study.dataset.documents.order_by("id")[1]
    page.click(f'[data-table="texts-table"] a:text-is("{hostile_doc.external_id}")')
    page.wait_for_selector("#hatlab-dashboard[data-state=ready]")
    text_api = page.request.get(live_server.url + page.get_attribute("#hatlab-dashboard", "data-api")).json()
    words = page.locator("[data-overlay] span.w")
    assert words.count() == len(text_api["words"])
    assert words.first.text_content() == HOSTILE and page.locator("[data-overlay] img").count() == 0
    flags = words.evaluate_all("ws => ws.map(w => Number(w.dataset.human))")
    assert flags == text_api["cam"]
    classes = words.evaluate_all("ws => ws.map(w => [...w.classList].find(c => c.startsWith('heat-')))")
    levels = text_api["machine"][0]["levels"]
    assert classes == ["heat-0" if v == 0 else f"heat-{'p' if v > 0 else 'n'}{abs(v)}" for v in levels]
    # the outlined words are drawn differently from the others
    outline = words.evaluate_all("ws => ws.map(w => getComputedStyle(w).outlineStyle)")
    assert {o for o, f in zip(outline, flags, strict=True) if f} <= {"solid"}
    assert {o for o, f in zip(outline, flags, strict=True) if not f} <= {"none"}
    page.select_option("#overlay-human", "SAM")
    assert words.evaluate_all("ws => ws.map(w => Number(w.dataset.human))") == text_api["sam"]
    assert page.locator("#overlay-machine option").all_inner_texts() == [
        "bilstm · Attention weights",
        "bilstm · Simple gradient of s, L2 norm",
    ]
    page.select_option("#overlay-machine", f"{run.pk}:grad_l2_1s")
    assert page.get_attribute("[data-overlay]", "data-machine") == f"{run.pk}:grad_l2_1s"
    assert page.locator(".map-row").count() == 3 + 2 + 2
    page.screenshot(path=str(output_dir / "text-overlay.png"), full_page=True)
    assert errors == []


# The page's own width against the window's: more means a horizontal scroll bar for the whole page.
PAGE_OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
TABLE_OVERFLOW = """(id) => {
  const box = document.querySelector(`[data-table="${id}"] .table-scroll`);
  return box.scrollWidth - box.clientWidth;
}"""


def test_the_study_dashboard_fits_a_1366_pixel_screen(live_server, browser_context, output_dir, scene):
    owner, study, _ = scene
    page, errors = signed_in(browser_context, live_server, owner)
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/studies/{study.uid}/dashboard/")
    page.wait_for_selector("#hatlab-dashboard[data-state=ready]")
    table = page.locator('[data-table="annotators-table"] table')
    assert table.locator("thead th").count() == 13 and table.locator("tbody tr").count() == 3
    page.screenshot(path=str(output_dir / "study-dashboard-1366.png"), full_page=True)
    assert page.evaluate(PAGE_OVERFLOW) <= 0
    # the table itself stays inside the page, and every column shows without scrolling its own box
    box = page.locator('[data-table="annotators-table"] .table-scroll').bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1366
    assert page.evaluate(TABLE_OVERFLOW, "annotators-table") <= 0
    assert errors == []


def stored_faithfulness(rng: random.Random, centre: float, target: str) -> dict:
    """A per-text faithfulness as the explanation job stores it, comprehensiveness around ``centre``."""
    comp = [round(centre + rng.uniform(-0.2, 0.2) + 0.02 * b, 4) for b in range(len(FAITHFULNESS_BINS))]
    suff = [round(rng.uniform(0.0, 0.2), 4)] * len(FAITHFULNESS_BINS)
    return {
        "comprehensiveness": comp,
        "sufficiency": suff,
        "comprehensiveness_aopc": sum(comp) / len(comp),
        "sufficiency_aopc": suff[0],
        "kendall_tau_loo": round(rng.uniform(-0.2, 0.6), 4),
        "bins": list(FAITHFULNESS_BINS),
        "target": target,
        "probability": 0.9,
    }


# For every point of a scatter chart: its colour, pixel position, and the pixels at the four ends of its
# whiskers (the most opaque of 5 × 5 device pixels there: a 1.5 px line is anti-aliased over two or three).
WHISKER_ENDS = """(id) => {
  const chart = window.hatlabDashboard.charts[id];
  const ctx = chart.canvas.getContext('2d');
  const ratio = chart.currentDevicePixelRatio;
  const pixel = (x, y) => {
    const d = ctx.getImageData(Math.round(x * ratio) - 2, Math.round(y * ratio) - 2, 5, 5).data;
    let best = [0, 0, 0, 0];
    for (let k = 0; k < d.length; k += 4) if (d[k + 3] > best[3]) best = Array.from(d.slice(k, k + 4));
    return best;
  };
  const { x: xs, y: ys } = chart.scales;
  return chart.data.datasets.map((d, i) => {
    const p = chart.getDatasetMeta(i).data[0];
    const iv = d.hatlabIntervals[0];
    const ends = [
      [xs.getPixelForValue(iv.x[0]), p.y], [xs.getPixelForValue(iv.x[1]), p.y],
      [p.x, ys.getPixelForValue(iv.y[0])], [p.x, ys.getPixelForValue(iv.y[1])],
    ];
    return {
      label: d.label,
      color: d.borderColor,
      centre: [p.x, p.y, pixel(p.x, p.y)],
      ends: ends.map(([x, y]) => [x, y, pixel(x, y)]),
      xTitle: chart.options.scales.x.title.text,
      yTitle: chart.options.scales.y.title.text,
      plugins: chart.config.plugins.map((pl) => pl.id),
    };
  });
}"""


def near(rgba: list[int], hex_color: str, tolerance: int = 40) -> bool:
    rgb = [int(hex_color[k : k + 2], 16) for k in (1, 3, 5)]
    return rgba[3] > 200 and all(abs(a - b) <= tolerance for a, b in zip(rgba[:3], rgb, strict=True))


def test_plausibility_against_faithfulness_is_a_scatter_with_whiskers(
    live_server, browser_context, output_dir, scene, frontend_bundle
):
    """Two methods with stored faithfulness and the training attention without: two labelled points, each
    with whiskers on both axes in its colour, titled axes, the better corner's note; the CSV has all three."""
    owner, study, _ = scene
    run = machine_run(owner, study.dataset, name="cnn", seed=1, methods=("grad_l2_1s", "omit_1"))
    rng = random.Random(5)
    for method, centre in (("grad_l2_1s", 0.15), ("omit_1", 0.4)):
        for row in Explanation.objects.filter(model_run=run, method=method):
            row.faithfulness = stored_faithfulness(rng, centre, row.target)
            row.save(update_fields=["faithfulness"])
    page, errors = signed_in(browser_context, live_server, owner)
    page.set_viewport_size({"width": 1366, "height": 900})
    keys = [f"{run.pk}:attention (training)", f"{run.pk}:grad_l2_1s", f"{run.pk}:omit_1"]
    query = "&".join(f"select={k}" for k in keys)
    page.goto(f"{live_server.url}/studies/{study.uid}/dashboard/machine/?{query}&target=gold")
    page.wait_for_selector("#hatlab-dashboard[data-state=ready]", timeout=60_000)
    api = page.request.get(live_server.url + page.get_attribute("#hatlab-dashboard", "data-api")).json()
    drawn = assert_charts_follow_the_api(page, api)
    spec = {c["id"]: c for c in api["charts"]}["plausibility_faithfulness"]
    assert drawn["plausibility_faithfulness"]["type"] == "scatter"
    assert [p["label"] for p in spec["points"]] == [s["name"] for s in api["selections"]]
    assert spec["points"][0]["y"] is None  # the training attention has no faithfulness: not drawn

    points = page.evaluate(WHISKER_ENDS, "plausibility_faithfulness")
    assert [p["label"] for p in points] == [s["name"] for s in api["selections"][1:]]
    for p in points:
        assert (p["xTitle"], p["yTitle"]) == (spec["xLabel"], spec["yLabel"])
        assert p["plugins"] == ["hatlabWhiskers", "hatlabCornerNote"]
        x, y, rgba = p["centre"]
        assert near(rgba, p["color"]), f"{p['label']}: no point drawn at ({x:.0f}, {y:.0f}): {rgba}"
        for ex, ey, rgba in p["ends"]:
            # beyond the point's marker (radius 6 and its border), so only the whisker can be there
            assert abs(ex - x) + abs(ey - y) >= 10, f"{p['label']}: an interval too short to see"
            assert near(rgba, p["color"]), f"{p['label']}: no whisker end at ({ex:.0f}, {ey:.0f}): {rgba}"
    csv = page.locator('figure[data-chart="plausibility_faithfulness"] a.hatlab-csv-link').get_attribute(
        "href"
    )
    assert len(unquote(csv).split("\r\n")) == 1 + 3 + 1  # header, three selections, the final line end
    assert_tables_follow_the_api(page, api)
    assert any("no faithfulness measured" in n for n in api["notes"])
    figure = page.locator('figure[data-chart="plausibility_faithfulness"]')
    figure.scroll_into_view_if_needed()
    figure.screenshot(path=str(output_dir / "plausibility-faithfulness.png"))
    assert errors == []
