/**
 * Charts for the dashboards, each with a link that downloads the same table as CSV:
 * - bar charts: grouped bars with error bars (e.g. a metric per explanation method with its
 *   bootstrap confidence interval);
 * - scatter charts (`kind: "scatter"`): one labelled point per method with its intervals on both
 *   axes as whiskers, and a note on the corner where the better points lie (e.g. plausibility
 *   against faithfulness).
 *
 * Chart.js (MIT) draws the bars and points; Chart.js has no error bars of its own, so a small plugin
 * here draws the bars' whiskers from each series' `lower`/`upper` arrays, and whiskers.ts the points'.
 *
 * Templates may call `renderChart` (or `renderBarChart`) from this ES module, or mark a canvas with
 * `data-hatlab-chart="<id of a json_script element>"` and let `autoRender` draw it.
 */

import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  type ChartConfiguration,
  Legend,
  LinearScale,
  type Plugin,
  PointElement,
  ScatterController,
  Title,
  Tooltip,
  type TooltipItem,
} from "chart.js";

import { CORNERS, type Corner, cornerNotePlugin, type Interval2D, whiskersPlugin } from "./whiskers";

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  LinearScale,
  Legend,
  PointElement,
  ScatterController,
  Title,
  Tooltip,
);

export interface Series {
  name: string;
  values: Array<number | null>;
  lower?: Array<number | null>;
  upper?: Array<number | null>;
}

export interface BarChartData {
  kind?: "bar";
  labels: string[];
  series: Series[];
  title?: string;
  yLabel?: string;
}

/** One point of a scatter chart: its label, position and (optionally) interval on each axis. */
export interface ScatterPoint {
  label: string;
  x: number | null;
  y: number | null;
  xLower?: number | null;
  xUpper?: number | null;
  yLower?: number | null;
  yUpper?: number | null;
}

export interface ScatterChartData {
  kind: "scatter";
  points: ScatterPoint[];
  xLabel: string;
  yLabel: string;
  title?: string;
  /** Where the better points lie and what they are, e.g. `{ corner: "top right", text: "plausible and faithful" }`. */
  better?: { corner: Corner; text: string };
}

export type ChartData = BarChartData | ScatterChartData;

export interface BarChartOptions {
  /** Name of the downloaded CSV file (default "chart.csv"); `false` adds no link. */
  csvFilename?: string | false;
  /** Fill the canvas's parent (a `.chart-canvas` box whose height the page sets) instead of keeping
   * Chart.js's 2:1 shape, which leaves a phone-width chart no room for its plot below the legend. */
  fillBox?: boolean;
}

/** The legend under the plot, in small type with small swatches: long series names wrap into rows
 * beneath the plot instead of eating into it. */
const LEGEND_LABELS = { boxWidth: 12, boxHeight: 12, font: { size: 11 } };

const PALETTE = ["#2f6db5", "#d9822b", "#3a9a5b", "#b5443b", "#7a5bb5", "#8c6d3f", "#c55a9c", "#5f6b73"];

/** Check that every series has one value (and bound) per label; throws naming the bad field. */
export function validateChartData(data: BarChartData): BarChartData {
  if (!data || !Array.isArray(data.labels)) throw new Error("chart data: labels must be a list");
  if (!Array.isArray(data.series)) throw new Error("chart data: series must be a list");
  const n = data.labels.length;
  data.series.forEach((s, i) => {
    if (typeof s.name !== "string") throw new Error(`chart data: series[${i}].name must be a string`);
    for (const key of ["values", "lower", "upper"] as const) {
      const arr = s[key];
      if (key !== "values" && arr === undefined) continue;
      if (!Array.isArray(arr) || arr.length !== n) {
        throw new Error(`chart data: series[${i}].${key} must have ${n} entries (one per label)`);
      }
    }
  });
  return data;
}

/** Whether `data` is a scatter chart's (its `kind`); throws on a kind no chart here draws. */
export function isScatter(data: ChartData): data is ScatterChartData {
  const kind = (data as { kind?: unknown } | null)?.kind;
  if (kind !== undefined && kind !== "bar" && kind !== "scatter") {
    throw new Error(`chart data: kind must be "bar" or "scatter", not ${JSON.stringify(kind)}`);
  }
  return kind === "scatter";
}

const isNumberOrNull = (v: unknown): v is number | null =>
  v === null || (typeof v === "number" && Number.isFinite(v));

/**
 * Check a scatter chart's points (a label, finite or null coordinates and bounds, no lower bound
 * above its upper one) and axis titles; throws naming the bad point and field.
 */
