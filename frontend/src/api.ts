/**
 * Talking to the hatlab server: JSON POSTs that carry Django's CSRF token, are retried when the
 * network fails or the server is briefly unavailable (the body is serialised once, so a retried
 * submission carries the same submission_key and the server stores it once), and turn a 400 into
 * errors that name the field.
 *
 * "Briefly unavailable" is a 503 (the server's answer while its database or job queue is away, with
 * Retry-After) or a gateway's 502/504. Such answers, and network failures, are retried for up to
 * `retryForMs` (two minutes by default), waiting as long as Retry-After asks, else backing off
 * exponentially; `onRetry` lets the page say it is reconnecting instead of showing an error.
 */

/** Field name -> messages, as the server's `{"errors": {...}}` answer gives them. */
export type FieldErrors = Record<string, string[]>;

/** A request that failed: `status` is 0 when the server could not be reached at all. */
export class ApiError extends Error {
  readonly status: number;
  readonly errors: FieldErrors;

  constructor(status: number, errors: FieldErrors, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.errors = errors;
  }
}

/** A retry about to happen: the attempt that failed (0 first), why (`status`, 0: the network) and
 * how long the client waits before the next one. */
export interface RetryInfo {
  attempt: number;
  status: number;
  waitMs: number;
}

export interface PostOptions {
  /** Django's CSRF token (sent as X-CSRFToken); read from the csrftoken cookie when absent. */
  csrfToken?: string;
  /** Most extra attempts after the first (no limit by default: `retryForMs` bounds them). */
  retries?: number;
  /** How long to go on retrying, from the first attempt (120 000 ms by default). */
  retryForMs?: number;
  /** Delay before the first retry without Retry-After; doubled for each further one. */
  retryDelayMs?: number;
  /** The longest wait between two attempts (8 000 ms by default; Retry-After is capped at 30 s). */
  maxRetryDelayMs?: number;
  /** Called before each wait for a retry. */
  onRetry?: (info: RetryInfo) => void;
  fetchImpl?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  /** Clock in milliseconds (Date.now by default). */
  now?: () => number;
}

/** Answers that mean "not now, the request did no harm": safe to resend an idempotent POST. */
const RETRY_STATUSES = new Set([502, 503, 504]);
/** The longest Retry-After the client honours. */
const MAX_RETRY_AFTER_MS = 30_000;

export const NETWORK_MESSAGE =
  "The server could not be reached. Your answer is kept on this page; check your connection and try again.";

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The value of Django's `csrftoken` cookie, or "" when there is none. */
export function csrfTokenFromCookie(cookie: string): string {
  for (const part of cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === "csrftoken") return decodeURIComponent(rest.join("="));
  }
  return "";
}

/** A random version-4 UUID; falls back to getRandomValues where randomUUID is missing (plain http). */
export function newSubmissionKey(cryptoImpl: Crypto = globalThis.crypto): string {
  if (typeof cryptoImpl.randomUUID === "function") return cryptoImpl.randomUUID();
  const bytes = cryptoImpl.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function asMessages(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => (typeof v === "string" ? [v] : asMessages(v)));
  if (typeof value === "string") return [value];
  if (value && typeof value === "object") return Object.values(value).flatMap(asMessages);
  return value === undefined || value === null ? [] : [String(value)];
}

/**
 * Flatten an error body into field -> messages. Accepts the contract's `{"errors": {...}}`,
 * a bare DRF serializer answer `{"field": [...]}` and nested fields (`answer.map`).
 */
export function fieldErrors(body: unknown): FieldErrors {
  if (!body || typeof body !== "object") return {};
  const source = (body as Record<string, unknown>).errors ?? body;
  if (typeof source !== "object" || source === null || Array.isArray(source)) {
    return { non_field_errors: asMessages(source) };
  }
  const out: FieldErrors = {};
  const walk = (prefix: string, value: unknown): void => {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value)) walk(prefix ? `${prefix}.${key}` : key, inner);
    } else if (Array.isArray(value) && value.some((v) => v && typeof v === "object" && !Array.isArray(v))) {
      value.forEach((inner, i) => {
        if (inner && typeof inner === "object" && Object.keys(inner).length) walk(`${prefix}.${i}`, inner);
      });
    } else {
      const messages = asMessages(value);
      if (messages.length) out[prefix || "non_field_errors"] = messages;
    }
  };
  walk("", source);
  return out;
}

