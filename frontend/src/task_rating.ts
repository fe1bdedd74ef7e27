/**
 * The sentence-rating task page (paper 001, HATDOC): the whole review is shown with one sentence
 * highlighted, with one aspect and the review's star rating for it, and the annotator answers "How
 * much does the highlighted sentence explain the given aspect rating?" on five levels. Keys 1–5 pick
 * a level, Enter submits; the buttons are large enough to tap.
 *
 * `TaskFlow` is the item loop shared with the token-marking page: fetch an item, let the page's kind
 * render it and build its answer, submit it with a submission_key made once per item (a resend after
 * a network failure is stored once), go on until the study says done. Text is written only with
 * textContent.
 */

import { ApiError, clearError, newSubmissionKey, postJson, renderError } from "./api";

export interface Completion {
  redirect_url?: string;
  code?: string;
  message?: string;
}

export interface TaskConfig<C = Record<string, unknown>> {
  study: string;
  kind: string;
  next_url: string;
  submit_url_template: string;
  done_url?: string;
  csrf_token?: string;
  config: C;
}

export interface NextItem<P> {
  assignment: string;
  expires_at?: string;
  item: { kind: string; payload: P };
  progress?: { done: number; total: number };
}

export type NextAnswer<P> = NextItem<P> | { done: true; completion?: Completion };

export interface FlowOptions {
  now?: () => number;
  fetchImpl?: typeof fetch;
  retryDelayMs?: number;
  navigate?: (url: string) => void;
  keyFactory?: () => string;
}

/** Read and check the JSON configuration that the template embeds (Django's json_script). */
export function readTaskConfig<C>(doc: Document, id = "hatlab-task"): TaskConfig<C> {
  const node = doc.getElementById(id);
  if (!node?.textContent) throw new Error(`The page has no #${id} configuration.`);
  const config = JSON.parse(node.textContent) as TaskConfig<C>;
  for (const key of ["next_url", "submit_url_template"] as const) {
    if (typeof config[key] !== "string" || !config[key]) throw new Error(`Task configuration lacks ${key}.`);
  }
  config.config = config.config ?? ({} as C);
  return config;
}

export function submitUrl(template: string, assignment: string): string {
  return template.replace("ASSIGNMENT", encodeURIComponent(assignment));
}

export function el<K extends keyof HTMLElementTagNameMap>(
  doc: Document,
  tag: K,
  className: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = doc.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Whether a key event comes from a text field (shortcuts stay out of the way there). */
export function fromTextField(event: Event): boolean {
  const target = event.target as HTMLElement | null;
  return (
    !!target?.tagName &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))
  );
}

/** Assignments that can no longer be submitted: expired, released, or gone. */
const STALE_STATUSES = new Set([404, 409, 410]);

/** The item loop of a task page; a kind supplies `render`, `answer`, `timings` and `signals`. */
export abstract class TaskFlow<P, C = Record<string, unknown>> {
  readonly root: HTMLElement;
  readonly doc: Document;
  readonly task: TaskConfig<C>;
  readonly options: FlowOptions;
  readonly now: () => number;
  /** Where a kind puts its item view. */
  readonly body: HTMLElement;
  readonly submitButton: HTMLButtonElement;
  protected readonly status: HTMLElement;
  protected readonly taskBox: HTMLElement;
  protected readonly doneBox: HTMLElement;
  protected readonly errorBox: HTMLElement;
  protected readonly progressText: HTMLElement;
  protected readonly progressBar: HTMLProgressElement;
  protected readonly timer: HTMLElement;
  protected current: NextItem<P> | null = null;
  protected busy = false;
  private submissionKey = "";
  private timerHandle: ReturnType<typeof setInterval> | null = null;
  private readonly keyListener = (event: KeyboardEvent): void => this.onKey(event);