export function validateScatterData(data: ScatterChartData): ScatterChartData {
  if (!data || !Array.isArray(data.points)) throw new Error("scatter data: points must be a list");
  for (const key of ["xLabel", "yLabel"] as const) {
    if (typeof data[key] !== "string" || !data[key].trim()) {
      throw new Error(`scatter data: ${key} must name the axis`);
    }
  }
  data.points.forEach((p, i) => {
    if (!p || typeof p.label !== "string")
      throw new Error(`scatter data: points[${i}].label must be a string`);
    for (const axis of ["x", "y"] as const) {
      if (!isNumberOrNull(p[axis])) {
        throw new Error(`scatter data: points[${i}].${axis} must be a finite number or null`);
      }
      const lo = p[`${axis}Lower`];
      const hi = p[`${axis}Upper`];
      for (const [key, v] of [
        [`${axis}Lower`, lo],
        [`${axis}Upper`, hi],
      ] as const) {
        if (v !== undefined && !isNumberOrNull(v)) {
          throw new Error(`scatter data: points[${i}].${key} must be a finite number, null or absent`);
        }
      }
      if (typeof lo === "number" && typeof hi === "number" && lo > hi) {
        throw new Error(`scatter data: points[${i}].${axis}Lower (${lo}) is above its ${axis}Upper (${hi})`);
      }
    }
  });
  if (data.better !== undefined) {
    const { corner, text } = data.better ?? {};
    if (!CORNERS.includes(corner) || typeof text !== "string") {
      throw new Error(
        `scatter data: better must be { corner: ${CORNERS.map((c) => `"${c}"`).join(" | ")}, text }`,
      );
    }
  }
  return data;
}

function span(values: Array<number | null | undefined>): [number, number] | null {
  const finite = values.filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  return finite.length ? [Math.min(...finite), Math.max(...finite)] : null;
}

/** The smallest and largest of all values and bounds (null when there are none). */
export function extent(data: BarChartData): [number, number] | null {
  return span(data.series.flatMap((s) => [...s.values, ...(s.lower ?? []), ...(s.upper ?? [])]));
}

/** The range of the drawn points' values and bounds on `axis` (null when no point is drawn). */
export function scatterExtent(data: ScatterChartData, axis: "x" | "y"): [number, number] | null {
  const drawn = data.points.filter((p) => p.x !== null && p.y !== null);
  return span(drawn.flatMap((p) => [p[axis], p[`${axis}Lower`], p[`${axis}Upper`]]));
}

function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  // A cell starting with = + - @ would run as a formula in a spreadsheet: quote it as text.
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The chart's table as CSV: one row per label; per series its value and, when given, its bounds. */
export function tableToCsv(data: BarChartData): string {
  validateChartData(data);
  const header: string[] = ["label"];
  for (const s of data.series) {
    header.push(s.name);
    if (s.lower) header.push(`${s.name} lower`);
    if (s.upper) header.push(`${s.name} upper`);
  }
  const rows = data.labels.map((label, i) => {
    const row: Array<string | number | null> = [label];
    for (const s of data.series) {
      row.push(s.values[i]);
      if (s.lower) row.push(s.lower[i]);
      if (s.upper) row.push(s.upper[i]);
    }
    return row;
  });
  return [header, ...rows].map((row) => row.map(csvCell).join(",")).join("\r\n") + "\r\n";
}

/** A scatter chart's table as CSV: one row per point, its label, x with bounds, y with bounds. */
export function scatterToCsv(data: ScatterChartData): string {
  validateScatterData(data);
  const header = ["label"];
  for (const name of [data.xLabel, data.yLabel]) header.push(name, `${name} lower`, `${name} upper`);
  const rows = data.points.map((p) => [p.label, p.x, p.xLower, p.xUpper, p.y, p.yLower, p.yUpper]);
  return [header, ...rows].map((row) => row.map(csvCell).join(",")).join("\r\n") + "\r\n";
}

/** The CSV of a chart of either kind. */
export function chartToCsv(data: ChartData): string {
  return isScatter(data) ? scatterToCsv(data) : tableToCsv(data);
}

/** A link that downloads the table as a CSV file (a data: URL, so nothing leaves the page). */
export function csvDownloadLink(
  data: ChartData,
  filename = "chart.csv",
  doc: Document = document,
): HTMLAnchorElement {
  const link = doc.createElement("a");
  link.className = "hatlab-csv-link";
  link.href = `data:text/csv;charset=utf-8,${encodeURIComponent(chartToCsv(data))}`;
  link.download = filename;
  link.textContent = "Download CSV";
  return link;
}

