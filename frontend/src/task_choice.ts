/**
 * The page of paper 004's three forced-choice tasks (Lertvittayakumjorn & Toni 2019, Table 1), one
 * controller parameterised by the task kind and the question's payload:
 *
 * - reveal_model: the text twice, side by side, with model A's and model B's evidence highlighted,
 *   and the class both predicted; "which model is more reasonable?"
 * - justify: only the evidence texts; "which class is the document most likely to be?"
 * - investigate: the predicted class, its probability, evidence for it and evidence for the other
 *   class(es); "what is the true class?"
 *
 * The answer buttons come from the study config (`choices`, in the order of the paper's Figure 2):
 * an option with "confident" / "not confident", and "no preference" where the task has it. Keys 1–9
 * pick an answer, Enter submits; buttons are large enough to tap. The page never learns which
 * explanation method it shows nor the correct answer: the server keeps both.
 */

import { ApiError, clearError, newSubmissionKey, postJson, renderError } from "./api";

export const NO_PREFERENCE = "no preference";
export const KINDS = ["reveal_model", "justify", "investigate"] as const;
export type Kind = (typeof KINDS)[number];

export interface Choice {
  choice: string;
  confident: boolean | null;
}

export interface ChoiceConfig {
  instructions?: string;
  time_limit_s?: number;
  labels?: string[];
  options?: string[];
  choices?: Choice[];
  no_preference?: boolean;
}

export interface TaskConfig {
  study: string;
  kind: string;
  next_url: string;
  submit_url_template: string;
  done_url?: string;
  csrf_token?: string;
  config: ChoiceConfig;
}

export interface RevealPayload {
  words: string[];
  breaks?: number[];
  predicted: string;
  evidence: Record<string, Array<[number, number]>>;
}

export interface JustifyPayload {
  evidence: string[];
}

export interface InvestigatePayload {
  predicted: string;
  probability: number;
  evidence: string[];
  counter_evidence: string[];
  counter_labels: string[];
}

export type Payload = RevealPayload | JustifyPayload | InvestigatePayload;

export interface Completion {
  redirect_url?: string;
  code?: string;
  message?: string;
}

export interface NextItem {
  assignment: string;
  expires_at?: string;
  item: { kind: string; payload: Payload };
  progress?: { done: number; total: number };
  config?: ChoiceConfig;
}

export type NextAnswer = NextItem | { done: true; completion?: Completion };

export interface ControllerOptions {
  now?: () => number;
  fetchImpl?: typeof fetch;
  retryDelayMs?: number;
  navigate?: (url: string) => void;
  keyFactory?: () => string;
}

/** Read and check the JSON configuration that the template embeds (`#hatlab-task`). */
export function readTaskConfig(doc: Document, id = "hatlab-task"): TaskConfig {
  const el = doc.getElementById(id);
  if (!el?.textContent) throw new Error(`The page has no #${id} configuration.`);
  const config = JSON.parse(el.textContent) as TaskConfig;
  for (const key of ["next_url", "submit_url_template"] as const) {
    if (typeof config[key] !== "string" || !config[key]) throw new Error(`Task configuration lacks ${key}.`);
  }
  if (!(KINDS as readonly string[]).includes(config.kind)) {
    throw new Error(`Task kind ${JSON.stringify(config.kind)} is not one of ${KINDS.join(", ")}.`);
  }
  config.config = config.config ?? {};
  return config;
}

export function submitUrl(template: string, assignment: string): string {
  return template.replace("ASSIGNMENT", encodeURIComponent(assignment));
}

/** The two lines of an answer button: what is chosen, and how sure. */
export function choiceText(kind: string, c: Choice): { main: string; sub: string } {
  if (c.choice === NO_PREFERENCE) return { main: "No preference", sub: "" };
  const main = kind === "reveal_model" ? `Model ${c.choice}` : c.choice;
  return { main, sub: c.confident ? "confident" : "not confident" };
}

/** The answer buttons: the config's `choices`, or built from `options` when it has none. */
export function answerChoices(config: ChoiceConfig): Choice[] {
  if (Array.isArray(config.choices) && config.choices.length) return config.choices;
  const options = config.options ?? config.labels ?? [];
  const out: Choice[] = options.flatMap((o) => [
    { choice: o, confident: true },
    { choice: o, confident: false },
  ]);
  if (config.no_preference !== false) out.push({ choice: NO_PREFERENCE, confident: null });
  return out;
}

/** Which words fall inside any of the `[first, end)` ranges. */
export function markedWords(count: number, ranges: ReadonlyArray<readonly [number, number]>): boolean[] {
  const marked = new Array<boolean>(count).fill(false);
  for (const [first, end] of ranges) {
    for (let i = Math.max(0, first); i < Math.min(count, end); i++) marked[i] = true;
  }
  return marked;
}