  constructor(root: HTMLElement, task: TaskConfig<C>, options: FlowOptions = {}) {
    this.root = root;
    this.doc = root.ownerDocument;
    this.task = task;
    this.options = options;
    this.now = options.now ?? (() => performance.now());
    const d = this.doc;
    this.taskBox = el(d, "section", "ht-task");
    this.taskBox.hidden = true;
    const head = el(d, "div", "ht-progress");
    this.progressText = el(d, "h2", "ht-progress-text");
    this.progressText.tabIndex = -1;
    this.progressBar = el(d, "progress", "ht-progress-bar");
    this.progressBar.setAttribute("aria-label", "Progress");
    this.timer = el(d, "span", "ht-timer");
    head.append(this.progressText, this.progressBar, this.timer);
    this.body = el(d, "div", "ht-body");
    this.errorBox = el(d, "div", "ht-errors");
    this.errorBox.setAttribute("role", "alert");
    this.errorBox.hidden = true;
    const actions = el(d, "div", "ht-actions");
    this.submitButton = el(d, "button", "ht-submit", "Submit and continue");
    this.submitButton.type = "button";
    this.submitButton.disabled = true;
    actions.append(this.submitButton);
    this.taskBox.append(head, this.body, this.errorBox, actions);
    this.doneBox = el(d, "section", "ht-done");
    this.doneBox.hidden = true;
    this.status = el(d, "p", "ht-status");
    this.status.setAttribute("aria-live", "polite");
    root.replaceChildren(this.status, this.taskBox, this.doneBox);
    this.submitButton.addEventListener("click", () => void this.submit());
    d.addEventListener("keydown", this.keyListener);
  }

  /** Show one item in `body`. */
  protected abstract render(item: NextItem<P>): void;
  /** The answer to send, or null while it is not complete. */
  abstract answer(): unknown | null;
  /** Why the answer cannot be sent yet (shown as an error), or null. */
  protected missing(): string | null {
    return this.answer() === null ? "answer the question first" : null;
  }
  protected abstract timings(): Record<string, number | null>;
  protected signals(): Record<string, unknown> {
    return {};
  }
  /** Page-wide keys of the kind (called only while an item is shown). */
  protected onItemKey(_event: KeyboardEvent): void {}

  get item(): NextItem<P> | null {
    return this.current;
  }

  start(): Promise<void> {
    return this.loadNext();
  }

  destroy(): void {
    this.stopTimer();
    this.doc.removeEventListener("keydown", this.keyListener);
  }

  async loadNext(): Promise<void> {
    this.stopTimer();
    this.setState("loading");
    this.status.textContent = "Loading…";
    let next: NextAnswer<P>;
    try {
      next = await postJson<NextAnswer<P>>(this.task.next_url, {}, this.postOptions());
    } catch (error) {
      this.setState("error");
      this.status.textContent = "";
      this.taskBox.hidden = false;
      renderError(this.errorBox, error);
      this.showRetry();
      return;
    }
    if ("done" in next && next.done) {
      this.finish(next.completion ?? {});
      return;
    }
    this.show(next as NextItem<P>);
  }

  async submit(): Promise<void> {
    const item = this.current;
    if (!item || this.busy) return;
    clearError(this.errorBox);
    const missing = this.missing();
    if (missing) {
      renderError(this.errorBox, new ApiError(400, { answer: [missing] }, missing));
      return;
    }
    this.busy = true;
    this.syncControls();
    this.setState("saving");
    this.status.textContent = "Saving…";
    const body = {
      submission_key: this.submissionKey,
      answer: this.answer(),
      timings: this.timings(),
      signals: this.signals(),
    };
    try {
      await postJson(submitUrl(this.task.submit_url_template, item.assignment), body, this.postOptions());
    } catch (error) {
      this.busy = false;
      this.status.textContent = "";
      renderError(this.errorBox, error);
      if (error instanceof ApiError && STALE_STATUSES.has(error.status)) {
        this.current = null;
        this.setState("error");
        this.showRetry("Get another item");
        return;
      }
      this.setState("item");
      this.syncControls();
      return;
    }
    this.busy = false;
    this.current = null;
    await this.loadNext();
  }

