/**
 * The dashboards of a study: fetch the figures from the dashboards API, wait (with a progress bar)
 * while a background job computes them, then draw them — notes, bar and scatter charts with
 * confidence intervals and a CSV link each, and tables — or, on a text's page, its human maps, CAM / SAM and
 * the machine map as an overlay over the words (Sen et al. 2020 Figure 1).
 *
 * Markup: `#hatlab-dashboard[data-kind=study|similarity|text][data-api=<url>]` holding
 * `[data-dashboard-status]` and `[data-section=…]` containers (see the dashboard templates).
 * Every piece of server text is written with textContent: document words and labels never become markup.
 */

import type { Chart } from "chart.js";

import { type BarChartData, type ChartData, renderChart, type ScatterChartData } from "./charts";
import "./dashboard.css";
import { applyState, parseState, type ProgressState } from "./progress";

/** A chart of the dashboards API: a bar or scatter chart's data with its id, title and server CSV. */
export type ChartSpec = (BarChartData | ScatterChartData) & {
  id: string;
  title: string;
  csv?: string;
};

export interface LinkCell {
  text: string;
  href: string;
}

export type Cell = string | number | boolean | null | LinkCell;

export interface TableSpec {
  id: string;
  title: string;
  columns: string[];
  rows: Cell[][];
  csv?: string;
}

export interface DashboardData {
  status: string;
  notes?: string[];
  charts?: ChartSpec[];
  tables?: TableSpec[];
  [key: string]: unknown;
}

export interface HumanMap {
  name: string;
  annotator: string;
  label: string | null;
  map: number[];
}

export interface MachineMap {
  key: string;
  /** run name · method code (stable); ``name`` is the same with the method's readable name. */
  label: string;
  name?: string;
  target: string | null;
  scores: number[] | null;
  levels: number[] | null;
  auc: Record<string, number | null>;
}

export interface TextData {
  item: number;
  document: { id: number; external_id: string; label: string };
  words: string[];
  breaks: number[];
  human: HumanMap[];
  cam: number[] | null;
  sam: number[] | null;
  machine: MachineMap[];
  previous: number | null;
  next: number | null;
}

export interface LoadOptions {
  fetchImpl?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  intervalMs?: number;
  maxIntervalMs?: number;
  onProgress?: (state: ProgressState) => void;
}

/** An answer that ended the wait without figures (a failed job, a refused request). */
export class DashboardError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DashboardError";
  }
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function problem(body: unknown, status: number): string {
  if (body && typeof body === "object") {
    const parts = Object.entries(body as Record<string, unknown>).map(([field, value]) => {
      const text = Array.isArray(value) ? value.join(" ") : String(value);
      return field === "detail" ? text : `${field}: ${text}`;
    });
    if (parts.length) return parts.join("; ");
  }
  return `the server answered ${status}`;
}

/**
 * GET `url` until the dashboard is computed: a 202 carries a job's progress (reported through
 * `onProgress`) and is asked again after `intervalMs`; a network failure doubles the wait (up to
 * `maxIntervalMs`). Resolves with the 200 body; rejects with a DashboardError on a failed job or an
 * error answer.
 */
export async function loadDashboard<T = DashboardData>(url: string, options: LoadOptions = {}): Promise<T> {
  const fetchImpl = options.fetchImpl ?? globalThis.fetch.bind(globalThis);
  const sleep = options.sleep ?? defaultSleep;
  const base = options.intervalMs ?? 1500;
  const ceiling = options.maxIntervalMs ?? 30000;
  let wait = base;
  for (;;) {
    let response: Response;
    try {
      response = await fetchImpl(url, {
        credentials: "same-origin",
        headers: { Accept: "application/json", "X-Requested-With": "XMLHttpRequest" },
      });
    } catch {
      await sleep(wait);
      wait = Math.min(wait * 2, ceiling);
      continue;
    }
    let body: unknown = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    if (response.status === 202) {
      const state = parseState(body);
      options.onProgress?.(state);
      if (state.status === "failed") {
        throw new DashboardError(`Computing the dashboard failed: ${state.message || "no message"}`);
      }
      wait = base;
      await sleep(wait);
      continue;
    }
    if (!response.ok) throw new DashboardError(problem(body, response.status));
    return body as T;
  }
}

/** `value` for a table cell: numbers to three decimals (integers as they are), missing as a dash. */
export function formatNumber(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  return Number.isInteger(value) ? String(value) : value.toFixed(3);
}

