"""The dashboards' bar chart in a real browser: Chart.js draws the bars and our plugin the error
bars, and the CSV link carries the same table."""

from __future__ import annotations

from urllib.parse import unquote

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DATA = {
    "labels": ["attention", "LIME"],
    "series": [
        {"name": "AUC", "values": [0.6, 0.7], "lower": [0.5, 0.55], "upper": [0.8, 0.9]},
        {"name": "random", "values": [0.5, 0.5]},
    ],
}

# Draw the chart from the served ES module and read back, for every bar, the pixel halfway between
# the top of the bar and the top of its error bar (only the whisker can be there), and the pixels
# above a bar that has no bounds.
PROBE = """async (data) => {
  const { renderBarChart } = await import('/static/hatlab/charts.js');
  const box = document.createElement('div');
  box.style.width = '480px';
  const canvas = document.createElement('canvas');
  box.append(canvas);
  document.body.prepend(box);
  const chart = renderBarChart(canvas, data, { csvFilename: 'auc.csv' });
  const ctx = canvas.getContext('2d');
  const ratio = chart.currentDevicePixelRatio;
  const y = chart.scales.y;
  // The most opaque of five device pixels across x (a thin line is anti-aliased over two or three).
  const pixel = (x, py) => {
    const d = ctx.getImageData(Math.round(x * ratio) - 2, Math.round(py * ratio), 5, 1).data;
    let best = [0, 0, 0, 0];
    for (let k = 0; k < 20; k += 4) if (d[k + 3] > best[3]) best = Array.from(d.slice(k, k + 4));
    return best;
  };
  const probe = (d, i, top) => {
    const bar = chart.getDatasetMeta(d).data[i];
    return pixel(bar.x, (y.getPixelForValue(data.series[d].values[i]) + y.getPixelForValue(top)) / 2);
  };
  const link = canvas.nextElementSibling;
  return {
    whiskers: data.labels.map((_, i) => probe(0, i, data.series[0].upper[i])),
    noWhiskers: data.labels.map((_, i) => probe(1, i, data.series[1].values[i] + 0.15)),
    linkText: link.textContent,
    download: link.getAttribute('download'),
    href: link.getAttribute('href'),
  };
}"""


def test_bar_chart_draws_error_bars_and_offers_csv(live_server, browser_context):
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(live_server.url + "/login/")
    out = page.evaluate(PROBE, DATA)
    assert errors == []
    for r, g, b, a in out["whiskers"]:
        assert a > 200 and max(r, g, b) < 90, "an error bar is drawn above each bar with bounds"
    for pixel in out["noWhiskers"]:
        assert pixel[3] == 0, "nothing is drawn above a bar without bounds"
    assert (out["linkText"], out["download"]) == ("Download CSV", "auc.csv")
    csv = unquote(out["href"].removeprefix("data:text/csv;charset=utf-8,"))
    assert csv == (
        "label,AUC,AUC lower,AUC upper,random\r\nattention,0.6,0.5,0.8,0.5\r\nLIME,0.7,0.55,0.9,0.5\r\n"
    )