  /** Enable the submit button when an answer is complete; kinds call it after each change. */
  syncControls(): void {
    this.submitButton.disabled = this.busy || !this.current || this.answer() === null;
  }

  private show(next: NextItem<P>): void {
    this.current = next;
    this.submissionKey = (this.options.keyFactory ?? newSubmissionKey)();
    const done = next.progress?.done ?? 0;
    const total = next.progress?.total ?? 0;
    this.progressText.textContent = total ? `Item ${done + 1} of ${total}` : "Item";
    this.progressBar.max = Math.max(total, 1);
    this.progressBar.value = Math.min(done, total);
    this.status.textContent = "";
    clearError(this.errorBox);
    this.taskBox.querySelector(".ht-retry")?.remove();
    this.doneBox.hidden = true;
    this.taskBox.hidden = false;
    this.render(next);
    this.startTimer(next.expires_at);
    this.setState("item");
    this.syncControls();
    this.progressText.focus({ preventScroll: true });
  }

  private onKey(event: KeyboardEvent): void {
    if (event.ctrlKey || event.metaKey || event.altKey || !this.current || this.busy || this.taskBox.hidden)
      return;
    if (fromTextField(event)) return;
    this.onItemKey(event);
  }

  private finish(completion: Completion): void {
    this.stopTimer();
    this.current = null;
    this.taskBox.hidden = true;
    this.status.textContent = "";
    const d = this.doc;
    const title = el(d, "h2", "ht-done-title", "Thank you — all done.");
    const parts: HTMLElement[] = [title];
    if (completion.message) parts.push(el(d, "p", "ht-done-message", completion.message));
    if (completion.code) {
      const p = el(d, "p", "ht-done-code", "Completion code: ");
      p.append(el(d, "code", "ht-code", completion.code));
      parts.push(p);
    }
    const target = completion.redirect_url || this.task.done_url;
    if (target) {
      const link = el(
        d,
        "a",
        "ht-done-link",
        completion.redirect_url ? "Return to the study platform" : "Finish",
      );
      link.href = target;
      const p = el(d, "p", "ht-done-next");
      p.append(link);
      parts.push(p);
    }
    this.doneBox.replaceChildren(...parts);
    this.doneBox.hidden = false;
    this.setState("done");
    title.tabIndex = -1;
    title.focus();
    if (completion.redirect_url) {
      (this.options.navigate ?? ((url: string) => d.defaultView?.location.assign(url)))(
        completion.redirect_url,
      );
    }
  }

  private showRetry(text = "Try again"): void {
    this.taskBox.querySelector(".ht-retry")?.remove();
    const button = el(this.doc, "button", "ht-retry", text);
    button.type = "button";
    button.addEventListener("click", () => {
      button.remove();
      void this.loadNext();
    });
    this.errorBox.after(button);
    this.syncControls();
  }

