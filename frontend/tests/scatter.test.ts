import type { ChartConfiguration } from "chart.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

import {
  autoRender,
  chartToCsv,
  csvDownloadLink,
  isScatter,
  renderChart,
  type ScatterChartData,
  scatterChartConfig,
  scatterExtent,
  scatterToCsv,
  validateScatterData,
} from "../src/charts";
import { cornerNotePlugin, cornerText, whiskerSegments, whiskersPlugin } from "../src/whiskers";

// The third selection has no faithfulness (y null) and an x far from the others: it is not drawn
// and must not stretch the x axis.
const DATA: ScatterChartData = {
  kind: "scatter",
  xLabel: "plausibility (ROC AUC vs SAM)",
  yLabel: "comprehensiveness AOPC",
  better: { corner: "top right", text: "plausible and faithful" },
  points: [
    { label: "attention", x: 0.62, xLower: 0.58, xUpper: 0.66, y: 0.1, yLower: 0.05, yUpper: 0.16 },
    { label: "LIME", x: 0.71, xLower: 0.65, xUpper: 0.8, y: 0.3, yLower: 0.22, yUpper: 0.35 },
    { label: "grad, L2", x: 0.95, xLower: 0.9, xUpper: 0.99, y: null, yLower: null, yUpper: null },
    { label: "random", x: 0.5, y: 0.02 },
  ],
};

const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});

beforeAll(() => {
  // jsdom has no canvas: Chart.js builds its configuration without drawing.
  HTMLCanvasElement.prototype.getContext = (() => null) as unknown as HTMLCanvasElement["getContext"];
});

afterAll(() => consoleError.mockRestore());

/** A 2D context that records its calls as text. */
function recorder(): { ctx: CanvasRenderingContext2D; ops: string[]; state: Record<string, unknown> } {
  const ops: string[] = [];
  const state: Record<string, unknown> = {};
  const ctx = new Proxy(state, {
    get:
      (_t, name) =>
      (...args: unknown[]) =>
        ops.push(`${String(name)}(${args.join(",")})`),
    set: (_t, name, value) => {
      state[String(name)] = value;
      return true;
    },
  }) as unknown as CanvasRenderingContext2D;
  return { ctx, ops, state };
}

describe("validation", () => {
  const bad = (patch: Record<string, unknown>, point: Record<string, unknown> = {}) =>
    validateScatterData({ ...DATA, ...patch, points: [{ ...DATA.points[0], ...point }] } as ScatterChartData);

  it("accepts the data and names the field that is wrong", () => {
    expect(validateScatterData(DATA)).toBe(DATA);
    expect(() => validateScatterData({ ...DATA, points: "x" } as unknown as ScatterChartData)).toThrow(
      "scatter data: points must be a list",
    );
    expect(() => bad({ yLabel: " " })).toThrow("scatter data: yLabel must name the axis");
    expect(() => bad({}, { label: 3 })).toThrow("points[0].label must be a string");
    expect(() => bad({}, { x: "0.5" })).toThrow("points[0].x must be a finite number or null");
    expect(() => bad({}, { y: Infinity })).toThrow("points[0].y must be a finite number or null");
    expect(() => bad({}, { yUpper: "hi" })).toThrow(
      "points[0].yUpper must be a finite number, null or absent",
    );
    expect(() => bad({}, { xLower: 0.7, xUpper: 0.6 })).toThrow(
      "points[0].xLower (0.7) is above its xUpper (0.6)",
    );
    expect(() => bad({ better: { corner: "middle", text: "x" } })).toThrow(
      'better must be { corner: "top right"',
    );
  });

  it("tells the kinds apart and refuses one it does not draw", () => {
    expect(isScatter(DATA)).toBe(true);
    expect(isScatter({ labels: [], series: [] })).toBe(false);
    expect(() => isScatter({ kind: "pie" } as unknown as ScatterChartData)).toThrow(
      'chart data: kind must be "bar" or "scatter", not "pie"',
    );
  });
});