/** Draws each bar's [lower, upper] whisker with caps; bars without bounds get none. */
export const errorBarsPlugin: Plugin<"bar"> = {
  id: "hatlabErrorBars",
  afterDatasetsDraw(chart) {
    const ctx = chart.ctx;
    chart.data.datasets.forEach((dataset, d) => {
      const bounds = (dataset as { hatlabBounds?: Array<[number | null, number | null]> }).hatlabBounds;
      const meta = chart.getDatasetMeta(d);
      if (!bounds || meta.hidden) return;
      const scale = chart.scales[meta.yAxisID ?? "y"];
      ctx.save();
      ctx.strokeStyle = "#222";
      ctx.lineWidth = 1.5;
      meta.data.forEach((bar, i) => {
        const [lo, hi] = bounds[i] ?? [null, null];
        if (lo === null || hi === null) return;
        const { x, width } = bar.getProps(["x", "width"], true) as { x: number; width: number };
        const cap = Math.max(3, width * 0.25);
        const yLo = scale.getPixelForValue(lo);
        const yHi = scale.getPixelForValue(hi);
        ctx.beginPath();
        ctx.moveTo(x, yLo);
        ctx.lineTo(x, yHi);
        ctx.moveTo(x - cap, yLo);
        ctx.lineTo(x + cap, yLo);
        ctx.moveTo(x - cap, yHi);
        ctx.lineTo(x + cap, yHi);
        ctx.stroke();
      });
      ctx.restore();
    });
  },
};

/** The Chart.js configuration for `data`: one dataset per series, axis range covering the bounds. */
export function barChartConfig(data: BarChartData): ChartConfiguration<"bar"> {
  validateChartData(data);
  const range = extent(data);
  const datasets = data.series.map((s, i) => ({
    label: s.name,
    data: s.values,
    backgroundColor: PALETTE[i % PALETTE.length],
    hatlabBounds: s.values.map((_, j): [number | null, number | null] => [
      s.lower?.[j] ?? null,
      s.upper?.[j] ?? null,
    ]),
  }));
  return {
    type: "bar",
    data: { labels: [...data.labels], datasets },
    options: {
      responsive: true,
      animation: false,
      plugins: {
        legend: { display: data.series.length > 1, position: "bottom", labels: LEGEND_LABELS },
        title: { display: Boolean(data.title), text: data.title ?? "" },
      },
      scales: {
        y: {
          suggestedMin: range ? Math.min(0, range[0]) : 0,
          suggestedMax: range ? Math.max(0, range[1]) : 1,
          title: { display: Boolean(data.yLabel), text: data.yLabel ?? "" },
        },
      },
    },
    plugins: [errorBarsPlugin],
  };
}

/** Shapes of the points, one per point after its colour, so a point is found in the legend without colour. */
const POINT_STYLES = ["circle", "triangle", "rect", "rectRot", "rectRounded", "star", "crossRot"] as const;

function bounds(lo: number | null | undefined, hi: number | null | undefined): [number, number] | null {
  return typeof lo === "number" && typeof hi === "number" ? [lo, hi] : null;
}

function padded(range: [number, number] | null): { suggestedMin?: number; suggestedMax?: number } {
  if (!range) return {};
  const pad = (range[1] - range[0]) * 0.08 || 0.05;
  return { suggestedMin: range[0] - pad, suggestedMax: range[1] + pad };
}

function withInterval(value: number, lo?: number | null, hi?: number | null): string {
  const fmt = (v: number) => v.toFixed(3);
  return typeof lo === "number" && typeof hi === "number"
    ? `${fmt(value)} [${fmt(lo)}, ${fmt(hi)}]`
    : fmt(value);
}

/**
 * The Chart.js configuration of a scatter chart: one dataset per point that has both coordinates
 * (labelled in the legend, its own colour and shape), its intervals for the whiskers, titled axes
 * whose ranges cover the whiskers, and the better corner's note. Points without a coordinate are
 * left out of the plot (the CSV keeps them).
 */
