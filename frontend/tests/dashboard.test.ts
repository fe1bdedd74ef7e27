import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

import { type ScatterChartData, scatterToCsv, tableToCsv } from "../src/charts";
import {
  type ChartSpec,
  DashboardError,
  formatNumber,
  humanReferences,
  initDashboard,
  isSafeHref,
  levelClass,
  loadDashboard,
  renderCharts,
  renderNotes,
  renderOverlay,
  renderTable,
  renderText,
  type TextData,
} from "../src/dashboard";

const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});

beforeAll(() => {
  // jsdom has no canvas: Chart.js builds its configuration without drawing.
  HTMLCanvasElement.prototype.getContext = (() => null) as unknown as HTMLCanvasElement["getContext"];
});

afterAll(() => consoleError.mockRestore());

const CHART: ChartSpec = {
  id: "human_human",
  title: "Human–human similarity",
  yLabel: "ROC AUC",
  labels: ["truth HAM1 · score HAM2", "truth HAM2 · score HAM1"],
  series: [{ name: "mean ROC AUC", values: [0.74, 0.73], lower: [0.7, 0.69], upper: [0.78, 0.77] }],
  csv: "/api/dashboards/studies/u/csv/human_human.csv",
};

function reply(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

function fakeFetch(answers: Array<Response | Error>) {
  const calls: string[] = [];
  const impl = (async (url: string) => {
    calls.push(url);
    const next = answers.shift();
    if (!next) throw new Error("no more answers");
    if (next instanceof Error) throw next;
    return next;
  }) as unknown as typeof fetch;
  return { impl, calls };
}

describe("loading", () => {
  it("waits while a job computes the dashboard, reporting its progress", async () => {
    const { impl, calls } = fakeFetch([
      reply(202, { status: "queued", progress: 0, message: "", job: 3 }),
      reply(202, { status: "running", progress: 0.4, message: "POS tags", job: 3 }),
      reply(200, { status: "done", notes: ["n"] }),
    ]);
    const seen: Array<[string, number]> = [];
    const waits: number[] = [];
    const data = await loadDashboard("/api/x/", {
      fetchImpl: impl,
      sleep: async (ms) => void waits.push(ms),
      onProgress: (s) => seen.push([s.status, s.progress]),
    });
    expect(data.notes).toEqual(["n"]);
    expect(calls).toEqual(["/api/x/", "/api/x/", "/api/x/"]);
    expect(seen).toEqual([
      ["queued", 0],
      ["running", 0.4],
    ]);
    expect(waits).toEqual([1500, 1500]);
  });

  it("backs off when the server cannot be reached", async () => {
    const { impl } = fakeFetch([
      new TypeError("offline"),
      new TypeError("offline"),
      reply(200, { status: "done" }),
    ]);
    const waits: number[] = [];
    await loadDashboard("/u", { fetchImpl: impl, sleep: async (ms) => void waits.push(ms), intervalMs: 100 });
    expect(waits).toEqual([100, 200]);
  });

  it("stops on a failed job and on an error answer, naming the field", async () => {
    const failed = fakeFetch([reply(202, { status: "failed", progress: 0.2, message: "ZeroDivisionError" })]);
    await expect(loadDashboard("/u", { fetchImpl: failed.impl, sleep: async () => {} })).rejects.toThrow(
      "Computing the dashboard failed: ZeroDivisionError",
    );
    const refused = fakeFetch([reply(400, { select: ["choose at least one model run and method"] })]);
    const error = await loadDashboard("/u", { fetchImpl: refused.impl }).catch((e) => e);
    expect(error).toBeInstanceOf(DashboardError);
    expect(error.message).toBe("select: choose at least one model run and method");
    const forbidden = fakeFetch([reply(403, { detail: "not yours" })]);
    await expect(loadDashboard("/u", { fetchImpl: forbidden.impl })).rejects.toThrow("not yours");
  });
});

describe("pieces", () => {
  it("formats numbers and checks links", () => {
    expect([formatNumber(0.73456), formatNumber(12), formatNumber(null), formatNumber(Number.NaN)]).toEqual([
      "0.735",
      "12",
      "—",
      "—",
    ]);
    expect(isSafeHref("/studies/1/")).toBe(true);
    for (const bad of ["javascript:alert(1)", "//evil.example/", "https://evil.example/", 3]) {
      expect(isSafeHref(bad)).toBe(false);
    }
    expect([levelClass(0), levelClass(7), levelClass(-3), levelClass(14)]).toEqual([
      "heat-0",
      "heat-p7",
      "heat-n3",
      "heat-p10",
    ]);
  });

  it("shows notes as text and hides an empty list", () => {
    const box = document.createElement("section");
    renderNotes(box, ["<b>κ</b> may mislead"]);
    expect(box.hidden).toBe(false);
    expect(box.querySelector("li")!.textContent).toBe("<b>κ</b> may mislead");
    expect(box.querySelector("b")).toBeNull();
    renderNotes(box, []);
    expect(box.hidden).toBe(true);
    expect(box.childElementCount).toBe(0);
  });

  it("writes tables with escaped text, safe links only, numeric columns and a CSV link", () => {
    const box = document.createElement("div");
    const table = renderTable(box, {
      id: "texts-table",
      title: "Texts",
      columns: ["document", "AUC", "label"],
      rows: [
        [
          { text: "<img src=x onerror=alert(1)>", href: "/studies/s/dashboard/texts/4/?select=1%3Aa" },
          0.61234,
          "pos",
        ],
        [{ text: "bad link", href: "javascript:alert(1)" }, null, "<script>x</script>"],
      ],
      csv: "/api/t.csv",
    });
    expect(box.querySelector("img")).toBeNull();
    expect(box.querySelector("script")).toBeNull();
    const links = table.querySelectorAll("tbody a");
    expect(links).toHaveLength(1);
    expect(links[0].textContent).toBe("<img src=x onerror=alert(1)>");
    expect(links[0].getAttribute("href")).toBe("/studies/s/dashboard/texts/4/?select=1%3Aa");
    expect(table.rows[2].cells[0].textContent).toBe("bad link");
    expect(table.rows[1].cells[1].textContent).toBe("0.612");
    expect(table.rows[2].cells[1].textContent).toBe("—");
    expect(table.rows[2].cells[2].textContent).toBe("<script>x</script>");
    expect(Array.from(table.rows[0].cells).map((c) => c.className)).toEqual(["", "num", ""]);
    expect(box.querySelector<HTMLAnchorElement>(".hatlab-server-csv")!.getAttribute("href")).toBe(
      "/api/t.csv",
    );
  });

  it("draws one chart per spec with the API's numbers and both CSV links", () => {
    const box = document.createElement("div");
    const charts = renderCharts(box, [CHART]);
    const chart = charts.human_human;
    expect(chart.config.data.labels).toEqual(CHART.labels);
    expect(chart.config.data.datasets[0].data).toEqual([0.74, 0.73]);
    expect(box.querySelector("figcaption")!.textContent).toBe(CHART.title);
    const local = box.querySelector<HTMLAnchorElement>(".hatlab-csv-link")!;
    expect(local.download).toBe("human_human.csv");
    expect(decodeURIComponent(local.href.replace("data:text/csv;charset=utf-8,", ""))).toBe(
      tableToCsv(CHART),
    );
    expect(box.querySelector<HTMLAnchorElement>(".hatlab-server-csv")!.getAttribute("href")).toBe(CHART.csv);
  });

  it("draws a scatter spec as a scatter chart, its title as the caption only", () => {
    const spec: ChartSpec = {
      id: "plausibility_faithfulness",
      title: "Plausibility against faithfulness",
      kind: "scatter",
      xLabel: "ROC AUC vs SAM",
      yLabel: "comprehensiveness AOPC",
      better: { corner: "top right", text: "plausible and faithful" },
      points: [{ label: "m · LIME", x: 0.7, xLower: 0.6, xUpper: 0.8, y: 0.2, yLower: 0.1, yUpper: 0.3 }],
      csv: "/api/pf.csv",
    };
    const box = document.createElement("div");
    const chart = renderCharts(box, [spec]).plausibility_faithfulness;
    expect(chart.config.data.datasets.map((d) => [d.label, d.data])).toEqual([
      ["m · LIME", [{ x: 0.7, y: 0.2 }]],
    ]);
    expect(chart.config.options!.plugins!.title!.display).toBe(false);
    expect(box.querySelector("figcaption")!.textContent).toBe(spec.title);
    const local = box.querySelector<HTMLAnchorElement>(".hatlab-csv-link")!;
    expect(decodeURIComponent(local.href.replace("data:text/csv;charset=utf-8,", ""))).toBe(
      scatterToCsv(spec as ScatterChartData),
    );
  });
});

const TEXT: TextData = {
  item: 5,
  document: { id: 9, external_id: "d9", label: "positive" },
  words: ["The", "<b>food</b>", "was", "great"],
  breaks: [2],
  human: [
    { name: "HAM1", annotator: "w1", label: "positive", map: [0, 1, 0, 1] },
    { name: "HAM2", annotator: "w2", label: "positive", map: [0, 0, 0, 1] },
  ],
  cam: [0, 0, 0, 1],
  sam: [0, 1, 0, 1],
  machine: [
    { key: "1:attention (training)", label: "m · attention", target: "positive", scores: [0.1, 0.5, 0.0, 1.0],
      levels: [1, 5, 0, 10], auc: { CAM: 1.0, SAM: 0.75 } }, // prettier-ignore
    { key: "1:lime", label: "m · lime", name: "m · LIME", target: null, scores: null, levels: null, auc: {} },
  ],
  previous: null,
  next: 6,
};

describe("one text", () => {
  it("overlays the machine map on a human map, word by word", () => {
    const line = document.createElement("p");
    renderOverlay(line, TEXT, TEXT.machine[0], TEXT.cam);
    const spans = Array.from(line.querySelectorAll<HTMLSpanElement>("span.w"));
    expect(spans.map((s) => s.textContent)).toEqual(TEXT.words);
    expect(line.querySelector("b")).toBeNull();
    expect(spans.map((s) => s.dataset.human)).toEqual(["0", "0", "0", "1"]);
    expect(spans[3].classList.contains("hat-human")).toBe(true);
    expect(spans.map((s) => Array.from(s.classList).find((c) => c.startsWith("heat-")))).toEqual([
      "heat-p1",
      "heat-p5",
      "heat-0",
      "heat-p10",
    ]);
    expect(spans[1].dataset.score).toBe("0.5");
    expect(line.querySelectorAll("br")).toHaveLength(1);
    expect(humanReferences(TEXT).map((r) => r.name)).toEqual(["HAM1", "HAM2", "CAM", "SAM"]);
  });

  it("renders the page: navigation, pickers, maps; changing the picker redraws the overlay", () => {
    document.body.innerHTML = `<div id="root" data-kind="text" data-page-url="/studies/s/dashboard/texts/5/" data-query="select=1%3Aa&amp;target=predicted">
      <nav data-section="nav"></nav>
      <section data-section="overlay" hidden><div class="overlay-controls"></div><p data-overlay></p><p data-overlay-auc></p></section>
      <section data-section="maps"><div data-maps></div></section></div>`;
    const root = document.getElementById("root")!;
    renderText(root, TEXT);
    const nav = root.querySelectorAll<HTMLAnchorElement>("nav a");
    expect(nav).toHaveLength(1);
    expect(nav[0].getAttribute("href")).toBe("/studies/s/dashboard/texts/6/?select=1%3Aa&target=predicted");
    const overlay = root.querySelector<HTMLElement>("[data-section=overlay]")!;
    expect(overlay.hidden).toBe(false);
    const human = root.querySelector<HTMLSelectElement>("#overlay-human")!;
    expect(human.value).toBe("CAM");
    expect(root.querySelector("[data-overlay-auc]")!.textContent).toBe(
      "explains “positive” · ROC AUC vs CAM: 1 · ROC AUC vs SAM: 0.750",
    );
    human.value = "SAM";
    human.dispatchEvent(new Event("change", { bubbles: true }));
    const flags = Array.from(root.querySelectorAll<HTMLSpanElement>("[data-overlay] span.w")).map(
      (s) => s.dataset.human,
    );
    expect(flags).toEqual(["0", "1", "0", "1"]);
    const rows = Array.from(root.querySelectorAll<HTMLElement>(".map-row")).map((r) => r.dataset.map);
    expect(rows).toEqual(["HAM1", "HAM2", "CAM", "SAM", "m · attention"]);
    expect(root.querySelector("[data-maps] .empty")!.textContent).toBe(
      "m · LIME: no map stored for this text.",
    );
    const ham1 = root.querySelectorAll<HTMLSpanElement>('.map-row[data-map="HAM1"] span.w');
    expect(Array.from(ham1).map((s) => s.classList.contains("heat-p10"))).toEqual([false, true, false, true]);
  });
});

describe("the page", () => {
  it("loads, draws notes, charts and tables, and exposes what it drew", async () => {
    document.body.innerHTML = `<div id="hatlab-dashboard" data-kind="study" data-api="/api/d/">
      <div data-dashboard-status><progress></progress><span data-progress-status></span><span data-progress-message></span></div>
      <section data-section="notes" hidden></section><div data-section="charts"></div><div data-section="tables"></div></div>`;
    const root = document.getElementById("hatlab-dashboard")!;
    const body = {
      status: "done",
      notes: ["Fleiss κ may mislead"],
      charts: [CHART],
      tables: [
        {
          id: "human_human-table",
          title: "Human–human similarity",
          columns: ["truth", "score", "value"],
          rows: [["HAM1", "HAM2", 0.74]],
          csv: "/api/dashboards/studies/u/csv/human_human-table.csv",
        },
        { id: "annotators-table", title: "Annotators", columns: ["annotator", "answers"], rows: [["w1", 3]] },
      ],
    };
    const { impl } = fakeFetch([
      reply(202, { status: "running", progress: 0.5, message: "half" }),
      reply(200, body),
    ]);
    const states: string[] = [];
    const rendered = await initDashboard(root, {
      fetchImpl: impl,
      sleep: async () => {
        states.push(root.querySelector("[data-progress-message]")!.textContent ?? "");
      },
    });
    expect(states).toEqual(["half"]);
    expect(root.dataset.state).toBe("ready");
    expect(root.querySelector("[data-dashboard-status]")).toBeNull();
    expect(window.hatlabDashboard).toBe(rendered);
    expect(Object.keys(rendered.charts)).toEqual(["human_human"]);
    expect(root.querySelector("[data-section=notes] li")!.textContent).toBe("Fleiss κ may mislead");
    expect(root.querySelector("[data-table=annotators-table] td")!.textContent).toBe("w1");
    // the chart and the table of one figure each link the CSV the API gave that figure
    const serverCsv = (selector: string) =>
      root.querySelector<HTMLAnchorElement>(`${selector} .hatlab-server-csv`)?.getAttribute("href");
    expect(serverCsv("[data-chart=human_human]")).toBe(CHART.csv);
    expect(serverCsv('[data-table="human_human-table"]')).toBe(body.tables[0].csv);
    expect(serverCsv('[data-table="annotators-table"]')).toBeUndefined();
  });

  it("shows why the figures could not be loaded", async () => {
    document.body.innerHTML = `<div id="d" data-api="/api/d/"><div data-dashboard-status></div></div>`;
    const root = document.getElementById("d")!;
    const { impl } = fakeFetch([
      reply(403, { detail: "The dashboards of a study are for its owner and for admins." }),
    ]);
    await expect(initDashboard(root, { fetchImpl: impl })).rejects.toThrow("for its owner");
    expect(root.dataset.state).toBe("failed");
    expect(root.querySelector("[role=alert]")!.textContent).toContain("for its owner and for admins");
  });
});