describe("config", () => {
  it("draws one labelled dataset per point with both coordinates, in the point's own colour", () => {
    const config = scatterChartConfig(DATA);
    expect(config.type).toBe("scatter");
    const sets = config.data.datasets;
    expect(sets.map((d) => d.label)).toEqual(["attention", "LIME", "random"]);
    expect(sets.map((d) => d.data)).toEqual([
      [{ x: 0.62, y: 0.1 }],
      [{ x: 0.71, y: 0.3 }],
      [{ x: 0.5, y: 0.02 }],
    ]);
    // colours and shapes follow the point's place in the data, so a point left out shifts none
    expect(sets.map((d) => d.backgroundColor)).toEqual(["#2f6db5", "#d9822b", "#b5443b"]);
    expect(sets.map((d) => d.pointStyle)).toEqual(["circle", "triangle", "rectRot"]);
    expect(sets.map((d) => (d as unknown as { hatlabIntervals: unknown }).hatlabIntervals)).toEqual([
      [{ x: [0.58, 0.66], y: [0.05, 0.16] }],
      [{ x: [0.65, 0.8], y: [0.22, 0.35] }],
      [{ x: null, y: null }],
    ]);
    expect(config.options!.plugins!.legend!.display).toBe(true);
  });

  it("titles both axes and makes them cover the whiskers of the drawn points", () => {
    expect(scatterExtent(DATA, "x")).toEqual([0.5, 0.8]);
    expect(scatterExtent(DATA, "y")).toEqual([0.02, 0.35]);
    const { x, y } = scatterChartConfig(DATA).options!.scales! as Record<
      string,
      { type: string; title: { display: boolean; text: string }; suggestedMin: number; suggestedMax: number }
    >;
    expect([x.type, x.title, y.title]).toEqual([
      "linear",
      { display: true, text: DATA.xLabel },
      { display: true, text: DATA.yLabel },
    ]);
    expect(x.suggestedMin).toBeLessThan(0.5);
    expect(x.suggestedMax).toBeGreaterThan(0.8);
    expect(x.suggestedMax).toBeLessThan(0.9); // the undrawn point's 0.95 does not count
    expect(y.suggestedMin).toBeLessThan(0.02);
    expect(y.suggestedMax).toBeGreaterThan(0.35);
  });

  it("adds the whiskers and, when the data names it, the better corner's note", () => {
    const plugins = scatterChartConfig(DATA).plugins!;
    expect(plugins[0]).toBe(whiskersPlugin);
    expect(plugins.map((p) => p.id)).toEqual(["hatlabWhiskers", "hatlabCornerNote"]);
    expect(scatterChartConfig({ ...DATA, better: undefined }).plugins).toEqual([whiskersPlugin]);
  });

  it("shows a point's values with their intervals in its tooltip", () => {
    const label = scatterChartConfig(DATA).options!.plugins!.tooltip!.callbacks!.label as unknown as (
      item: unknown,
    ) => string[];
    // LIME is the second drawn dataset; the third ("random") comes after the undrawn point
    expect(label({ datasetIndex: 2, dataset: { label: "random" } })[1]).toBe(
      "plausibility (ROC AUC vs SAM): 0.500",
    );
    expect(label({ datasetIndex: 1, dataset: { label: "LIME" } })).toEqual([
      "LIME",
      "plausibility (ROC AUC vs SAM): 0.710 [0.650, 0.800]",
      "comprehensiveness AOPC: 0.300 [0.220, 0.350]",
    ]);
  });
});

