import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

import {
  autoRender,
  type BarChartData,
  barChartConfig,
  csvDownloadLink,
  errorBarsPlugin,
  extent,
  renderBarChart,
  tableToCsv,
  validateChartData,
} from "../src/charts";

const DATA: BarChartData = {
  labels: ["attention", "grad L2", "LIME"],
  series: [
    { name: "AUC", values: [0.61, 0.58, 0.7], lower: [0.55, 0.5, 0.64], upper: [0.67, 0.66, 0.76] },
    { name: "κ", values: [0.2, null, -0.1] },
  ],
};

const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});

beforeAll(() => {
  // jsdom has no canvas: Chart.js then builds its configuration without drawing, and says so.
  HTMLCanvasElement.prototype.getContext = (() => null) as unknown as HTMLCanvasElement["getContext"];
});

afterAll(() => {
  expect(consoleError).toHaveBeenCalledWith(
    "Failed to create chart: can't acquire context from the given item",
  );
  consoleError.mockRestore();
});

describe("csv", () => {
  it("writes one row per label with each series' value and bounds", () => {
    expect(tableToCsv(DATA)).toBe(
      "label,AUC,AUC lower,AUC upper,κ\r\n" +
        "attention,0.61,0.55,0.67,0.2\r\n" +
        "grad L2,0.58,0.5,0.66,\r\n" +
        "LIME,0.7,0.64,0.76,-0.1\r\n",
    );
  });

  it("quotes separators and defuses spreadsheet formulas", () => {
    const csv = tableToCsv({
      labels: ['a,"b"', "=SUM(A1)", "-x"],
      series: [{ name: "v", values: [1, 2, 3] }],
    });
    expect(csv.split("\r\n").slice(1, 4)).toEqual(['"a,""b""",1', "'=SUM(A1),2", "'-x,3"]);
  });

  it("makes a download link carrying the CSV", () => {
    const link = csvDownloadLink(DATA, "auc.csv");
    expect(link.download).toBe("auc.csv");
    expect(link.textContent).toBe("Download CSV");
    expect(decodeURIComponent(link.href.replace("data:text/csv;charset=utf-8,", ""))).toBe(tableToCsv(DATA));
  });
});

describe("validation and config", () => {
  it("names the series and field whose length is wrong", () => {
    expect(() => validateChartData({ labels: ["a", "b"], series: [{ name: "x", values: [1] }] })).toThrow(
      "series[0].values must have 2 entries",
    );
    expect(() =>
      validateChartData({
        labels: ["a"],
        series: [
          { name: "x", values: [1] },
          { name: "y", values: [1], upper: [] },
        ],
      }),
    ).toThrow("series[1].upper must have 1 entries");
  });

  it("builds one dataset per series and an axis that covers the error bars", () => {
    expect(extent(DATA)).toEqual([-0.1, 0.76]);
    const config = barChartConfig(DATA);
    expect(config.data.labels).toEqual(DATA.labels);
    expect(config.data.datasets.map((d) => d.label)).toEqual(["AUC", "κ"]);
    expect(config.data.datasets[0].data).toEqual([0.61, 0.58, 0.7]);
    const bounds = (config.data.datasets[0] as unknown as { hatlabBounds: unknown }).hatlabBounds;
    expect(bounds).toEqual([
      [0.55, 0.67],
      [0.5, 0.66],
      [0.64, 0.76],
    ]);
    const y = config.options!.scales!.y as { suggestedMin: number; suggestedMax: number };
    expect([y.suggestedMin, y.suggestedMax]).toEqual([-0.1, 0.76]);
    expect(config.plugins).toContain(errorBarsPlugin);
  });
});

describe("error bars", () => {
  it("draws a whisker with caps from lower to upper for each bar that has bounds", () => {
    const ops: string[] = [];
    const ctx = new Proxy(
      {},
      {
        get:
          (_t, name) =>
          (...args: number[]) =>
            ops.push(`${String(name)}(${args.join(",")})`),
        set: () => true,
      },
    );
    const bar = (x: number) => ({ getProps: () => ({ x, width: 20 }) });
    const chart = {
      ctx,
      data: {
        datasets: [
          {
            hatlabBounds: [
              [1, 3],
              [null, null],
            ],
          },
          { data: [1] },
        ],
      },
      getDatasetMeta: (i: number) => ({
        hidden: false,
        yAxisID: "y",
        data: i === 0 ? [bar(10), bar(40)] : [bar(70)],
      }),
      scales: { y: { getPixelForValue: (v: number) => 100 - 10 * v } },
    };
    (errorBarsPlugin.afterDatasetsDraw as unknown as (c: unknown) => void)(chart);
    expect(ops).toEqual([
      "save()",
      "beginPath()",
      "moveTo(10,90)",
      "lineTo(10,70)",
      "moveTo(5,90)",
      "lineTo(15,90)",
      "moveTo(5,70)",
      "lineTo(15,70)",
      "stroke()",
      "restore()",
    ]);
  });
});

describe("rendering", () => {
  it("puts one CSV link after the canvas, also when drawn again", () => {
    const canvas = document.createElement("canvas");
    document.body.replaceChildren(canvas);
    const chart = renderBarChart(canvas, DATA, { csvFilename: "m.csv" });
    renderBarChart(canvas, DATA, { csvFilename: "m.csv" });
    expect(chart.config.data.labels).toEqual(DATA.labels);
    expect(document.querySelectorAll(".hatlab-csv-link")).toHaveLength(1);
    expect((canvas.nextElementSibling as HTMLAnchorElement).download).toBe("m.csv");
  });

  it("draws the canvases that name a json_script block", () => {
    document.body.innerHTML =
      '<script id="auc-data" type="application/json"></script><canvas data-hatlab-chart="auc-data"></canvas>';
    document.getElementById("auc-data")!.textContent = JSON.stringify(DATA);
    const charts = autoRender(document);
    expect(charts).toHaveLength(1);
    expect(charts[0].config.data.datasets).toHaveLength(2);
    expect((document.querySelector(".hatlab-csv-link") as HTMLAnchorElement).download).toBe("auc-data.csv");
  });
});
