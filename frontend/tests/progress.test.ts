import { describe, expect, it } from "vitest";

import { applyState, clampFraction, init, parseState, watchProgress } from "../src/progress";

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

function widget(url = "/api/model-runs/1/", status = "queued"): HTMLElement {
  document.body.innerHTML = "";
  const el = document.createElement("div");
  el.dataset.progressUrl = url;
  el.dataset.status = status;
  el.innerHTML =
    '<progress max="1" value="0"></progress><span data-progress-status></span>' +
    "<span data-progress-percent></span><span data-progress-message></span>";
  document.body.append(el);
  return el;
}

describe("parseState", () => {
  it("keeps status, clamps progress and defaults the message", () => {
    expect(parseState({ status: "running", progress: 1.7 })).toEqual({
      status: "running",
      progress: 1,
      message: "",
    });
    expect(parseState({ status: "queued", progress: "x", message: "m" })).toEqual({
      status: "queued",
      progress: 0,
      message: "m",
    });
  });

  it("rejects answers without a status", () => {
    expect(() => parseState({ progress: 0.5 })).toThrow(/status/);
    expect(() => parseState(null)).toThrow(/object/);
  });

  it("clamps fractions", () => {
    expect(clampFraction(-1)).toBe(0);
    expect(clampFraction(0.25)).toBe(0.25);
    expect(clampFraction(Number.NaN)).toBe(0);
  });
});

describe("applyState", () => {
  it("writes the bar, the percent, and text without markup", () => {
    const el = widget();
    applyState(el, { status: "running", progress: 0.426, message: "<b>epoch 3</b>" });
    const bar = el.querySelector("progress") as HTMLProgressElement;
    expect(bar.value).toBeCloseTo(0.426);
    expect(el.querySelector("[data-progress-percent]")?.textContent).toBe("43 %");
    expect(el.querySelector("[data-progress-status]")?.textContent).toBe("running");
    const message = el.querySelector("[data-progress-message]") as HTMLElement;
    expect(message.textContent).toBe("<b>epoch 3</b>");
    expect(message.querySelector("b")).toBeNull();
    expect(el.dataset.status).toBe("running");
  });
});

describe("watchProgress", () => {
  it("polls until the job is final, backing off after a network error", async () => {
    const el = widget();
    const answers: Array<Response | Error> = [
      json(200, { status: "running", progress: 0.2 }),
      new Error("offline"),
      json(200, { status: "done", progress: 1, message: "trained" }),
    ];
    const delays: number[] = [];
    const urls: string[] = [];
    const fetchImpl = (async (url: string) => {
      urls.push(url);
      const next = answers.shift();
      if (next instanceof Error) throw next;
      return next as Response;
    }) as unknown as typeof fetch;
    const finals: string[] = [];
    const state = await watchProgress(el, {
      fetchImpl,
      intervalMs: 100,
      setTimer: (fn, ms) => {
        delays.push(ms);
        fn();
      },
      onFinal: (s) => finals.push(s.status),
    });
    expect(state).toEqual({ status: "done", progress: 1, message: "trained" });
    expect(urls).toEqual(["/api/model-runs/1/", "/api/model-runs/1/", "/api/model-runs/1/"]);
    expect(delays).toEqual([100, 200]);
    expect(finals).toEqual(["done"]);
    expect(el.querySelector("[data-progress-message]")?.textContent).toBe("trained");
  });

  it("treats an error answer like a failed request", async () => {
    const el = widget("/api/jobs/4/");
    const answers = [
      json(500, { detail: "boom" }),
      json(200, { status: "failed", progress: 0.5, message: "bad" }),
    ];
    const delays: number[] = [];
    const state = await watchProgress(el, {
      fetchImpl: (async () => answers.shift() as Response) as unknown as typeof fetch,
      intervalMs: 50,
      setTimer: (fn, ms) => {
        delays.push(ms);
        fn();
      },
    });
    expect(state.status).toBe("failed");
    expect(delays).toEqual([100]);
  });
});

describe("init", () => {
  it("watches only the elements whose job is not final yet", () => {
    document.body.innerHTML =
      '<div data-progress-url="/a" data-status="running"><progress></progress></div>' +
      '<div data-progress-url="/b" data-status="done"><progress></progress></div>';
    const seen: string[] = [];
    const watched = init(document, {
      fetchImpl: (async (url: string) => {
        seen.push(url);
        return json(200, { status: "done", progress: 1 });
      }) as unknown as typeof fetch,
      setTimer: () => undefined,
    });
    expect(watched.map((el) => el.dataset.progressUrl)).toEqual(["/a"]);
    expect(seen).toEqual(["/a"]);
  });
});
