import { describe, expect, it } from "vitest";

import {
  ApiError,
  csrfTokenFromCookie,
  errorLines,
  fieldErrors,
  newSubmissionKey,
  postJson,
  renderError,
  retryAfterMs,
} from "../src/api";

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(body === null ? "" : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", ...headers },
  });
}

/** The server's answer while its database is away. */
function unavailable(seconds: number): Response {
  return json(
    503,
    { detail: "The database is briefly unavailable; nothing was lost.", retry_after: seconds },
    { "Retry-After": String(seconds) },
  );
}

interface Call {
  url: string;
  init: RequestInit;
}

function scripted(...steps: Array<Response | Error>): { fetchImpl: typeof fetch; calls: Call[] } {
  const calls: Call[] = [];
  const fetchImpl = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    const step = steps.shift();
    if (!step) throw new Error("no scripted answer left");
    if (step instanceof Error) throw step;
    return step;
  }) as unknown as typeof fetch;
  return { fetchImpl, calls };
}

const noSleep = async () => {};

/** The ApiError a request ends with (fails the test when it succeeds). */
async function failure(request: Promise<unknown>): Promise<ApiError> {
  try {
    await request;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error("the request succeeded");
}

describe("retryAfterMs", () => {
  it("reads seconds and HTTP dates, caps at 30 s and ignores what it cannot read", () => {
    expect(retryAfterMs("2")).toBe(2000);
    expect(retryAfterMs(" 0 ")).toBe(0);
    expect(retryAfterMs("3600")).toBe(30_000);
    const now = Date.parse("Wed, 21 Oct 2026 07:28:00 GMT");
    expect(retryAfterMs("Wed, 21 Oct 2026 07:28:05 GMT", now)).toBe(5000);
    expect(retryAfterMs("Wed, 21 Oct 2026 07:27:00 GMT", now)).toBe(0);
    expect(retryAfterMs("soon")).toBeNull();
    expect(retryAfterMs("-1")).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });
});

describe("postJson", () => {
  it("posts JSON with the CSRF token and returns the answer", async () => {
    const { fetchImpl, calls } = scripted(json(201, { response: 7 }));
    const out = await postJson<{ response: number }>("/api/x", { a: 1 }, { csrfToken: "tok", fetchImpl });
    expect(out).toEqual({ response: 7 });
    expect(calls).toHaveLength(1);
    const headers = calls[0].init.headers as Record<string, string>;
    expect(calls[0].init.method).toBe("POST");
    expect(calls[0].init.credentials).toBe("same-origin");
    expect(headers["X-CSRFToken"]).toBe("tok");
    expect(headers["Content-Type"]).toBe("application/json");
    expect(JSON.parse(calls[0].init.body as string)).toEqual({ a: 1 });
  });

  it("resends the identical body (same submission_key) after network failures", async () => {
    const { fetchImpl, calls } = scripted(
      new TypeError("Failed to fetch"),
      json(503, null),
      json(200, { response: 3 }),
    );
    const delays: number[] = [];
    const body = { submission_key: newSubmissionKey(), answer: { label: "positive", map: [1, 0] } };
    const out = await postJson("/submit", body, {
      fetchImpl,
      retryDelayMs: 100,
      sleep: async (ms) => void delays.push(ms),
    });
    expect(out).toEqual({ response: 3 });
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.init.body)).size).toBe(1);
    expect(JSON.parse(calls[2].init.body as string).submission_key).toBe(body.submission_key);
    expect(delays).toEqual([100, 200]);
  });

  it("gives up after the retries with a network error (status 0)", async () => {
    const { fetchImpl, calls } = scripted(new TypeError("x"), new TypeError("x"), new TypeError("x"));
    const error = await failure(postJson("/next", {}, { fetchImpl, retries: 2, sleep: noSleep }));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(0);
    expect(error.message).toMatch(/could not be reached/);
    expect(calls).toHaveLength(3);
  });

  it("waits as long as Retry-After asks, says so, and resends the same body after a 503", async () => {
    const { fetchImpl, calls } = scripted(
      unavailable(2),
      new TypeError("Failed to fetch"),
      unavailable(1),
      json(201, { response: 9 }),
    );
    const delays: number[] = [];
    const retries: Array<{ attempt: number; status: number; waitMs: number }> = [];
    const out = await postJson(
      "/submit",
      { submission_key: "k-1" },
      {
        fetchImpl,
        retryDelayMs: 100,
        sleep: async (ms) => void delays.push(ms),
        onRetry: (info) => retries.push(info),
      },
    );
    expect(out).toEqual({ response: 9 });
    expect(delays).toEqual([2000, 200, 1000]); // Retry-After; backoff for the network; Retry-After
    expect(retries.map((r) => r.status)).toEqual([503, 0, 503]);
    expect(retries.map((r) => r.attempt)).toEqual([0, 1, 2]);
    expect(new Set(calls.map((c) => c.init.body))).toEqual(new Set(['{"submission_key":"k-1"}']));
  });

  it("rides out an outage of 20 s but stops after retryForMs with the server's message", async () => {
    let t = 0;
    const sleep = async (ms: number) => void (t += ms);
    const outage = Array.from({ length: 10 }, () => unavailable(2));
    const rode = scripted(...outage, json(200, { response: 1 }));
    const out = await postJson("/submit", {}, { fetchImpl: rode.fetchImpl, sleep, now: () => t });
    expect(out).toEqual({ response: 1 });
    expect(rode.calls).toHaveLength(11);
    expect(t).toBe(20_000);

    t = 0;
    const endless = scripted(...Array.from({ length: 50 }, () => unavailable(2)));
    const error = await failure(
      postJson("/submit", {}, { fetchImpl: endless.fetchImpl, sleep, now: () => t, retryForMs: 9_000 }),
    );
    expect(error.status).toBe(503);
    expect(error.message).toMatch(/briefly unavailable/);
    expect(endless.calls).toHaveLength(5); // waits at 0, 2, 4, 6 s; a fifth wait would pass 9 s
  });

  it("backs off exponentially up to maxRetryDelayMs without Retry-After", async () => {
    const { fetchImpl } = scripted(...Array.from({ length: 6 }, () => new TypeError("x")), json(200, {}));
    const delays: number[] = [];
    await postJson(
      "/x",
      {},
      {
        fetchImpl,
        retryDelayMs: 500,
        maxRetryDelayMs: 4000,
        sleep: async (ms) => void delays.push(ms),
      },
    );
    expect(delays).toEqual([500, 1000, 2000, 4000, 4000, 4000]);
  });

  it("does not retry a 500", async () => {
    const { fetchImpl, calls } = scripted(json(500, { detail: "Server error." }), json(200, {}));
    const error = await failure(postJson("/x", {}, { fetchImpl, sleep: noSleep }));
    expect(error.status).toBe(500);
    expect(calls).toHaveLength(1);
  });

  it("does not retry a 400 and names the fields in the error", async () => {
    const { fetchImpl, calls } = scripted(
      json(400, { errors: { "answer.map": ["must have one value per word"], label: ["unknown label"] } }),
    );
    const error = await failure(postJson("/submit", {}, { fetchImpl, sleep: noSleep }));
    expect(calls).toHaveLength(1);
    expect(error.status).toBe(400);
    expect(error.errors).toEqual({
      "answer.map": ["must have one value per word"],
      label: ["unknown label"],
    });
    expect(error.message).toBe("answer.map: must have one value per word; label: unknown label");
  });

  it("reads a non-JSON error page as its text", async () => {
    const { fetchImpl } = scripted(new Response("Forbidden (CSRF token missing.)", { status: 403 }));
    const error = await failure(postJson("/x", {}, { fetchImpl }));
    expect(error.status).toBe(403);
    expect(error.message).toBe("Forbidden (CSRF token missing.)");
  });

  it("falls back to the csrftoken cookie", async () => {
    document.cookie = "csrftoken=fromcookie";
    const { fetchImpl, calls } = scripted(json(200, {}));
    await postJson("/x", {}, { fetchImpl });
    expect((calls[0].init.headers as Record<string, string>)["X-CSRFToken"]).toBe("fromcookie");
  });
});

