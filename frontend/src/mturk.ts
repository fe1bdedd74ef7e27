/**
 * Handing a finished task back to Amazon Mechanical Turk (ExternalQuestion).
 *
 * MTurk frames the task page with `assignmentId`, `hitId`, `workerId` and `turkSubmitTo` in the URL.
 * While the worker only previews the HIT, `assignmentId` is `ASSIGNMENT_ID_NOT_AVAILABLE`: the page is
 * read-only. Once the worker has finished, the server's `{"done": true, "completion": {"form": ...}}`
 * names the form to post (`{turkSubmitTo}/mturk/externalSubmit` with the `assignmentId`); this module
 * posts it, adding a copy of the answers this page sent (field `hatlab`), so that the server's
 * reconciliation can recover an answer it never stored. Values are set through the DOM (`.value`),
 * never as HTML.
 */

export const PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE";
/** The form field that carries the copy of the answers (the server's `ANSWER_COPY_FIELD`). */
export const ANSWER_COPY_FIELD = "hatlab";
/** MTurk keeps answers up to 64 kB; the copy stays well below, dropping behaviour signals first. */
export const MAX_COPY_CHARS = 60000;

export interface MTurkParams {
  assignmentId: string;
  hitId: string;
  workerId: string;
  turkSubmitTo: string;
}

export interface CompletionForm {
  action: string;
  fields: Record<string, string>;
}

export interface CopiedSubmission {
  assignment: string;
  submission_key: string;
  answer: unknown;
  timings?: Record<string, unknown>;
  signals?: Record<string, unknown>;
}

/** The MTurk parameters of a page URL's query string, or null when MTurk did not open the page. */
export function mturkParams(search: string): MTurkParams | null {
  const query = new URLSearchParams(search);
  const assignmentId = query.get("assignmentId");
  if (!assignmentId) return null;
  return {
    assignmentId,
    hitId: query.get("hitId") ?? "",
    workerId: query.get("workerId") ?? "",
    turkSubmitTo: query.get("turkSubmitTo") ?? "",
  };
}

/** Whether the worker is only previewing the HIT (it must not be worked on). */
export function isPreview(params: MTurkParams | null): boolean {
  return params !== null && params.assignmentId === PREVIEW_ASSIGNMENT_ID;
}

/** Where an ExternalQuestion posts its answer, from the `turkSubmitTo` MTurk passed to the page. */
export function externalSubmitUrl(turkSubmitTo: string): string {
  return `${turkSubmitTo.replace(/\/+$/, "")}/mturk/externalSubmit`;
}

/** Whether `form` is one this page may post: http(s), ending in MTurk's externalSubmit path. */
export function isSubmitForm(form: unknown): form is CompletionForm {
  if (!form || typeof form !== "object") return false;
  const { action, fields } = form as CompletionForm;
  if (typeof action !== "string" || !fields || typeof fields !== "object") return false;
  let url: URL;
  try {
    url = new URL(action);
  } catch {
    return false;
  }
  return (
    (url.protocol === "https:" || url.protocol === "http:") && url.pathname.endsWith("/mturk/externalSubmit")
  );
}

/**
 * The answers this page has sent, kept in sessionStorage per study (so a reload does not lose them)
 * and serialised into the form field that MTurk stores with the assignment.
 */
export class AnswerCopy {
  private readonly key: string;
  private readonly storage: Storage | null;
  private memory: CopiedSubmission[] = [];

  constructor(study: string, storage: Storage | null = safeSessionStorage()) {
    this.key = `hatlab-copy:${study}`;
    this.storage = storage;
    this.memory = this.load();
  }

  add(entry: CopiedSubmission): void {
    this.memory = this.memory.filter((e) => e.submission_key !== entry.submission_key).concat([entry]);
    this.save();
  }

  entries(): CopiedSubmission[] {
    return this.memory.slice();
  }

  /** The JSON the `hatlab` field carries: `{"study", "submissions": [...]}`, at most MAX_COPY_CHARS. */
  toField(study: string): string {
    let entries = this.entries();
    let text = JSON.stringify({ study, submissions: entries });
    if (text.length <= MAX_COPY_CHARS) return text;
    entries = entries.map(({ signals: _signals, ...rest }) => rest);
    text = JSON.stringify({ study, submissions: entries });
    if (text.length <= MAX_COPY_CHARS) return text;
    // Still too long: keep the newest answers that fit (the oldest were most likely stored long ago).
    const sizes = entries.map((entry) => JSON.stringify(entry).length + 1);
    let total =
      JSON.stringify({ study, submissions: [], truncated: true }).length + sizes.reduce((a, b) => a + b, 0);
    let start = 0;
    while (total > MAX_COPY_CHARS && start < entries.length) {
      total -= sizes[start];
      start += 1;
    }
    return JSON.stringify({ study, submissions: entries.slice(start), truncated: true });
  }

  clear(): void {
    this.memory = [];
    this.storage?.removeItem(this.key);
  }

  private load(): CopiedSubmission[] {
    try {
      const raw = this.storage?.getItem(this.key);
      const parsed: unknown = raw ? JSON.parse(raw) : [];
      return Array.isArray(parsed) ? (parsed as CopiedSubmission[]) : [];
    } catch {
      return [];
    }
  }

  private save(): void {
    if (!this.storage) return;
    try {
      this.storage.setItem(this.key, JSON.stringify(this.memory));
    } catch {
      // Storage full or forbidden (third-party frame): the copy stays in memory for this page.
    }
  }
}

function safeSessionStorage(): Storage | null {
  try {
    return globalThis.sessionStorage ?? null;
  } catch {
    return null;
  }
}

/**
 * Build the completion form (hidden fields, values set as text) and post it, replacing the page.
 * Returns the form, or null when `form` is not an externalSubmit form.
 */
export function postCompletionForm(
  doc: Document,
  form: unknown,
  extra: Record<string, string> = {},
  submit: (element: HTMLFormElement) => void = (element) => element.submit(),
): HTMLFormElement | null {
  if (!isSubmitForm(form)) return null;
  const element = doc.createElement("form");
  element.method = "post";
  element.action = form.action;
  element.className = "mturk-submit";
  for (const [name, value] of Object.entries({ ...form.fields, ...extra })) {
    const input = doc.createElement("input");
    input.type = "hidden";
    input.name = name;
    input.value = String(value);
    element.append(input);
  }
  doc.body.append(element);
  submit(element);
  return element;
}
