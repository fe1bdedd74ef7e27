/**
 * Bar charts for the dashboards: grouped bars with error bars (e.g. a metric per explanation
 * method with its bootstrap confidence interval) and a link that downloads the same table as CSV.
 *
 * Chart.js (MIT) draws the bars; Chart.js has no error bars of its own, so a small plugin here
 * draws the whiskers from each series' `lower`/`upper` arrays.
 *
 * Templates may call `renderBarChart` from this ES module, or mark a canvas with
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
  Title,
  Tooltip,
} from "chart.js";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Title, Tooltip);

export interface Series {
  name: string;
  values: Array<number | null>;
  lower?: Array<number | null>;
  upper?: Array<number | null>;
}

export interface BarChartData {
  labels: string[];
  series: Series[];
  title?: string;
  yLabel?: string;
}

export interface BarChartOptions {
  /** Name of the downloaded CSV file (default "chart.csv"); `false` adds no link. */
  csvFilename?: string | false;
}

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

/** The smallest and largest of all values and bounds (null when there are none). */
export function extent(data: BarChartData): [number, number] | null {
  const all = data.series.flatMap((s) => [...s.values, ...(s.lower ?? []), ...(s.upper ?? [])]);
  const finite = all.filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  return finite.length ? [Math.min(...finite), Math.max(...finite)] : null;
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

/** A link that downloads the table as a CSV file (a data: URL, so nothing leaves the page). */
export function csvDownloadLink(
  data: BarChartData,
  filename = "chart.csv",
  doc: Document = document,
): HTMLAnchorElement {
  const link = doc.createElement("a");
  link.className = "hatlab-csv-link";
  link.href = `data:text/csv;charset=utf-8,${encodeURIComponent(tableToCsv(data))}`;
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
        legend: { display: data.series.length > 1 },
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

/** Draw `data` on `canvas` and put a CSV download link after it; returns the chart. */
export function renderBarChart(
  canvas: HTMLCanvasElement,
  data: BarChartData,
  options: BarChartOptions = {},
): Chart<"bar"> {
  const chart = new Chart(canvas, barChartConfig(data));
  if (options.csvFilename !== false) {
    const next = canvas.nextElementSibling;
    if (next?.classList.contains("hatlab-csv-link")) next.remove();
    canvas.after(csvDownloadLink(data, options.csvFilename ?? "chart.csv", canvas.ownerDocument));
  }
  return chart;
}

/** Draw every `canvas[data-hatlab-chart]` from the json_script element its attribute names. */
export function autoRender(doc: Document = document): Chart<"bar">[] {
  const charts: Chart<"bar">[] = [];
  doc.querySelectorAll<HTMLCanvasElement>("canvas[data-hatlab-chart]").forEach((canvas) => {
    const source = doc.getElementById(canvas.dataset.hatlabChart ?? "");
    if (!source?.textContent) return;
    const name = canvas.dataset.csvName || `${canvas.dataset.hatlabChart}.csv`;
    charts.push(
      renderBarChart(canvas, JSON.parse(source.textContent) as BarChartData, { csvFilename: name }),
    );
  });
  return charts;
}

if (typeof document !== "undefined" && document.querySelector("canvas[data-hatlab-chart]")) {
  autoRender(document);
}