describe("whiskers", () => {
  it("puts a capped whisker along each axis through each point", () => {
    const toX = (v: number) => 100 * v;
    const toY = (v: number) => 200 - 100 * v;
    const segments = whiskerSegments(
      [
        { x: 60, y: 150 },
        { x: 10, y: 20 },
        { x: 30, y: 40 },
      ],
      [{ x: [0.5, 0.7], y: [0.4, 0.6] }, null, { x: null, y: [1, 1.5] }],
      toX,
      toY,
      4,
    );
    expect(segments).toEqual([
      { x1: 50, y1: 150, x2: 70, y2: 150 },
      { x1: 50, y1: 146, x2: 50, y2: 154 },
      { x1: 70, y1: 146, x2: 70, y2: 154 },
      { x1: 60, y1: 160, x2: 60, y2: 140 },
      { x1: 56, y1: 160, x2: 64, y2: 160 },
      { x1: 56, y1: 140, x2: 64, y2: 140 },
      { x1: 30, y1: 100, x2: 30, y2: 50 },
      { x1: 26, y1: 100, x2: 34, y2: 100 },
      { x1: 26, y1: 50, x2: 34, y2: 50 },
    ]);
  });

  it("strokes each visible dataset's whiskers as one path in its colour", () => {
    const { ctx, ops, state } = recorder();
    const point = (x: number, y: number) => ({ getProps: () => ({ x, y }) });
    const chart = {
      ctx,
      data: {
        datasets: [
          { borderColor: "#2f6db5", hatlabIntervals: [{ x: [1, 3], y: null }] },
          { borderColor: "#d9822b", hatlabIntervals: [{ x: [1, 3], y: [1, 2] }] },
          { borderColor: "#3a9a5b" },
        ],
      },
      getDatasetMeta: (i: number) => ({ hidden: i === 1, data: [point(20, 50)] }),
      scales: {
        x: { getPixelForValue: (v: number) => 10 * v },
        y: { getPixelForValue: (v: number) => 100 - v },
      },
    };
    (whiskersPlugin.afterDatasetsDraw as unknown as (c: unknown) => void)(chart);
    expect(ops).toEqual([
      "save()",
      "beginPath()",
      "moveTo(10,50)",
      "lineTo(30,50)",
      "moveTo(10,46)",
      "lineTo(10,54)",
      "moveTo(30,46)",
      "lineTo(30,54)",
      "stroke()",
      "restore()",
    ]);
    expect(state.strokeStyle).toBe("#2f6db5");
  });

  it("writes the better corner's note inside that corner of the plot", () => {
    expect(cornerText("top right", "plausible and faithful")).toBe("plausible and faithful ↗");
    expect(cornerText("bottom left", "cheap")).toBe("↙ cheap");
    const { ctx, ops, state } = recorder();
    const chart = { ctx, chartArea: { left: 40, right: 400, top: 10, bottom: 300 } };
    const plugin = cornerNotePlugin("top right", "plausible and faithful");
    (plugin.beforeDatasetsDraw as unknown as (c: unknown) => void)(chart);
    expect(ops).toContain("fillText(plausible and faithful ↗,394,16)");
    expect([state.textAlign, state.textBaseline]).toEqual(["right", "top"]);
    const { ctx: ctx2, ops: ops2 } = recorder();
    (cornerNotePlugin("bottom left", "x").beforeDatasetsDraw as unknown as (c: unknown) => void)({
      ctx: ctx2,
      chartArea: chart.chartArea,
    });
    expect(ops2).toContain("fillText(↙ x,46,294)");
  });
});

describe("csv and rendering", () => {
  const CSV =
    "label,plausibility (ROC AUC vs SAM),plausibility (ROC AUC vs SAM) lower,plausibility (ROC AUC vs SAM) upper," +
    "comprehensiveness AOPC,comprehensiveness AOPC lower,comprehensiveness AOPC upper\r\n" +
    "attention,0.62,0.58,0.66,0.1,0.05,0.16\r\n" +
    "LIME,0.71,0.65,0.8,0.3,0.22,0.35\r\n" +
    '"grad, L2",0.95,0.9,0.99,,,\r\n' +
    "random,0.5,,,0.02,,\r\n";

  it("writes one row per point, also those not drawn: label, x with bounds, y with bounds", () => {
    expect(scatterToCsv(DATA)).toBe(CSV);
    expect(chartToCsv(DATA)).toBe(CSV);
    const link = csvDownloadLink(DATA, "pf.csv");
    expect(decodeURIComponent(link.href.replace("data:text/csv;charset=utf-8,", ""))).toBe(CSV);
  });

  it("draws the kind the data names, with its CSV link", () => {
    document.body.innerHTML =
      '<script id="pf" type="application/json"></script><canvas data-hatlab-chart="pf"></canvas>' +
      '<script id="bars" type="application/json"></script><canvas data-hatlab-chart="bars"></canvas>';
    document.getElementById("pf")!.textContent = JSON.stringify(DATA);
    document.getElementById("bars")!.textContent = JSON.stringify({
      labels: ["a"],
      series: [{ name: "v", values: [1] }],
    });
    const [scatter, bars] = autoRender(document);
    expect((scatter.config as ChartConfiguration).type).toBe("scatter");
    expect(scatter.config.data.datasets).toHaveLength(3);
    expect((bars.config as ChartConfiguration).type).toBe("bar");
    const links = document.querySelectorAll<HTMLAnchorElement>(".hatlab-csv-link");
    expect(Array.from(links, (l) => l.download)).toEqual(["pf.csv", "bars.csv"]);
    expect(decodeURIComponent(links[0].href.replace("data:text/csv;charset=utf-8,", ""))).toBe(CSV);
  });

  it("refuses to draw bad data, naming the field", () => {
    const canvas = document.createElement("canvas");
    expect(() => renderChart(canvas, { ...DATA, xLabel: "" })).toThrow(
      "scatter data: xLabel must name the axis",
    );
  });
});
