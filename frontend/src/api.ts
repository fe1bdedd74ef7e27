/**
 * Talking to the hatlab server: JSON POSTs that carry Django's CSRF token, are retried when the
 * network fails (the body is serialised once, so a retried submission carries the same
 * submission_key and the server stores it once), and turn a 400 into errors that name the field.
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

export interface PostOptions {
  /** Django's CSRF token (sent as X-CSRFToken); read from the csrftoken cookie when absent. */
  csrfToken?: string;
  /** Extra attempts after the first when the network fails or the server answers 502/503/504. */
  retries?: number;
  /** Delay before the first retry; doubled for each further retry. */
  retryDelayMs?: number;
  fetchImpl?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

/** Gateway answers that mean "the request may not have arrived": safe to resend an idempotent POST. */
const RETRY_STATUSES = new Set([502, 503, 504]);

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
 * POST `body` as JSON and return the parsed answer. Network failures and 502/503/504 are retried
 * with the same bytes (exponential backoff); any other non-2xx answer raises an ApiError.
 */
export async function postJson<T>(url: string, body: unknown, options: PostOptions = {}): Promise<T> {
  const fetchImpl = options.fetchImpl ?? globalThis.fetch.bind(globalThis);
  const sleep = options.sleep ?? defaultSleep;
  const retries = options.retries ?? 3;
  const delay = options.retryDelayMs ?? 500;
  const token =
    options.csrfToken || (typeof document !== "undefined" ? csrfTokenFromCookie(document.cookie) : "");
  const payload = JSON.stringify(body ?? {});
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    Accept: "application/json",
    "X-Requested-With": "XMLHttpRequest",
  };
  if (token) headers["X-CSRFToken"] = token;

  for (let attempt = 0; ; attempt++) {
    let response: Response;
    try {
      response = await fetchImpl(url, { method: "POST", credentials: "same-origin", headers, body: payload });
    } catch {
      if (attempt >= retries) throw new ApiError(0, {}, NETWORK_MESSAGE);
      await sleep(delay * 2 ** attempt);
      continue;
    }
    if (RETRY_STATUSES.has(response.status) && attempt < retries) {
      await sleep(delay * 2 ** attempt);
      continue;
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
