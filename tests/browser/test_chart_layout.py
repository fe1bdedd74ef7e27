"""The human-vs-machine charts read on a phone (375 px) and on a laptop (1366 px): every chart's plot
keeps a usable area, its legend sits beside the plot (no overlap with the chart area), and its tick
labels are at least 11 px. Screenshots: ``tests/browser/output/chart_layout/``."""

from __future__ import annotations

import pytest

from tests.browser.conftest import OUTPUT
from tests.browser.test_dashboards import scene, signed_in  # noqa: F401  (scene is a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"phone": {"width": 375, "height": 812}, "laptop": {"width": 1366, "height": 768}}

GEOMETRY = """() => Object.fromEntries(Object.entries(window.hatlabDashboard.charts).map(([id, chart]) => {
  const a = chart.chartArea, l = chart.legend;
  const legendShown = !!(l && l.options.display && l.width > 0 && l.height > 0);
  const hits = legendShown ? [{left: l.left, top: l.top, width: l.width, height: l.height}, ...(l.legendHitBoxes || [])] : [];
  const overlap = hits.some(b => b.left < a.right && b.left + b.width > a.left && b.top < a.bottom && b.top + b.height > a.top)
    || hits.some(b => b.top < 0 || b.top + b.height > chart.height + 1);
  const ticks = Object.values(chart.scales).map(s => (s.options.ticks.font && s.options.ticks.font.size) || 12);
  return [id, {plotWidth: a.right - a.left, plotHeight: a.bottom - a.top, canvasWidth: chart.width,
               overlap, legendShown, tickPx: Math.min(...ticks)}];
}))"""


@pytest.mark.parametrize("size", list(SIZES))
def test_human_vs_machine_charts_read_on_phone_and_laptop(live_server, browser_context, scene, size):  # noqa: F811
    owner, study, run = scene
    shots = OUTPUT / "chart_layout"
    shots.mkdir(parents=True, exist_ok=True)
    page, errors = signed_in(browser_context, live_server, owner)
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_server.url}/studies/{study.uid}/dashboard/")
    page.wait_for_selector("#hatlab-dashboard[data-state=ready]")
    page.click("text=Human vs machine")
    page.check(f'input[value="{run.pk}:attention (training)"]')
    page.check(f'input[value="{run.pk}:grad_l2_1s"]')
    page.click("button:has-text('Compare')")
    page.wait_for_selector("#hatlab-dashboard[data-state=ready]", timeout=60_000)
    page.screenshot(path=str(shots / f"human_vs_machine_{size}.png"), full_page=True)
    geometry = page.evaluate(GEOMETRY)
    assert geometry
    problems = []
    for chart_id, g in geometry.items():
        if g["overlap"]:
            problems.append(f"{chart_id}: the legend overlaps the plot")
        if g["plotHeight"] < 180 or g["plotWidth"] < 0.6 * g["canvasWidth"]:
            problems.append(f"{chart_id}: the plot is {g['plotWidth']:.0f}×{g['plotHeight']:.0f} px")
        if g["tickPx"] < 11:
            problems.append(f"{chart_id}: tick labels of {g['tickPx']} px")
    assert not problems, problems
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert not errors, errors
