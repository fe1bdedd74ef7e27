/**
 * The highlight task page (paper 000's read-first protocol, or free-style): fetch an item, let
 * the annotator choose a label and highlight words, submit, and go on until the study says done.
 *
 * The page's configuration comes from `<script id="hatlab-task" type="application/json">`
 * (Django's json_script). Each submission carries a submission_key made once per item, so a
 * resend after a network failure is stored once.
 */

import { ApiError, clearError, newSubmissionKey, postJson, renderError } from "./api";
import { HighlightWidget, type Mode } from "./highlight";

export interface LabelChoice {
  value: string;
  text: string;
}

export interface StudyConfig {
  mode?: Mode;
  labels?: Array<string | { value: string; text?: string; label?: string }>;
  time_limit_s?: number;
  instructions?: string;
  /** The label that may be submitted without highlights ("cannot decide"). */
  undecided_label?: string | null;
  /** Every other label needs at least one highlighted word. */
  require_highlight?: boolean;
}

export interface TaskConfig {
  study: string;
  kind: string;
  next_url: string;
  submit_url_template: string;
  done_url?: string;
  csrf_token?: string;
  config: StudyConfig;
}

export interface Completion {
  redirect_url?: string;
  code?: string;
  message?: string;
}

export interface NextItem {
  assignment: string;
  expires_at?: string;
  item: { kind: string; payload: { words: string[]; breaks?: number[] } };
  progress?: { done: number; total: number };
  config?: StudyConfig;
}

export type NextAnswer = NextItem | { done: true; completion?: Completion };

export interface ControllerOptions {
  now?: () => number;
  fetchImpl?: typeof fetch;
  retryDelayMs?: number;
  /** Where to go when the study hands the worker back to a platform (location.assign by default). */
  navigate?: (url: string) => void;
  keyFactory?: () => string;
}

/** Labels as `{value, text}`: the config may give plain strings or objects. */
export function normaliseLabels(labels: StudyConfig["labels"]): LabelChoice[] {
  return (labels ?? []).map((l) =>
    typeof l === "string" ? { value: l, text: l } : { value: l.value, text: l.text ?? l.label ?? l.value },
  );
}

/** Read and check the JSON configuration that the template embeds. */
export function readTaskConfig(doc: Document, id = "hatlab-task"): TaskConfig {
  const el = doc.getElementById(id);
  if (!el?.textContent) throw new Error(`The page has no #${id} configuration.`);
  const config = JSON.parse(el.textContent) as TaskConfig;
  for (const key of ["next_url", "submit_url_template"] as const) {
    if (typeof config[key] !== "string" || !config[key]) throw new Error(`Task configuration lacks ${key}.`);
  }
  config.config = config.config ?? {};
  return config;
}