/**
 * The words as a paragraph (text nodes only), runs of marked words inside one `<mark>`, a line
 * break before each word listed in `breaks`.
 */
export function renderWords(
  doc: Document,
  words: string[],
  marked: boolean[],
  breaks: number[] = [],
): HTMLElement {
  const p = doc.createElement("p");
  p.className = "fc-text";
  const lineBreaks = new Set(breaks);
  let mark: HTMLElement | null = null;
  words.forEach((word, i) => {
    if (lineBreaks.has(i)) {
      mark = null;
      p.append(doc.createElement("br"));
    } else if (i > 0 && !(mark && marked[i])) {
      p.append(" ");
    }
    if (marked[i]) {
      if (!mark) {
        mark = doc.createElement("mark");
        p.append(mark);
      } else {
        mark.append(" ");
      }
      mark.append(word);
    } else {
      mark = null;
      p.append(word);
    }
  });
  return p;
}

/** A probability as "0.62 (62 %)". */
export function formatProbability(p: number): string {
  if (typeof p !== "number" || !Number.isFinite(p)) return "unknown";
  return `${p.toFixed(2)} (${Math.round(p * 100)} %)`;
}

/** Other classes in words: "negative", "CS or MA", "A, B or C". */
export function orList(items: string[]): string {
  if (items.length <= 1) return items[0] ?? "";
  return `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}

function el<K extends keyof HTMLElementTagNameMap>(
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

function snippetList(doc: Document, snippets: string[], label: string): HTMLElement {
  const list = el(doc, "ul", "fc-evidence");
  list.setAttribute("aria-label", label);
  if (!snippets.length) {
    const none = el(doc, "li", "fc-none", "none");
    list.append(none);
  }
  for (const s of snippets) list.append(el(doc, "li", "fc-snippet", s));
  return list;
}

/** The question part of the page for one payload; returns the box and the question sentence. */
export function renderQuestion(
  doc: Document,
  kind: string,
  payload: Payload,
): { box: HTMLElement; prompt: string } {
  const box = el(doc, "div", `fc-question-box fc-${kind}`);
  if (kind === "reveal_model") {
    const p = payload as RevealPayload;
    const predicted = el(doc, "p", "fc-predicted", "Both models classify this text as ");
    predicted.append(el(doc, "strong", "fc-class", p.predicted), ".");
    const sides = el(doc, "div", "fc-sides");
    for (const side of ["A", "B"]) {
      const panel = el(doc, "section", "fc-side");
      panel.dataset.side = side;
      panel.setAttribute("aria-label", `Model ${side}`);
      panel.append(el(doc, "h3", "fc-side-title", `Model ${side}`));
      const marked = markedWords(p.words.length, p.evidence?.[side] ?? []);
      panel.append(renderWords(doc, p.words, marked, p.breaks ?? []));
      sides.append(panel);
    }
    box.append(predicted, sides);
    return { box, prompt: "Which model is more reasonable?" };
  }
  if (kind === "justify") {
    const p = payload as JustifyPayload;
    box.append(
      el(doc, "p", "fc-lead", "These texts were taken from one document:"),
      snippetList(doc, p.evidence ?? [], "Evidence texts"),
    );
    return { box, prompt: "Which class is the document most likely to be?" };
  }
  const p = payload as InvestigatePayload;
  const predicted = el(doc, "p", "fc-predicted", "The model predicts ");
  predicted.append(
    el(doc, "strong", "fc-class", p.predicted),
    ` with probability ${formatProbability(p.probability)}.`,
  );
  const forBox = el(doc, "section", "fc-group for");
  forBox.append(
    el(doc, "h3", "fc-group-title", `Evidence for ${p.predicted}`),
    snippetList(doc, p.evidence ?? [], `Evidence for ${p.predicted}`),
  );
  const others = orList(p.counter_labels ?? []) || "the other classes";
  const againstBox = el(doc, "section", "fc-group against");
  againstBox.append(
    el(doc, "h3", "fc-group-title", `Evidence for ${others}`),
    snippetList(doc, p.counter_evidence ?? [], `Evidence for ${others}`),
  );
  box.append(predicted, forBox, againstBox);
  return { box, prompt: "What is the most likely class of the text?" };
}

const STALE_STATUSES = new Set([404, 409, 410]);

export class ChoiceTask {
  readonly root: HTMLElement;
  private readonly doc: Document;
  private readonly task: TaskConfig;
  private readonly options: ControllerOptions;
  private readonly now: () => number;
  private readonly progressText: HTMLElement;
  private readonly progressBar: HTMLProgressElement;
  private readonly timer: HTMLElement;
  private readonly questionSlot: HTMLElement;
  private readonly prompt: HTMLElement;
  private readonly choiceBox: HTMLElement;
  private readonly errorBox: HTMLElement;
  private readonly status: HTMLElement;
  private readonly submitButton: HTMLButtonElement;
  private readonly taskBox: HTMLElement;
  private readonly doneBox: HTMLElement;
  private choices: Choice[] = [];
  private buttons: HTMLButtonElement[] = [];
  private chosen: number | null = null;
  private current: NextItem | null = null;
  private submissionKey = "";
  private busy = false;
  private shownAt = 0;
  private firstChoiceAt: number | null = null;
  private changes = 0;
  private timerHandle: ReturnType<typeof setInterval> | null = null;

  constructor(root: HTMLElement, task: TaskConfig, options: ControllerOptions = {}) {
    this.root = root;
    this.doc = root.ownerDocument;
    this.task = task;
    this.options = options;
    this.now = options.now ?? (() => Date.now());
    const d = this.doc;

    this.taskBox = el(d, "section", "ht-task fc-task");
    this.taskBox.hidden = true;
    const head = el(d, "div", "ht-progress");
    this.progressText = el(d, "h2", "ht-progress-text");
    this.progressText.tabIndex = -1;
    this.progressBar = el(d, "progress", "ht-progress-bar");
    this.progressBar.setAttribute("aria-label", "Progress");
    this.timer = el(d, "span", "ht-timer");
    head.append(this.progressText, this.progressBar, this.timer);

    this.questionSlot = el(d, "div", "fc-question-slot");
    this.prompt = el(d, "p", "ht-question fc-prompt");
    this.prompt.id = "fc-prompt";
    this.choiceBox = el(d, "div", "fc-choices");
    this.choiceBox.setAttribute("role", "group");
    this.choiceBox.setAttribute("aria-labelledby", this.prompt.id);

    this.errorBox = el(d, "div", "ht-errors");
    this.errorBox.setAttribute("role", "alert");
    this.errorBox.hidden = true;
    const actions = el(d, "div", "ht-actions");
    this.submitButton = el(d, "button", "ht-submit", "Submit and continue");
    this.submitButton.type = "button";
    this.submitButton.disabled = true;
    this.submitButton.setAttribute("aria-keyshortcuts", "Enter");
    actions.append(this.submitButton);
    this.taskBox.append(head, this.questionSlot, this.prompt, this.choiceBox, this.errorBox, actions);

    this.doneBox = el(d, "section", "ht-done");
    this.doneBox.hidden = true;
    this.status = el(d, "p", "ht-status");
    this.status.setAttribute("aria-live", "polite");
    root.replaceChildren(this.status, this.taskBox, this.doneBox);

    this.submitButton.addEventListener("click", () => void this.submit());
    d.addEventListener("keydown", this.keyListener);
  }

  private readonly keyListener = (event: KeyboardEvent): void => this.onKey(event);

  destroy(): void {
    this.stopTimer();
    this.doc.removeEventListener("keydown", this.keyListener);
  }

  start(): Promise<void> {
    return this.loadNext();
  }

  /** The chosen answer, as the server takes it (null before a choice). */
  answer(): Choice | null {
    if (this.chosen === null) return null;
    const c = this.choices[this.chosen];
    return { choice: c.choice, confident: c.choice === NO_PREFERENCE ? null : Boolean(c.confident) };
  }

  async loadNext(): Promise<void> {
    this.stopTimer();
    this.setState("loading");
    this.status.textContent = "Loading…";
    let answer: NextAnswer;
    try {
      answer = await postJson<NextAnswer>(this.task.next_url, {}, this.postOptions());
    } catch (error) {
      this.setState("error");
      this.status.textContent = "";
      this.taskBox.hidden = false;
      renderError(this.errorBox, error);
      this.showRetry();
      return;
    }
    if ("done" in answer && answer.done) {
      this.finish(answer.completion ?? {});
      return;
    }
    this.show(answer as NextItem);
  }

  /** Choose answer `index` (a button click, a tap or a number key). */
  choose(index: number): void {
    if (!this.current || this.busy || index < 0 || index >= this.choices.length) return;
    if (this.firstChoiceAt === null) this.firstChoiceAt = this.now();
    if (this.chosen !== null && this.chosen !== index) this.changes += 1;
    this.chosen = index;
    this.syncControls();
  }

  async submit(): Promise<void> {
    const item = this.current;
    const answer = this.answer();
    if (!item || this.busy || answer === null) return;
    this.busy = true;
    this.syncControls();
    this.setState("saving");
    this.status.textContent = "Saving…";
    clearError(this.errorBox);
    const end = this.now();
    const body = {
      submission_key: this.submissionKey,
      answer,
      timings: {
        read_ms: Math.max(0, Math.round((this.firstChoiceAt ?? end) - this.shownAt)),
        answer_ms: Math.max(0, Math.round(end - this.shownAt)),
      },
      signals: { choice_changes: this.changes },
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
        this.showRetry("Get another question");
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

  // ---- rendering ----------------------------------------------------------------------------

  private show(next: NextItem): void {
    const config = { ...this.task.config, ...(next.config ?? {}) };
    this.current = next;
    this.submissionKey = (this.options.keyFactory ?? newSubmissionKey)();
    this.chosen = null;
    this.firstChoiceAt = null;
    this.changes = 0;
    const kind = next.item.kind || this.task.kind;
    const { box, prompt } = renderQuestion(this.doc, kind, next.item.payload);
    this.questionSlot.replaceChildren(box);
    this.renderChoices(kind, answerChoices(config));
    const keys = Math.min(this.choices.length, 9);
    this.prompt.textContent = keys > 1 ? `${prompt} (keys 1–${keys}, then Enter)` : prompt;

    const done = next.progress?.done ?? 0;
    const total = next.progress?.total ?? 0;
    this.progressText.textContent = total ? `Question ${done + 1} of ${total}` : "Question";
    this.progressBar.max = Math.max(total, 1);
    this.progressBar.value = Math.min(done, total);
    this.status.textContent = "";
    clearError(this.errorBox);
    this.retryButton()?.remove();
    this.doneBox.hidden = true;
    this.taskBox.hidden = false;
    this.shownAt = this.now();
    this.startTimer(next.expires_at);
    this.setState("item");
    this.syncControls();
    this.progressText.focus({ preventScroll: false });
  }

  private renderChoices(kind: string, choices: Choice[]): void {
    this.choices = choices;
    this.buttons = choices.map((c, i) => {
      const button = el(this.doc, "button", "ht-label fc-choice");
      button.type = "button";
      button.dataset.choice = c.choice;
      button.dataset.confident = c.confident === null ? "" : String(c.confident);
      button.setAttribute("aria-pressed", "false");
      const text = choiceText(kind, c);
      if (i < 9) {
        const key = el(this.doc, "kbd", "ht-key", String(i + 1));
        key.setAttribute("aria-hidden", "true");
        button.append(key, " ");
        button.setAttribute("aria-keyshortcuts", String(i + 1));
      }
      const main = el(this.doc, "span", "fc-choice-main", text.main);
      button.append(main);
      if (text.sub) button.append(el(this.doc, "span", "fc-choice-sub", text.sub));
      button.setAttribute("aria-label", text.sub ? `${text.main}, ${text.sub}` : text.main);
      button.addEventListener("click", () => this.choose(i));
      return button;
    });
    this.choiceBox.replaceChildren(...this.buttons);
  }

  private syncControls(): void {
    this.buttons.forEach((button, i) => {
      const on = i === this.chosen;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("is-chosen", on);
      button.disabled = this.busy;
    });
    this.submitButton.disabled = this.busy || !this.current || this.chosen === null;
  }

  private onKey(event: KeyboardEvent): void {
    if (event.ctrlKey || event.metaKey || event.altKey || !this.current || this.taskBox.hidden) return;
    const target = event.target as HTMLElement | null;
    if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName)))
      return;
    if (event.key === "Enter") {
      // Enter on a focused button presses that button; elsewhere it submits the chosen answer.
      if (target && ["BUTTON", "A", "SUMMARY"].includes(target.tagName)) return;
      if (this.chosen === null) return;
      event.preventDefault();
      void this.submit();
      return;
    }
    if (!/^[1-9]$/.test(event.key)) return;
    const index = Number(event.key) - 1;
    if (index >= this.choices.length) return;
    event.preventDefault();
    this.choose(index);
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

  private retryButton(): HTMLButtonElement | null {
    return this.taskBox.querySelector<HTMLButtonElement>(".ht-retry");
  }

  private showRetry(text = "Try again"): void {
    this.retryButton()?.remove();
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

  private setState(state: "loading" | "item" | "saving" | "done" | "error"): void {
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

/** Start the page: find the mount point and the configuration, then fetch the first question. */
export function mount(doc: Document = document): ChoiceTask | null {
  const root = doc.getElementById("hatlab-app");
  if (!root) return null;
  try {
    const task = new ChoiceTask(root, readTaskConfig(doc));
    void task.start();
    return task;
  } catch (error) {
    const box = doc.createElement("p");
    box.className = "ht-errors";
    box.setAttribute("role", "alert");
    box.textContent = error instanceof Error ? error.message : String(error);
    root.replaceChildren(box);
    return null;
  }
}

if (typeof document !== "undefined" && document.getElementById("hatlab-task")) {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => mount());
  else mount();
}
