import { appendFileSync } from "node:fs";

/**
 * Event helpers for jsdom, which has no PointerEvent: a MouseEvent of the pointer type carries the
 * fields the widget reads.
 */

export function pointer(
  target: Element | Document,
  type: "pointerdown" | "pointermove" | "pointerup" | "pointercancel",
  init: MouseEventInit & { pointerType?: string } = {},
): MouseEvent {
  const event = new MouseEvent(type, { bubbles: true, cancelable: true, button: 0, ...init });
  Object.defineProperty(event, "pointerType", { value: init.pointerType ?? "mouse" });
  target.dispatchEvent(event);
  return event;
}

export function key(
  target: Element | Document,
  keyName: string,
  init: KeyboardEventInit = {},
): KeyboardEvent {
  const event = new KeyboardEvent("keydown", { key: keyName, bubbles: true, cancelable: true, ...init });
  target.dispatchEvent(event);
  return event;
}

/** A clock the test moves by hand. */
export function fakeClock(start = 1000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

/** Web Storage in a Map: a page's sessionStorage without the browser. */
export class MemoryStorage implements Storage {
  private data = new Map<string, string>();
  get length(): number {
    return this.data.size;
  }
  clear(): void {
    this.data.clear();
  }
  getItem(key: string): string | null {
    return this.data.get(key) ?? null;
  }
  key(index: number): string | null {
    return [...this.data.keys()][index] ?? null;
  }
  removeItem(key: string): void {
    this.data.delete(key);
  }
  setItem(key: string, value: string): void {
    this.data.set(key, value);
  }
}

/** One answer of the fake API: a status, a JSON body and optional headers, or a network failure. */
export type Step = { status: number; body: unknown; headers?: Record<string, string> } | Error;

/**
 * With HATLAB_FAKE_API_LOG set, every answer the fake API gives is appended to that file as a JSON
 * line (URL, request body, status, body): tests/annotate/test_frontend_fake_api.py checks them
 * against the app's OpenAPI schema.
 */
function logExchange(url: string, request: unknown, step: { status: number; body: unknown }): void {
  const log = process.env.HATLAB_FAKE_API_LOG;
  if (log) appendFileSync(log, JSON.stringify({ url, request, status: step.status, body: step.body }) + "\n");
}

/** A fetch that answers the given steps in order and records each request (URL, JSON body, headers). */
export function server(steps: Step[]) {
  const calls: Array<{ url: string; body: Record<string, unknown>; headers: Record<string, string> }> = [];
  const fetchImpl = (async (url: string, init: RequestInit) => {
    calls.push({
      url,
      body: JSON.parse(init.body as string),
      headers: init.headers as Record<string, string>,
    });
    const step = steps.shift();
    if (!step) throw new Error(`unexpected request to ${url}`);
    if (step instanceof Error) throw step;
    logExchange(url, calls[calls.length - 1].body, step);
    return new Response(JSON.stringify(step.body), { status: step.status, headers: step.headers });
  }) as unknown as typeof fetch;
  return { fetchImpl, calls };
}

/** Let the page's promise chains run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
}

/** The one element matching `selector` (throws when there is none). */
export function $(selector: string): HTMLElement {
  const found = document.querySelector<HTMLElement>(selector);
  if (!found) throw new Error(`no ${selector}`);
  return found;
}
