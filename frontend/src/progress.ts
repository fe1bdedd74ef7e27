/**
 * Live progress bars for background jobs (model training, explanations).
 *
 * Markup: an element with `data-progress-url` (the JSON of a model run or a job: it has `status`,
 * `progress` in [0, 1] and `message`) holding a `<progress>`, and optionally `[data-progress-status]`
 * and `[data-progress-message]` elements. The script polls the URL until the status is final
 * (`done` or `failed`), backing off when the server cannot be reached. With
 * `data-reload-on-done` the page reloads once the job finishes, to show its results.
 * Everything is written with textContent: server text never becomes markup.
 */

export interface ProgressState {
  status: string;
  progress: number;
  message?: string;
}

export const FINAL_STATUSES = new Set(["done", "failed"]);

export interface WatchOptions {
  fetchImpl?: typeof fetch;
  intervalMs?: number;
  maxIntervalMs?: number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  onFinal?: (state: ProgressState, element: HTMLElement) => void;
}

/** `value` as a fraction in [0, 1] (anything else is 0). */
export function clampFraction(value: unknown): number {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n)) return 0;
  return Math.min(1, Math.max(0, n));
}

/** A server answer as a ProgressState, or an Error naming what is missing. */
export function parseState(body: unknown): ProgressState {
  if (!body || typeof body !== "object") throw new Error("the progress answer is not an object");
  const record = body as Record<string, unknown>;
  if (typeof record.status !== "string") throw new Error("the progress answer has no status");
  return {
    status: record.status,
    progress: clampFraction(record.progress),
    message: typeof record.message === "string" ? record.message : "",
  };
}

/** Show `state` in `element`: bar value, percent text, status and message. */
export function applyState(element: HTMLElement, state: ProgressState): void {
  const percent = Math.round(state.progress * 100);
  const bar = element.querySelector("progress");
  if (bar) {
    bar.max = 1;
    bar.value = state.progress;
    bar.textContent = `${percent} %`;
    bar.setAttribute("aria-valuetext", `${percent} %`);
  }
  const status = element.querySelector<HTMLElement>("[data-progress-status]");
  if (status) status.textContent = state.status;
  const message = element.querySelector<HTMLElement>("[data-progress-message]");
  if (message) message.textContent = state.message ?? "";
  const percentText = element.querySelector<HTMLElement>("[data-progress-percent]");
  if (percentText) percentText.textContent = `${percent} %`;
  element.dataset.status = state.status;
}

/** GET the progress JSON at `url`. */
export async function fetchState(url: string, fetchImpl: typeof fetch): Promise<ProgressState> {
  const response = await fetchImpl(url, {
    credentials: "same-origin",
    headers: { Accept: "application/json", "X-Requested-With": "XMLHttpRequest" },
  });
  if (!response.ok) throw new Error(`the server answered ${response.status}`);
  return parseState(await response.json());
}

/**
 * Poll `element`'s URL until its job is final. Resolves with the final state. A failed request is
 * retried after a doubled interval (up to `maxIntervalMs`); a success resets the interval.
 */
export function watchProgress(element: HTMLElement, options: WatchOptions = {}): Promise<ProgressState> {
  const url = element.dataset.progressUrl;
  if (!url) return Promise.reject(new Error("the element has no data-progress-url"));
  const fetchImpl = options.fetchImpl ?? globalThis.fetch.bind(globalThis);
  const base = options.intervalMs ?? 2000;
  const ceiling = options.maxIntervalMs ?? 30000;
  const setTimer = options.setTimer ?? ((fn: () => void, ms: number) => setTimeout(fn, ms));
  let interval = base;
  return new Promise((resolve) => {
    const tick = async (): Promise<void> => {
      try {
        const state = await fetchState(url, fetchImpl);
        applyState(element, state);
        interval = base;
        if (FINAL_STATUSES.has(state.status)) {
          options.onFinal?.(state, element);
          resolve(state);
          return;
        }
      } catch {
        interval = Math.min(interval * 2, ceiling);
      }
      setTimer(() => void tick(), interval);
    };
    void tick();
  });
}

/** Watch every `[data-progress-url]` element of `doc` whose status is not final yet. */
export function init(doc: Document = document, options: WatchOptions = {}): HTMLElement[] {
  const elements = Array.from(doc.querySelectorAll<HTMLElement>("[data-progress-url]")).filter(
    (el) => !FINAL_STATUSES.has(el.dataset.status ?? ""),
  );
  for (const element of elements) {
    void watchProgress(element, {
      onFinal: (state, el) => {
        if (el.dataset.reloadOnDone !== undefined && state.status === "done")
          doc.defaultView?.location.reload();
      },
      ...options,
    });
  }
  return elements;
}

if (typeof document !== "undefined" && document.querySelector("[data-progress-url]")) {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => init());
  else init();
}