export function scatterChartConfig(data: ScatterChartData): ChartConfiguration<"scatter"> {
  validateScatterData(data);
  const shown = data.points.flatMap((p, i) =>
    p.x === null || p.y === null ? [] : [{ p, i, x: p.x, y: p.y }],
  );
  const datasets = shown.map(({ p, i, x, y }) => {
    const color = PALETTE[i % PALETTE.length];
    const interval: Interval2D = { x: bounds(p.xLower, p.xUpper), y: bounds(p.yLower, p.yUpper) };
    return {
      label: p.label,
      data: [{ x, y }],
      backgroundColor: color,
      borderColor: color,
      pointStyle: POINT_STYLES[i % POINT_STYLES.length],
      pointRadius: 6,
      borderWidth: 2,
      pointHoverRadius: 8,
      hatlabIntervals: [interval],
    };
  });
  const axis = (text: string, range: [number, number] | null) => ({
    type: "linear" as const,
    title: { display: true, text },
    ...padded(range),
  });
  return {
    type: "scatter",
    data: { datasets },
    options: {
      responsive: true,
      animation: false,
      plugins: {
        legend: { display: true, position: "bottom", labels: { ...LEGEND_LABELS, usePointStyle: true } },
        title: { display: Boolean(data.title), text: data.title ?? "" },
        tooltip: {
          callbacks: {
            label: (item: TooltipItem<"scatter">) => {
              const point = shown[item.datasetIndex];
              if (!point) return item.dataset.label ?? "";
              const { p, x, y } = point;
              return [
                p.label,
                `${data.xLabel}: ${withInterval(x, p.xLower, p.xUpper)}`,
                `${data.yLabel}: ${withInterval(y, p.yLower, p.yUpper)}`,
              ];
            },
          },
        },
      },
      scales: {
        x: axis(data.xLabel, scatterExtent(data, "x")),
        y: axis(data.yLabel, scatterExtent(data, "y")),
      },
    },
    plugins: data.better
      ? [whiskersPlugin, cornerNotePlugin(data.better.corner, data.better.text)]
      : [whiskersPlugin],
  };
}

function addCsvLink(canvas: HTMLCanvasElement, data: ChartData, options: BarChartOptions): void {
  if (options.csvFilename === false) return;
  const box = canvas.parentElement;
  const anchor = box?.classList.contains("chart-canvas") ? box : canvas;
  const next = anchor.nextElementSibling;
  if (next?.classList.contains("hatlab-csv-link")) next.remove();
  anchor.after(csvDownloadLink(data, options.csvFilename ?? "chart.csv", canvas.ownerDocument));
}

/** Draw `data` on `canvas` and put a CSV download link after it; returns the chart. */
export function renderBarChart(
  canvas: HTMLCanvasElement,
  data: BarChartData,
  options: BarChartOptions = {},
): Chart<"bar"> {
  const config = barChartConfig(data);
  if (options.fillBox) config.options = { ...config.options, maintainAspectRatio: false };
  const chart = new Chart(canvas, config);
  addCsvLink(canvas, data, options);
  return chart;
}

/** Draw a scatter chart on `canvas` and put a CSV download link after it; returns the chart. */
export function renderScatterChart(
  canvas: HTMLCanvasElement,
  data: ScatterChartData,
  options: BarChartOptions = {},
): Chart<"scatter"> {
  const config = scatterChartConfig(data);
  if (options.fillBox) config.options = { ...config.options, maintainAspectRatio: false };
  const chart = new Chart(canvas, config);
  addCsvLink(canvas, data, options);
  return chart;
}

/** Draw a chart of the kind `data` names (bars when it names none). */
export function renderChart(
  canvas: HTMLCanvasElement,
  data: ChartData,
  options: BarChartOptions = {},
): Chart<"bar"> | Chart<"scatter"> {
  return isScatter(data) ? renderScatterChart(canvas, data, options) : renderBarChart(canvas, data, options);
}

/** Draw every `canvas[data-hatlab-chart]` from the json_script element its attribute names. */
export function autoRender(doc: Document = document): Array<Chart<"bar"> | Chart<"scatter">> {
  const charts: Array<Chart<"bar"> | Chart<"scatter">> = [];
  doc.querySelectorAll<HTMLCanvasElement>("canvas[data-hatlab-chart]").forEach((canvas) => {
    const source = doc.getElementById(canvas.dataset.hatlabChart ?? "");
    if (!source?.textContent) return;
    const name = canvas.dataset.csvName || `${canvas.dataset.hatlabChart}.csv`;
    charts.push(renderChart(canvas, JSON.parse(source.textContent) as ChartData, { csvFilename: name }));
  });
  return charts;
}

if (typeof document !== "undefined" && document.querySelector("canvas[data-hatlab-chart]")) {
  autoRender(document);
}