export function submitUrl(template: string, assignment: string): string {
  return template.replace("ASSIGNMENT", encodeURIComponent(assignment));
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

/** Assignments that can no longer be submitted: expired, released, or gone. */
const STALE_STATUSES = new Set([404, 409, 410]);

export class HighlightTask {
  readonly root: HTMLElement;
  readonly widget: HighlightWidget;
  private readonly doc: Document;
  private readonly task: TaskConfig;
  private readonly options: ControllerOptions;
  private readonly progressText: HTMLElement;
  private readonly progressBar: HTMLProgressElement;
  private readonly timer: HTMLElement;
  private readonly labelBox: HTMLElement;
  private readonly question: HTMLElement;
  private readonly errorBox: HTMLElement;
  private readonly status: HTMLElement;
  private readonly submitButton: HTMLButtonElement;
  private readonly taskBox: HTMLElement;
  private readonly doneBox: HTMLElement;
  private labels: LabelChoice[] = [];
  private labelButtons: HTMLButtonElement[] = [];
  private mode: Mode;
  private itemConfig: StudyConfig;
  private current: NextItem | null = null;
  private submissionKey = "";
  private busy = false;
  private timerHandle: ReturnType<typeof setInterval> | null = null;

  constructor(root: HTMLElement, task: TaskConfig, options: ControllerOptions = {}) {
    this.root = root;
    this.doc = root.ownerDocument;
    this.task = task;
    this.options = options;
    this.mode = task.config.mode ?? "read_first";
    this.itemConfig = task.config;
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

    this.question = el(d, "p", "ht-question");
    this.question.id = "ht-question";
    const question = this.question;
    this.labelBox = el(d, "div", "ht-labels");
    this.labelBox.setAttribute("role", "group");
    this.labelBox.setAttribute("aria-labelledby", question.id);

    const widgetRoot = el(d, "div", "ht-widget");
    this.widget = new HighlightWidget(widgetRoot, {
      mode: this.mode,
      now: options.now,
      onChange: () => this.syncControls(),
    });

    this.errorBox = el(d, "div", "ht-errors");
    this.errorBox.setAttribute("role", "alert");
    this.errorBox.hidden = true;
    const actions = el(d, "div", "ht-actions");
    this.submitButton = el(d, "button", "ht-submit", "Submit and continue");
    this.submitButton.type = "button";
    this.submitButton.disabled = true;
    actions.append(this.submitButton);
    this.taskBox.append(head, question, this.labelBox, widgetRoot, this.errorBox, actions);

    this.doneBox = el(d, "section", "ht-done");
    this.doneBox.hidden = true;
    this.status = el(d, "p", "ht-status");
    this.status.setAttribute("aria-live", "polite");
    root.replaceChildren(this.status, this.taskBox, this.doneBox);

    this.submitButton.addEventListener("click", () => void this.submit());
    d.addEventListener("keydown", this.shortcutListener);
  }

  private readonly shortcutListener = (event: KeyboardEvent): void => this.onShortcut(event);

  /** Stop the timer and remove the page-wide listeners. */
  destroy(): void {
    this.stopTimer();
    this.doc.removeEventListener("keydown", this.shortcutListener);
    this.widget.destroy();
  }

  /** Fetch the first item. */
  start(): Promise<void> {
    return this.loadNext();
  }

  /** Ask the server for the next item (or the completion hand-off). */
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

  /** Send the current answer; on success go on to the next item. */
  async submit(): Promise<void> {
    const item = this.current;
    if (!item || this.busy || this.widget.label === null) return;
    this.busy = true;
    this.syncControls();
    this.setState("saving");
    this.status.textContent = "Saving…";
    clearError(this.errorBox);
    const missing = this.missingHighlight();
    if (missing) {
      this.busy = false;
      this.status.textContent = "";
      renderError(this.errorBox, new ApiError(400, { "answer.map": [missing] }, missing));
      this.setState("item");
      this.syncControls();
      return;
    }
    const body = {
      submission_key: this.submissionKey,
      answer: this.widget.answer(),
      timings: this.widget.timings(),
      signals: this.widget.signals(),
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
        this.showRetry("Get another text");
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

  /** Why the answer cannot be sent yet (a label other than the undecided one needs a highlight). */
  private missingHighlight(): string | null {
    const { require_highlight: required = false, undecided_label: undecided = null } = this.itemConfig;
    const label = this.widget.label;
    if (!required || label === null || label === undecided || this.widget.highlightedCount > 0) return null;
    return `highlight at least one word that shows the label "${label}"`;
  }

  // ---- rendering ----------------------------------------------------------------------------

  private show(next: NextItem): void {
    const config = { ...this.task.config, ...(next.config ?? {}) };
    this.itemConfig = config;
    this.mode = config.mode ?? this.mode;
    this.current = next;
    this.submissionKey = (this.options.keyFactory ?? newSubmissionKey)();
    this.renderLabels(normaliseLabels(config.labels));
    const payload = next.item.payload;
    this.widget.load(payload.words ?? [], payload.breaks ?? [], this.mode);

    const done = next.progress?.done ?? 0;
    const total = next.progress?.total ?? 0;
    this.progressText.textContent = total ? `Item ${done + 1} of ${total}` : "Item";
    this.progressBar.max = Math.max(total, 1);
    this.progressBar.value = Math.min(done, total);
    this.status.textContent = "";
    clearError(this.errorBox);
    this.retryButton()?.remove();
    this.doneBox.hidden = true;
    this.taskBox.hidden = false;
    this.startTimer(next.expires_at);
    this.setState("item");
    this.syncControls();
    this.progressText.focus({ preventScroll: false });
  }

  private renderLabels(labels: LabelChoice[]): void {
    this.labels = labels;
    this.labelButtons = labels.map((label, i) => {
      const button = el(this.doc, "button", "ht-label");
      button.type = "button";
      button.dataset.value = label.value;
      button.setAttribute("aria-pressed", "false");
      if (i < 9) {
        const key = el(this.doc, "kbd", "ht-key", String(i + 1));
        key.setAttribute("aria-hidden", "true");
        button.append(key, " ");
        button.setAttribute("aria-keyshortcuts", String(i + 1));
      }
      button.append(el(this.doc, "span", "ht-label-text", label.text));
      button.addEventListener("click", () => this.choose(i));
      return button;
    });
    this.labelBox.replaceChildren(...this.labelButtons);
    const keys = Math.min(labels.length, 9);
    this.question.textContent =
      keys > 1 ? `Which label fits this text? (keys 1–${keys})` : "Which label fits this text?";
  }

  private choose(index: number): void {
    const label = this.labels[index];
    if (!label || !this.current || this.busy) return;
    this.widget.chooseLabel(label.value);
  }

  private syncControls(): void {
    const chosen = this.widget.label;
    this.labelButtons.forEach((button) => {
      const on = button.dataset.value === chosen;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("is-chosen", on);
      button.disabled = this.busy;
    });
    this.submitButton.disabled = this.busy || !this.current || chosen === null;
  }

  private onShortcut(event: KeyboardEvent): void {
    if (event.ctrlKey || event.metaKey || event.altKey || !this.current || this.taskBox.hidden) return;
    const target = event.target as HTMLElement | null;
    if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName)))
      return;
    if (!/^[1-9]$/.test(event.key)) return;
    const index = Number(event.key) - 1;
    if (index >= this.labels.length) return;
    event.preventDefault();
    this.choose(index);
  }

  private finish(completion: Completion): void {
    this.stopTimer();
    this.current = null;
    this.taskBox.hidden = true;
    this.status.textContent = "";
    const d = this.doc;
    const parts: HTMLElement[] = [el(d, "h2", "ht-done-title", "Thank you — all done.")];
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
      parts.push(el(d, "p", "ht-done-next"));
      parts[parts.length - 1].append(link);
    }
    this.doneBox.replaceChildren(...parts);
    this.doneBox.hidden = false;
    this.setState("done");
    (parts[0] as HTMLElement).tabIndex = -1;
    parts[0].focus();
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
        // The server still takes a late answer unless the text went to someone else (then 409).
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

/** Start the page: find the mount point and the configuration, then fetch the first item. */
export function mount(doc: Document = document): HighlightTask | null {
  const root = doc.getElementById("hatlab-app");
  if (!root) return null;
  try {
    const task = new HighlightTask(root, readTaskConfig(doc));
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