  private startTimer(expiresAt?: string): void {
    this.stopTimer();
    const end = expiresAt ? Date.parse(expiresAt) : Number.NaN;
    if (Number.isNaN(end)) {
      this.timer.textContent = "";
      return;
    }
    const tick = () => {
      const left = Math.max(0, Math.round((end - Date.now()) / 1000));
      this.timer.classList.toggle("is-short", left < 60);
      if (left === 0) {
        this.timer.textContent = "Time is up: submit now";
        this.stopTimer();
        return;
      }
      this.timer.textContent = `Time left ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
    };
    tick();
    this.timerHandle = setInterval(tick, 1000);
  }

  private stopTimer(): void {
    if (this.timerHandle !== null) clearInterval(this.timerHandle);
    this.timerHandle = null;
  }

  protected setState(state: "loading" | "item" | "saving" | "done" | "error"): void {
    this.root.dataset.state = state;
  }

  private postOptions() {
    return {
      csrfToken: this.task.csrf_token,
      fetchImpl: this.options.fetchImpl,
      retryDelayMs: this.options.retryDelayMs,
    };
  }
}

// ---- sentence rating ------------------------------------------------------------------------

export interface RatingPayload {
  words: string[];
  breaks?: number[];
  sentence: [number, number];
  aspect: string;
  aspect_title?: string;
  aspect_description?: string;
  rating: number;
  rating_max?: number;
}

export interface RatingConfig {
  question?: string;
  labels?: Array<{ value: number; text: string }>;
  instructions?: string;
  time_limit_s?: number;
}

export const DEFAULT_LEVELS = [
  { value: 1, text: "not at all" },
  { value: 2, text: "a little" },
  { value: 3, text: "moderately" },
  { value: 4, text: "rather well" },
  { value: 5, text: "very well" },
];

/** "★★★★☆" for 4 of 5. */
export function stars(rating: number, max = 5): string {
  const full = Math.max(0, Math.min(max, Math.round(rating)));
  return "★".repeat(full) + "☆".repeat(max - full);
}

/**
 * The review as text nodes, with the words of `sentence` ([first, end)) inside one `<mark>`;
 * `breaks` are indices of words that start a new paragraph.
 */
export function renderReview(
  doc: Document,
  words: readonly string[],
  sentence: readonly [number, number],
  breaks: readonly number[] = [],
): { review: HTMLElement; target: HTMLElement } {
  const review = el(doc, "div", "rt-review");
  const target = el(doc, "mark", "rt-target");
  target.setAttribute("aria-label", "highlighted sentence");
  const breakSet = new Set(breaks);
  const [first, end] = sentence;
  let parent: HTMLElement = review;
  words.forEach((word, i) => {
    if (i > 0) {
      const inside = i > first && i < end ? target : review;
      inside.append(breakSet.has(i) ? el(doc, "span", "rt-break") : doc.createTextNode(" "));
    }
    if (i === first) {
      review.append(target);
      parent = target;
    }
    if (i === end) parent = review;
    parent.append(doc.createTextNode(word));
  });
  return { review, target };
}

export class RatingTask extends TaskFlow<RatingPayload, RatingConfig> {
  private readonly aspectLine: HTMLElement;
  private readonly aspectNote: HTMLElement;
  private readonly reviewBox: HTMLElement;
  private readonly question: HTMLElement;
  private readonly choices: HTMLElement;
  private buttons: HTMLButtonElement[] = [];
  private levels = DEFAULT_LEVELS;
  private chosen: number | null = null;
  private shownAt = 0;
  private chosenAt: number | null = null;
  private changes = 0;

  constructor(root: HTMLElement, task: TaskConfig<RatingConfig>, options: FlowOptions = {}) {
    super(root, task, options);
    const d = this.doc;
    this.reviewBox = el(d, "div", "rt-review-box");
    this.aspectLine = el(d, "p", "rt-aspect");
    this.aspectNote = el(d, "p", "rt-aspect-note");
    this.question = el(d, "p", "ht-question");
    this.question.id = "rt-question";
    this.choices = el(d, "div", "ht-labels rt-choices");
    this.choices.setAttribute("role", "group");
    this.choices.setAttribute("aria-labelledby", this.question.id);
    this.body.append(this.reviewBox, this.aspectLine, this.aspectNote, this.question, this.choices);
  }

  get rating(): number | null {
    return this.chosen;
  }

  answer(): { rating: number } | null {
    return this.chosen === null ? null : { rating: this.chosen };
  }

  protected missing(): string | null {
    return this.chosen === null ? "choose how much the sentence explains the rating" : null;
  }

  protected timings(): Record<string, number | null> {
    const at = this.now();
    const readEnd = this.chosenAt ?? at;
    return { read_ms: Math.round(readEnd - this.shownAt), answer_ms: Math.round(at - readEnd) };
  }

  protected signals(): Record<string, unknown> {
    return { changes: this.changes };
  }

  /** Pick level `value` (1–5). */
  choose(value: number): void {
    if (!this.current || this.busy || !this.levels.some((l) => l.value === value)) return;
    if (this.chosenAt === null) this.chosenAt = this.now();
    else if (this.chosen !== value) this.changes++;
    this.chosen = value;
    this.buttons.forEach((button) => {
      const on = Number(button.dataset.value) === value;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("is-chosen", on);
    });
    this.syncControls();
  }

  protected render(next: NextItem<RatingPayload>): void {
    const p = next.item.payload;
    const config = this.task.config;
    this.levels = config.labels?.length ? config.labels : DEFAULT_LEVELS;
    this.chosen = null;
    this.chosenAt = null;
    this.changes = 0;
    this.shownAt = this.now();
    const { review, target } = renderReview(this.doc, p.words ?? [], p.sentence ?? [0, 0], p.breaks ?? []);
    this.reviewBox.replaceChildren(review);
    const max = p.rating_max ?? 5;
    const title = p.aspect_title || p.aspect;
    this.aspectLine.replaceChildren(
      el(this.doc, "strong", "rt-aspect-name", `${title}: `),
      el(this.doc, "span", "rt-stars", stars(p.rating, max)),
      el(
        this.doc,
        "span",
        "rt-rating",
        ` the reviewer rated ${title.toLowerCase()} ${p.rating} of ${max} stars`,
      ),
    );
    this.aspectLine.querySelector(".rt-stars")?.setAttribute("aria-hidden", "true");
    this.aspectNote.textContent = p.aspect_description ?? "";
    this.aspectNote.hidden = !p.aspect_description;
    const question =
      config.question ?? "How much does the highlighted sentence explain the given aspect rating?";
    this.question.textContent = `${question} (keys 1–${this.levels.length})`;
    this.buttons = this.levels.map((level, i) => {
      const button = el(this.doc, "button", "ht-label");
      button.type = "button";
      button.dataset.value = String(level.value);
      button.setAttribute("aria-pressed", "false");
      if (i < 9) {
        const key = el(this.doc, "kbd", "ht-key", String(i + 1));
        key.setAttribute("aria-hidden", "true");
        button.append(key, " ");
        button.setAttribute("aria-keyshortcuts", String(i + 1));
      }
      button.append(el(this.doc, "span", "ht-label-text", level.text));
      button.addEventListener("click", () => this.choose(level.value));
      return button;
    });
    this.choices.replaceChildren(...this.buttons);
    if (typeof target.scrollIntoView === "function") target.scrollIntoView({ block: "nearest" });
  }

  protected onItemKey(event: KeyboardEvent): void {
    if (/^[1-9]$/.test(event.key)) {
      const level = this.levels[Number(event.key) - 1];
      if (!level) return;
      event.preventDefault();
      this.choose(level.value);
    } else if (
      event.key === "Enter" &&
      this.chosen !== null &&
      !(event.target instanceof HTMLButtonElement)
    ) {
      event.preventDefault();
      void this.submit();
    }
  }
}

/** Start a page of `kind` with `make`: find the mount point and the configuration, then fetch. */
export function mountTask<T extends { start(): Promise<void> }>(
  doc: Document,
  kind: string,
  make: (root: HTMLElement, task: TaskConfig<never>) => T,
): T | null {
  const root = doc.getElementById("hatlab-app");
  if (!root) return null;
  try {
    const task = readTaskConfig<never>(doc);
    if (task.kind !== kind) return null;
    const flow = make(root, task);
    void flow.start();
    return flow;
  } catch (error) {
    const box = doc.createElement("p");
    box.className = "ht-errors";
    box.setAttribute("role", "alert");
    box.textContent = error instanceof Error ? error.message : String(error);
    root.replaceChildren(box);
    return null;
  }
}

export function mount(doc: Document = document): RatingTask | null {
  return mountTask(doc, "sentence_rating", (root, task) => new RatingTask(root, task));
}

/** Start on load when the page is a sentence-rating page (the marking page shares this module). */
export function autoMount(start: () => unknown): void {
  if (typeof document === "undefined" || !document.getElementById("hatlab-task")) return;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => start());
  else start();
}

autoMount(() => mount());