describe("errors", () => {
  it("flattens nested and DRF-style errors into named fields", () => {
    expect(fieldErrors({ answer: { map: ["too short"], label: "bad" }, detail: "x" })).toEqual({
      "answer.map": ["too short"],
      "answer.label": ["bad"],
      detail: ["x"],
    });
    expect(fieldErrors({ errors: { timings: { read_ms: ["must be ≥ 0"] } } })).toEqual({
      "timings.read_ms": ["must be ≥ 0"],
    });
    expect(fieldErrors({ errors: ["whole request is wrong"] })).toEqual({
      non_field_errors: ["whole request is wrong"],
    });
    expect(errorLines({ non_field_errors: ["general"], label: ["required"] })).toEqual([
      "general",
      "label: required",
    ]);
  });

  it("renders messages as text, one per field", () => {
    const box = document.createElement("div");
    box.hidden = true;
    renderError(box, new ApiError(400, { label: ["<img src=x> is not a label"] }, "bad"));
    expect(box.hidden).toBe(false);
    expect(box.querySelectorAll("li")).toHaveLength(1);
    expect(box.textContent).toBe("label: <img src=x> is not a label");
    expect(box.querySelector("img")).toBeNull();
  });
});

describe("helpers", () => {
  it("reads the CSRF cookie among others", () => {
    expect(csrfTokenFromCookie("a=1; csrftoken=abc%3D; b=2")).toBe("abc=");
    expect(csrfTokenFromCookie("a=1")).toBe("");
  });

  it("makes version-4 UUIDs with and without randomUUID", () => {
    const pattern = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    expect(newSubmissionKey()).toMatch(pattern);
    const fallback = { getRandomValues: (a: Uint8Array) => a.fill(0xff) } as unknown as Crypto;
    const key = newSubmissionKey(fallback);
    expect(key).toMatch(pattern);
    expect(key).toBe("ffffffff-ffff-4fff-bfff-ffffffffffff");
    expect(newSubmissionKey()).not.toBe(newSubmissionKey());
  });
});