function messageOf(status: number, body: unknown, errors: FieldErrors): string {
  if (body && typeof body === "object") {
    const detail = (body as Record<string, unknown>).detail ?? (body as Record<string, unknown>).message;
    if (typeof detail === "string" && detail) return detail;
  }
  const lines = errorLines(errors);
  if (lines.length) return lines.join("; ");
  return `The server answered ${status}.`;
}

/** One human-readable line per message, each naming its field ("answer.map: ..."). */
export function errorLines(errors: FieldErrors): string[] {
  const lines: string[] = [];
  for (const [field, messages] of Object.entries(errors)) {
    const general = field === "non_field_errors" || field === "detail";
    for (const message of messages) lines.push(general ? message : `${field}: ${message}`);
  }
  return lines;
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return { detail: text.slice(0, 300) };
  }
}

/**
 * The wait a Retry-After header asks for, in ms (delay-seconds or an HTTP date), capped at 30 s;
 * null when there is none or it cannot be read.
 */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | null {
  if (!value) return null;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = /^[A-Za-z]{3}, /.test(text) ? Date.parse(text) : Number.NaN; // an IMF-fixdate
    if (Number.isNaN(at)) return null;
    ms = at - now;
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/**
 * POST `body` as JSON and return the parsed answer. Network failures and 502/503/504 are retried
 * with the same bytes (after Retry-After, else exponential backoff) for up to `retryForMs`; any
 * other non-2xx answer raises an ApiError.
 */
export async function postJson<T>(url: string, body: unknown, options: PostOptions = {}): Promise<T> {
  const fetchImpl = options.fetchImpl ?? globalThis.fetch.bind(globalThis);
  const sleep = options.sleep ?? defaultSleep;
  const now = options.now ?? Date.now;
  const retries = options.retries ?? Number.POSITIVE_INFINITY;
  const retryFor = options.retryForMs ?? 120_000;
  const delay = options.retryDelayMs ?? 500;
  const maxDelay = options.maxRetryDelayMs ?? 8_000;
  const token =
    options.csrfToken || (typeof document !== "undefined" ? csrfTokenFromCookie(document.cookie) : "");
  const payload = JSON.stringify(body ?? {});
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    Accept: "application/json",
    "X-Requested-With": "XMLHttpRequest",
  };
  if (token) headers["X-CSRFToken"] = token;

  const began = now();
  /** The wait before retrying after failed `attempt`, or null when the retries are spent. */
  const waitFor = (attempt: number, asked: number | null): number | null => {
    const wait = asked ?? Math.min(delay * 2 ** attempt, maxDelay);
    if (attempt >= retries || now() - began + wait > retryFor) return null;
    return wait;
  };

  for (let attempt = 0; ; attempt++) {
    let response: Response;
    try {
      response = await fetchImpl(url, { method: "POST", credentials: "same-origin", headers, body: payload });
    } catch {
      const wait = waitFor(attempt, null);
      if (wait === null) throw new ApiError(0, {}, NETWORK_MESSAGE);
      options.onRetry?.({ attempt, status: 0, waitMs: wait });
      await sleep(wait);
      continue;
    }
    if (RETRY_STATUSES.has(response.status)) {
      const wait = waitFor(attempt, retryAfterMs(response.headers.get("Retry-After"), now()));
      if (wait !== null) {
        options.onRetry?.({ attempt, status: response.status, waitMs: wait });
        await sleep(wait);
        continue;
      }
    }
    const data = await readBody(response);
    if (!response.ok) {
      const errors = fieldErrors(data);
      throw new ApiError(response.status, errors, messageOf(response.status, data, errors));
    }
    return data as T;
  }
}

/** Show an error in `container` (text only), one list entry per field message. */
export function renderError(container: HTMLElement, error: unknown): void {
  const doc = container.ownerDocument;
  container.replaceChildren();
  const lines =
    error instanceof ApiError
      ? errorLines(error.errors).length
        ? errorLines(error.errors)
        : [error.message]
      : [error instanceof Error ? error.message : String(error)];
  const list = doc.createElement("ul");
  for (const line of lines) {
    const item = doc.createElement("li");
    item.textContent = line;
    list.append(item);
  }
  container.append(list);
  container.hidden = false;
}

/** Remove any shown error. */
export function clearError(container: HTMLElement): void {
  container.replaceChildren();
  container.hidden = true;
}