/** Whether `href` is a link inside this site (a path; never `javascript:` or another host). */
export function isSafeHref(href: unknown): href is string {
  return typeof href === "string" && href.startsWith("/") && !href.startsWith("//");
}

function el<K extends keyof HTMLElementTagNameMap>(
  doc: Document,
  tag: K,
  text?: string,
  className?: string,
): HTMLElementTagNameMap[K] {
  const node = doc.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function csvLink(doc: Document, href: string | undefined, text: string): HTMLAnchorElement | null {
  if (!isSafeHref(href)) return null;
  const link = el(doc, "a", text, "hatlab-server-csv");
  link.href = href;
  link.setAttribute("download", "");
  return link;
}

/** The notes that explain misleading values, as a list (the section stays hidden when there are none). */
export function renderNotes(container: HTMLElement, notes: string[] = []): void {
  const doc = container.ownerDocument;
  container.replaceChildren();
  container.hidden = notes.length === 0;
  if (!notes.length) return;
  container.classList.add("dashboard-notes");
  container.append(el(doc, "h2", "Read with care"));
  const list = el(doc, "ul");
  for (const note of notes) list.append(el(doc, "li", note));
  container.append(list);
}

/** The data a chart spec draws (its title is the figure's caption, not drawn on the canvas). */
export function chartData(spec: ChartSpec): ChartData {
  const { id: _id, title: _title, csv: _csv, ...data } = spec;
  return data;
}

/** One figure per chart: its title, the bar or scatter chart with its intervals and both CSV links. */
export function renderCharts(container: HTMLElement, specs: ChartSpec[] = []): Record<string, Chart> {
  const doc = container.ownerDocument;
  const charts: Record<string, Chart> = {};
  container.replaceChildren();
  for (const spec of specs) {
    const figure = el(doc, "figure", undefined, "dashboard-chart");
    figure.dataset.chart = spec.id;
    figure.append(el(doc, "figcaption", spec.title));
    const box = el(doc, "div", undefined, "chart-box");
    const canvas = el(doc, "canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", spec.title);
    const sized = el(doc, "div", undefined, "chart-canvas");
    sized.append(canvas);
    box.append(sized);
    figure.append(box);
    container.append(figure);
    charts[spec.id] = renderChart(canvas, chartData(spec), { csvFilename: `${spec.id}.csv`, fillBox: true });
    const link = csvLink(doc, spec.csv, "CSV (API)");
    if (link) box.append(" ", link);
  }
  return charts;
}

function renderCell(doc: Document, value: Cell): Node {
  if (value !== null && typeof value === "object") {
    if (isSafeHref(value.href)) {
      const link = el(doc, "a", value.text);
      link.href = value.href;
      return link;
    }
    return doc.createTextNode(value.text);
  }
  if (typeof value === "number") return doc.createTextNode(formatNumber(value));
  if (value === null || value === undefined) return doc.createTextNode("—");
  return doc.createTextNode(String(value));
}

/** A table with its title and a CSV link; numeric columns are right-aligned. */
export function renderTable(container: HTMLElement, spec: TableSpec): HTMLTableElement {
  const doc = container.ownerDocument;
  const section = el(doc, "section", undefined, "dashboard-table");
  section.dataset.table = spec.id;
  const head = el(doc, "div", undefined, "table-head");
  head.append(el(doc, "h2", spec.title));
  const link = csvLink(doc, spec.csv, "Download CSV");
  if (link) head.append(link);
  section.append(head);
  const wrap = el(doc, "div", undefined, "table-scroll");
  const table = el(doc, "table", undefined, "table");
  const numeric = spec.columns.map(
    (_, j) =>
      spec.rows.some((r) => typeof r[j] === "number") &&
      spec.rows.every((r) => r[j] === null || typeof r[j] === "number"),
  );
  const headRow = el(doc, "tr");
  spec.columns.forEach((name, j) => {
    const th = el(doc, "th", name, numeric[j] ? "num" : undefined);
    th.scope = "col";
    headRow.append(th);
  });
  table.append(el(doc, "thead"));
  table.tHead!.append(headRow);
  const body = el(doc, "tbody");
  for (const row of spec.rows) {
    const tr = el(doc, "tr");
    row.forEach((value, j) => {
      const td = el(doc, "td", undefined, numeric[j] ? "num" : undefined);
      td.append(renderCell(doc, value));
      tr.append(td);
    });
    body.append(tr);
  }
  table.append(body);
  wrap.append(table);
  section.append(wrap);
  container.append(section);
  return table;
}

/** The CSS class of a signed relevance level (the heat scale of machine.css). */
export function levelClass(level: number): string {
  if (!level) return "heat-0";
  const step = Math.min(10, Math.abs(Math.round(level)));
  return `heat-${level > 0 ? "p" : "n"}${step}`;
}

/** The words of a text as spans (with line breaks), each marked with `mark(i)`'s classes and data. */
export function wordLine(
  doc: Document,
  words: string[],
  breaks: number[],
  mark: (i: number, span: HTMLSpanElement) => void,
): DocumentFragment {
  const breakSet = new Set(breaks);
  const fragment = doc.createDocumentFragment();
  words.forEach((word, i) => {
    if (breakSet.has(i)) fragment.append(doc.createElement("br"));
    const span = el(doc, "span", word, "w");
    span.dataset.index = String(i);
    mark(i, span);
    fragment.append(span, " ");
  });
  return fragment;
}

/** The human references a text offers for the overlay: each HAM, then CAM and SAM when there are. */
export function humanReferences(data: TextData): Array<{ name: string; map: number[] }> {
  const refs = data.human.map((h) => ({ name: h.name, map: h.map }));
  if (data.cam) refs.push({ name: "CAM", map: data.cam });
  if (data.sam) refs.push({ name: "SAM", map: data.sam });
  return refs;
}

/** Draw the overlay: every word shaded by the machine's level and outlined where `human` selects it. */
export function renderOverlay(
  target: HTMLElement,
  data: TextData,
  machine: MachineMap,
  human: number[] | null,
): void {
  const doc = target.ownerDocument;
  target.replaceChildren(
    wordLine(doc, data.words, data.breaks, (i, span) => {
      const level = machine.levels?.[i] ?? 0;
      span.classList.add(levelClass(level));
      const score = machine.scores?.[i];
      if (typeof score === "number") {
        span.dataset.score = String(score);
        span.title = `relevance ${score.toPrecision(3)}`;
      }
      const on = human?.[i] === 1;
      span.dataset.human = on ? "1" : "0";
      if (on) span.classList.add("hat-human");
    }),
  );
  target.dataset.machine = machine.key;
}

function mapRow(
  doc: Document,
  data: TextData,
  title: string,
  detail: string,
  values: number[],
  kind: string,
): HTMLElement {
  const block = el(doc, "div", undefined, "map-row");
  block.dataset.map = title;
  const heading = el(doc, "h3", title);
  if (detail) heading.append(" ", el(doc, "span", detail, "muted"));
  block.append(heading);
  const line = el(doc, "p", undefined, "heat-text");
  line.dataset.kind = kind;
  line.append(
    wordLine(doc, data.words, data.breaks, (i, span) => {
      span.classList.add(levelClass(kind === "machine" ? values[i] : values[i] ? 10 : 0));
    }),
  );
  block.append(line);
  return block;
}

function select(doc: Document, id: string, label: string, options: string[][], chosen: string): HTMLElement {
  const wrap = el(doc, "div");
  const lab = el(doc, "label", label);
  lab.htmlFor = id;
  const box = el(doc, "select");
  box.id = id;
  for (const [value, text] of options) {
    const option = el(doc, "option", text);
    option.value = value;
    option.selected = value === chosen;
    box.append(option);
  }
  wrap.append(lab, box);
  return wrap;
}

/** A text's page: navigation, the overlay with its pickers, and one row per human and machine map. */
export function renderText(root: HTMLElement, data: TextData): void {
  const doc = root.ownerDocument;
  const nav = root.querySelector<HTMLElement>("[data-section=nav]");
  const pageUrl = root.dataset.pageUrl ?? "";
  const query = root.dataset.query ?? "";
  if (nav) {
    nav.replaceChildren();
    for (const [item, text] of [
      [data.previous, "← Previous text"],
      [data.next, "Next text →"],
    ] as Array<[number | null, string]>) {
      if (item === null) continue;
      const href = pageUrl.replace(/\/\d+\/$/, `/${item}/`) + (query ? `?${query}` : "");
      if (!isSafeHref(href)) continue;
      const link = el(doc, "a", text, "button");
      link.href = href;
      nav.append(link);
    }
  }
  const overlay = root.querySelector<HTMLElement>("[data-section=overlay]");
  const refs = humanReferences(data);
  const usable = data.machine.filter((m) => m.levels !== null);
  if (overlay) {
    overlay.hidden = usable.length === 0;
    const controls = overlay.querySelector<HTMLElement>(".overlay-controls");
    const line = overlay.querySelector<HTMLElement>("[data-overlay]");
    const auc = overlay.querySelector<HTMLElement>("[data-overlay-auc]");
    if (controls && line && usable.length) {
      const defaultRef = refs.find((r) => r.name === "CAM") ?? refs[0];
      controls.replaceChildren(
        select(
          doc,
          "overlay-machine",
          "Machine map",
          usable.map((m) => [m.key, m.name ?? m.label]),
          usable[0].key,
        ),
        select(
          doc,
          "overlay-human",
          "Human map",
          refs.map((r) => [r.name, r.name]),
          defaultRef?.name ?? "",
        ),
      );
      const draw = () => {
        const machine = usable.find(
          (m) => m.key === controls.querySelector<HTMLSelectElement>("#overlay-machine")!.value,
        )!;
        const refName = controls.querySelector<HTMLSelectElement>("#overlay-human")!.value;
        const ref = refs.find((r) => r.name === refName) ?? null;
        renderOverlay(line, data, machine, ref ? ref.map : null);
        if (auc) {
          const parts = Object.entries(machine.auc).map(
            ([name, value]) => `ROC AUC vs ${name}: ${formatNumber(value)}`,
          );
          auc.textContent = [machine.target ? `explains “${machine.target}”` : "", ...parts]
            .filter(Boolean)
            .join(" · ");
        }
      };
      controls.addEventListener("change", draw);
      draw();
    }
  }
  const maps = root.querySelector<HTMLElement>("[data-maps]");
  if (maps) {
    maps.replaceChildren();
    data.human.forEach((h) =>
      maps.append(
        mapRow(
          doc,
          data,
          h.name,
          `annotator ${h.annotator}${h.label ? ` · label “${h.label}”` : ""}`,
          h.map,
          "human",
        ),
      ),
    );
    if (data.cam)
      maps.append(mapRow(doc, data, "CAM", `AND of ${data.human.length} maps`, data.cam, "consensus"));
    if (data.sam)
      maps.append(mapRow(doc, data, "SAM", `OR of ${data.human.length} maps`, data.sam, "consensus"));
    for (const m of data.machine) {
      if (m.levels)
        maps.append(
          mapRow(doc, data, m.name ?? m.label, m.target ? `for “${m.target}”` : "", m.levels, "machine"),
        );
      else maps.append(el(doc, "p", `${m.name ?? m.label}: no map stored for this text.`, "empty"));
    }
    if (!data.human.length) maps.append(el(doc, "p", "No counted human map for this text.", "empty"));
  }
}

export interface Rendered {
  data: DashboardData | TextData;
  charts: Record<string, Chart>;
}

declare global {
  interface Window {
    hatlabDashboard?: Rendered;
  }
}

/** Load and draw the dashboard of `root` (`#hatlab-dashboard`). */
export async function initDashboard(root: HTMLElement, options: LoadOptions = {}): Promise<Rendered> {
  const url = root.dataset.api;
  const status = root.querySelector<HTMLElement>("[data-dashboard-status]");
  if (!url) throw new DashboardError("the dashboard has no data-api URL");
  const onProgress = (state: ProgressState) => {
    if (status) applyState(status, state);
    options.onProgress?.(state);
  };
  let data: DashboardData | TextData;
  try {
    data = await loadDashboard<DashboardData | TextData>(url, { ...options, onProgress });
  } catch (error) {
    if (status) {
      status.replaceChildren(el(root.ownerDocument, "p", String((error as Error).message), "message error"));
      status.setAttribute("role", "alert");
    }
    root.dataset.state = "failed";
    throw error;
  }
  const rendered: Rendered = { data, charts: {} };
  if (root.dataset.kind === "text") {
    renderText(root, data as TextData);
  } else {
    const dash = data as DashboardData;
    const notes = root.querySelector<HTMLElement>("[data-section=notes]");
    if (notes) renderNotes(notes, dash.notes);
    const charts = root.querySelector<HTMLElement>("[data-section=charts]");
    if (charts) rendered.charts = renderCharts(charts, dash.charts);
    const tables = root.querySelector<HTMLElement>("[data-section=tables]");
    if (tables) {
      tables.replaceChildren();
      for (const spec of dash.tables ?? []) renderTable(tables, spec);
    }
  }
  status?.remove();
  root.dataset.state = "ready";
  const view = root.ownerDocument.defaultView;
  if (view) view.hatlabDashboard = rendered;
  return rendered;
}

if (typeof document !== "undefined") {
  const start = () => {
    const root = document.getElementById("hatlab-dashboard");
    if (root) initDashboard(root).catch(() => undefined);
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
}
