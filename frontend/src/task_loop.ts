/**
 * The item loop every task page shares: fetch the next item, let the page's kind render it and build
 * its answer, submit it with a submission_key made once per item (a resend after a network failure is
 * stored once), go on until the study says done, then finish: the completion message and code, a
 * redirect back to the platform, or MTurk's externalSubmit form.
 *
 * While the server is briefly unavailable (a 503 with Retry-After while its database or job queue is
 * away) or the network is down, the request is sent again with the same body, so the same
 * submission_key, and the page says "Saving… reconnecting" instead of an error (see `postJson`).
 *
 * Inside Mechanical Turk (an ExternalQuestion: `assignmentId`, `hitId`, `workerId` and `turkSubmitTo`
 * in the URL) the loop also keeps a copy of every answer the server acknowledged (`AnswerCopy`) and
 * posts it with the completion form, so that reconciliation can recover an answer the server lost.
 * While the worker only previews the HIT (`ASSIGNMENT_ID_NOT_AVAILABLE`) the page asks for nothing.
 * A researcher's preview embeds a sample item (`sample`): the page shows it as a worker would see it,
 * answers can be tried, and nothing is sent.
 *
 * Every answer carries the page's evidence in `signals`: the counts of real input events while the item
 * was shown (`interaction`, see interaction.ts) and the page token the server sent with the item
 * (`page_token`, bound to that item and the moment it was served), which the server checks to tell answers
 * to an item it served from answers sent without it.
 *
 * A kind subclasses `TaskFlow` and supplies `render`, `answer`, `timings` and optionally `signals`,
 * `missing` and `onItemKey`. In gold mode (`mode: "gold"`) the same page edits one item's gold answer:
 * its next and submit URLs are the gold editor's, and only the words of the buttons and the end change.
 * The page's configuration comes from `<script id="hatlab-task"
 * type="application/json">` (Django's json_script). Text is written only with textContent.
 *
 * The loop's parts are in task/: config.ts (the page's configuration and what the work API sends),
 * keyboard.ts (the one keyboard model and the keyboard line), timer.ts (the item's time limit),
 * end_pages.ts (done, full, paused, closed, blocked) and dom.ts. What a kind's page builds on is
 * exported from here.
 */

import { ApiError, type PostOptions, clearError, newSubmissionKey, postJson } from "./api";
import { type EndState, endStateOf, renderError } from "./worker_messages";
import { InteractionCounter, type InteractionOptions } from "./interaction";
import {
  ANSWER_COPY_FIELD,
  AnswerCopy,
  type CompletionForm,
  type MTurkParams,
  isPreview,
  mturkParams,
  postCompletionForm,
} from "./mturk";
import {
  type Completion,
  GOLD_MODE,
  type NextAnswer,
  type NextItem,
  type Submitted,
  type TaskConfig,
  readTaskConfig,
  submitUrl,
} from "./task/config";
import { el } from "./task/dom";
import { completionEnd, renderEndPage } from "./task/end_pages";
import { TaskKeyboard, keyHelp, placeKeyLine } from "./task/keyboard";
import { ItemTimer } from "./task/timer";
import { type PreviousAnswer, SkipChooser, controlsOn } from "./task/controls";
import { TRAINING_MODE, type TrainingFeedback, renderFeedback } from "./task/training";

// What a kind's page builds on, besides TaskFlow.
export {
  type Completion,
  GOLD_MODE,
  type NextAnswer,
  type NextItem,
  type Submitted,
  type TaskConfig,
  readTaskConfig,
  submitUrl,
} from "./task/config";
export { el } from "./task/dom";
export { fromTextField, touchOnly } from "./task/keyboard";
export { timeLeft } from "./task/timer";

export interface FlowOptions {
  /** Clock in milliseconds (performance.now by default). */
  now?: () => number;
  fetchImpl?: typeof fetch;
  retryDelayMs?: number;
  /** How requests wait before a retry (setTimeout by default). */
  sleep?: (ms: number) => Promise<void>;
  /** Where to go when the study hands the worker back to a platform (location.assign by default). */
  navigate?: (url: string) => void;
  keyFactory?: () => string;
  /** The page URL's query string (location.search by default): MTurk's parameters are read from it. */
  search?: string;
  /** Where the copy of the answers is kept (sessionStorage by default; null keeps it in memory). */
  storage?: Storage | null;
  /** Posts the completion form (HTMLFormElement.submit by default). */
  submitForm?: (form: HTMLFormElement) => void;
  /** Options of the input-event counter (tests count their script-made events). */
  interaction?: InteractionOptions;
}

/** Why an answer cannot be sent yet, shown as an error naming `field`. */
export interface Missing {
  field: string;
  message: string;
}

export type FlowState = "preview" | "loading" | "item" | "saving" | "feedback" | "error" | EndState;

export const PREVIEW_MESSAGE = "This is a preview. Accept the HIT to start working on it.";
export const SAVING_RECONNECTING = "Saving… reconnecting";
export const LOADING_RECONNECTING = "Loading… reconnecting";
export const SAMPLE_MESSAGE =
  "Preview with a sample item: this is what workers see. Nothing you enter is saved.";

/** Assignments that can no longer be submitted: expired, released, or gone. */
export const STALE_STATUSES: ReadonlySet<number> = new Set([404, 409, 410]);

/** The item loop of a task page; a kind supplies `render`, `answer`, `timings` and `signals`. */
export abstract class TaskFlow<P, C = Record<string, unknown>> {
  readonly root: HTMLElement;
  readonly doc: Document;
  readonly task: TaskConfig<C>;
  readonly options: FlowOptions;
  readonly now: () => number;
  /** MTurk's parameters of the page URL, or null outside MTurk. */
  readonly mturk: MTurkParams | null;
  /** Where a kind puts its item view. */
  readonly body: HTMLElement;
  readonly submitButton: HTMLButtonElement;
  protected readonly status: HTMLElement;
  protected readonly taskBox: HTMLElement;
  protected readonly doneBox: HTMLElement;
  protected readonly errorBox: HTMLElement;
  protected readonly progressText: HTMLElement;
  protected readonly progressBar: HTMLProgressElement;
  /** The item's time limit, counted down in the progress line. */
  protected readonly timer: ItemTimer;
  /** The answer bar after the text: the kind's controls (question, labels), the errors, the submit. */
  protected readonly dock: HTMLElement;
  /** Where a kind puts its answer controls (inside the dock, below the text). */
  readonly controls: HTMLElement;
  /** The keyboard line (shown in the instructions, or above the dock without them). */
  protected readonly keysLine: HTMLElement;
  /** The answers the server acknowledged, for MTurk's completion form (null outside MTurk). */
  protected readonly copy: AnswerCopy | null;
  /** Counts the input events of the item on show. */
  protected readonly interaction: InteractionCounter;
  protected current: NextItem<P, C> | null = null;
  protected busy = false;
  private submissionKey = "";
  private itemsShown = 0;
  private readonly keyboard: TaskKeyboard;
  /** The skip question, when the study lets items be skipped. */
  private readonly skipChooser: SkipChooser | null = null;
  private readonly skipButton: HTMLButtonElement | null = null;
  private readonly backButton: HTMLButtonElement | null = null;
  /** An item's own instruction (an attention check's "for this item, choose …"), above its text. */
  private readonly instructionBox: HTMLElement;
  /** The answer being changed (back to an answer already sent), or null on a new item. */
  protected editing: string | null = null;

  constructor(root: HTMLElement, task: TaskConfig<C>, options: FlowOptions = {}) {
    this.root = root;
    this.doc = root.ownerDocument;
    this.task = task;
    this.options = options;
    this.now = options.now ?? (() => performance.now());
    this.mturk = mturkParams(options.search ?? this.doc.defaultView?.location.search ?? "");
    this.copy =
      this.mturk && !isPreview(this.mturk) ? new AnswerCopy(task.study, this.storageOption()) : null;
    this.interaction = new InteractionCounter(this.doc, { now: this.now, ...options.interaction });
    const d = this.doc;
    this.taskBox = el(d, "section", "ht-task");
    this.taskBox.hidden = true;
    const head = el(d, "div", "ht-progress");
    this.progressText = el(d, "h2", "ht-progress-text");
    this.progressText.tabIndex = -1;
    this.progressBar = el(d, "progress", "ht-progress-bar");
    this.progressBar.setAttribute("aria-label", "Progress");
    this.timer = new ItemTimer(el(d, "span", "ht-timer"));
    head.append(this.progressText, this.progressBar, this.timer.element);
    this.body = el(d, "div", "ht-body");
    this.errorBox = el(d, "div", "ht-errors");
    this.errorBox.setAttribute("role", "alert");
    this.errorBox.id = "ht-errors";
    this.errorBox.hidden = true;
    const actions = el(d, "div", "ht-actions");
    this.submitButton = el(
      d,
      "button",
      "ht-submit",
      task.mode === GOLD_MODE ? "Save as the gold answer" : "Submit and continue",
    );
    this.submitButton.type = "button";
    this.submitButton.disabled = true;
    actions.append(this.submitButton);
    const protocol = task.protocol;
    if (controlsOn(protocol) && task.mode !== GOLD_MODE) {
      if (protocol.back) {
        this.backButton = el(d, "button", "ht-back", "Previous item");
        this.backButton.type = "button";
        this.backButton.addEventListener("click", () => void this.goBack());
        actions.prepend(this.backButton);
      }
      if (protocol.skip_reasons.length > 0) {
        this.skipButton = el(d, "button", "ht-skip", "Skip…");
        this.skipButton.type = "button";
        this.skipChooser = new SkipChooser(
          d,
          protocol.skip_reasons,
          (reason) => void this.skip(reason),
          () => this.closeSkip(),
        );
        this.skipButton.addEventListener("click", () => this.skipChooser?.open());
        actions.append(this.skipButton);
      }
    }
    this.controls = el(d, "div", "ht-controls");
    this.dock = el(d, "div", "ht-dock");
    this.dock.append(this.controls, this.errorBox, actions);
    if (this.skipChooser) this.dock.append(this.skipChooser.box);
    this.keysLine = el(d, "p", "ht-keys");
    this.instructionBox = el(d, "p", "ht-instruction");
    this.instructionBox.setAttribute("role", "note");
    this.instructionBox.hidden = true;
    this.taskBox.append(head, this.instructionBox, this.body, this.dock);
    this.doneBox = el(d, "section", "ht-done");
    this.doneBox.hidden = true;
    this.status = el(d, "p", "ht-status");
    this.status.setAttribute("aria-live", "polite");
    root.replaceChildren(this.status, this.taskBox, this.doneBox);
    this.submitButton.addEventListener("click", () => void this.submit());
    this.keyboard = new TaskKeyboard(d, {
      ready: () => !!this.current && !this.busy && !this.taskBox.hidden && !this.skipChooser?.isOpen,
      complete: () => this.answer() !== null,
      submit: () => void this.submit(),
      undoLast: () => this.undoLast(),
      chooseByKey: (index) => this.chooseByKey(index),
      onItemKey: (event) => this.onItemKey(event),
    });
  }

  /** Show one item in `body`; `config` is the page's study config with the item's on top. */
  protected abstract render(item: NextItem<P, C>, config: C): void;
  /** Show the expected answer of a training example on the item (after the worker's answer); a kind
   * that cannot leaves it to the words of the feedback. */
  protected showExpected(_expected: unknown): void {}
  /** Put an answer already sent back on the item just rendered (going back to change it); a kind that
   * cannot leaves the item blank, to be answered again. */
  protected restore(_answer: unknown): void {}
  /** The answer to send, or null while it cannot be sent (the submit button stays off). */
  abstract answer(): unknown | null;
  /** Why the answer cannot be sent yet (shown as an error when the worker submits), or null. */
  protected missing(): Missing | null {
    return this.answer() === null ? { field: "answer", message: "Answer the question first." } : null;
  }
  protected abstract timings(): Record<string, number | null>;
  protected signals(): Record<string, unknown> {
    return {};
  }
  /** Choose answer `index` (0-based) for digit key `index + 1`; false when there is no such answer. */
  protected chooseByKey(_index: number): boolean {
    return false;
  }
  /** How many answers the digit keys choose among (0: the kind has no digit keys). */
  protected keyCount(): number {
    return 0;
  }
  /** Undo the worker's last action on this item (Escape); false when there is nothing to undo. */
  protected undoLast(): boolean {
    return false;
  }
  /** What the digit keys do, for the keyboard line ("choose a label"). */
  protected digitsDo(): string {
    return "choose an answer";
  }
  /** The kind's keys beyond the shared ones (the words' arrows and Space), for the keyboard line. */
  protected extraKeys(): string[] {
    return [];
  }
  /** The control a missing answer is about (the error is shown next to it), or null for the dock. */
  protected errorAnchor(_field: string): HTMLElement | null {
    return null;
  }
  /** Page-wide keys of the kind (called only while an item is shown and nothing is being saved). */
  protected onItemKey(_event: KeyboardEvent): void {}
  /** What the progress heading calls an item ("Your item 2 of 10"). */
  protected itemNoun(): string {
    return "Item";
  }
  /** The button that asks for a new item after the current one went stale. */
  protected anotherText(): string {
    return "Get another item";
  }
  /** Move focus to the new item's progress heading; from the second item on, scroll to it so the
   * new text starts at the top of the screen. */
  protected focusItem(): void {
    this.progressText.focus({ preventScroll: true });
    if (this.itemsShown > 1 && typeof this.taskBox.scrollIntoView === "function")
      this.taskBox.scrollIntoView({ block: "start" });
  }

  /** The one keyboard model of every task page, as the keyboard line says it. */
  keyHelp(): string {
    return keyHelp({ count: this.keyCount(), digitsDo: this.digitsDo(), extraKeys: this.extraKeys() });
  }

  get item(): NextItem<P, C> | null {
    return this.current;
  }

  /** Fetch the first item; an MTurk preview stays read-only and asks the server for nothing. */
  start(): Promise<void> {
    if (this.task.sample) {
      this.show(this.task.sample as NextItem<P, C>);
      this.status.textContent = this.task.sample.message || SAMPLE_MESSAGE;
      this.setState("preview");
      return Promise.resolve();
    }
    if (isPreview(this.mturk)) {
      this.status.textContent = PREVIEW_MESSAGE;
      this.setState("preview");
      return Promise.resolve();
    }
    return this.loadNext();
  }

  destroy(): void {
    this.timer.stop();
    this.keyboard.destroy();
    this.interaction.destroy();
  }

  /** The kind's signals with the page's evidence: the item's input counts and the item's page token. */
  protected pageSignals(): Record<string, unknown> {
    const token = this.current?.page_token;
    return {
      ...this.signals(),
      interaction: this.interaction.counts(),
      ...(typeof token === "string" && token ? { page_token: token } : {}),
    };
  }

  /** Ask the server for the next item (or the completion hand-off). */
  async loadNext(): Promise<void> {
    this.timer.stop();
    this.setState("loading");
    this.status.textContent = "Loading…";
    let next: NextAnswer<P, C>;
    try {
      next = await postJson<NextAnswer<P, C>>(this.task.next_url, {}, this.postOptions(LOADING_RECONNECTING));
    } catch (error) {
      this.reconnected();
      if (this.endByError(error)) return;
      this.setState("error");
      this.status.textContent = "";
      this.taskBox.hidden = false;
      renderError(this.errorBox, error);
      this.showRetry();
      return;
    }
    this.reconnected();
    this.receive(next);
  }

  /** Show a handed-out item, or finish when the server says the worker is done. */
  private receive(next: NextAnswer<P, C>): void {
    if ("done" in next && next.done && this.task.mode === TRAINING_MODE && next.completion?.redirect_url) {
      // the training is over: the study's page says what comes next (the items, another try, the end)
      this.status.textContent = "Loading…";
      this.navigate(next.completion.redirect_url);
      return;
    }
    if ("done" in next && next.done) {
      this.finish(next.completion ?? {});
      return;
    }
    this.show(next as NextItem<P, C>);
  }

  /** Send the current answer; on success go on to the next item. */
  async submit(): Promise<void> {
    const item = this.current;
    if (!item || this.busy || this.task.sample) return;
    clearError(this.errorBox);
    const missing = this.missing();
    if (missing) {
      this.showMissing(missing);
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
      signals: this.pageSignals(),
    };
    if (this.editing !== null) {
      await this.saveEdit(body);
      return;
    }
    let stored: Submitted<P, C>;
    try {
      // "next": the server hands out the following item in the same round trip
      stored = await postJson<Submitted<P, C>>(
        submitUrl(this.task.submit_url_template, item.assignment),
        { ...body, next: true },
        this.postOptions(SAVING_RECONNECTING),
      );
    } catch (error) {
      this.reconnected();
      this.busy = false;
      this.status.textContent = "";
      renderError(this.errorBox, error);
      if (error instanceof ApiError && STALE_STATUSES.has(error.status)) {
        this.current = null;
        this.setState("error");
        this.showRetry(this.anotherText());
        return;
      }
      this.setState("item");
      this.syncControls();
      return;
    }
    this.reconnected();
    const feedback = (stored as Submitted<P, C> & { training?: TrainingFeedback }).training;
    if (this.task.mode === TRAINING_MODE && feedback) {
      this.showFeedback(feedback);
      return;
    }
    this.copy?.add({ assignment: item.assignment, ...body });
    this.busy = false;
    this.current = null;
    if (stored.next) {
      this.timer.stop();
      this.receive(stored.next);
    } else {
      await this.loadNext(); // null: next has something to say (paused study, blocked worker, …)
    }
  }

  /** Enable the submit button when an answer can be sent; kinds call it after each change. */
  syncControls(): void {
    this.submitButton.disabled = this.busy || !this.current || !!this.task.sample || this.answer() === null;
    const idle = this.busy || !this.current || !!this.task.sample;
    if (this.skipButton) {
      this.skipButton.disabled = idle || this.editing !== null;
      this.skipButton.hidden = this.editing !== null;
    }
    if (this.backButton) this.backButton.disabled = idle;
  }

  /** After a training example: right or not, the expected answer and why; Continue loads the next. */
  private showFeedback(feedback: TrainingFeedback): void {
    this.setState("feedback");
    this.status.textContent = "";
    this.showExpected(feedback.expected_answer);
    const box = renderFeedback(this.doc, feedback, () => {
      box.remove();
      this.busy = false;
      this.current = null;
      void this.loadNext();
    });
    this.dock.append(box);
    box.querySelector<HTMLElement>(".ht-feedback-title")?.focus();
  }

  private navigate(url: string): void {
    const d = this.doc;
    (this.options.navigate ?? ((to: string) => d.defaultView?.location.assign(to)))(url);
  }

  /** Skip the item on show for `reason`; the server hands out the next one in the same round trip. */
  private async skip(reason: string): Promise<void> {
    const item = this.current;
    const protocol = this.task.protocol;
    if (!item || this.busy || !protocol) return;
    this.closeSkip();
    this.busy = true;
    this.syncControls();
    this.setState("saving");
    this.status.textContent = "Skipping…";
    let answer: { next?: NextAnswer<P, C> | null };
    try {
      answer = await postJson(
        submitUrl(protocol.skip_url_template, item.assignment),
        { reason },
        this.postOptions(SAVING_RECONNECTING),
      );
    } catch (error) {
      this.reconnected();
      this.busy = false;
      this.status.textContent = "";
      renderError(this.errorBox, error);
      this.setState("item");
      this.syncControls();
      return;
    }
    this.reconnected();
    this.busy = false;
    this.current = null;
    if (answer.next) this.receive(answer.next);
    else await this.loadNext();
  }

  private closeSkip(): void {
    this.skipChooser?.close();
    this.skipButton?.focus();
  }

  /** Show the answer sent before the one being changed (or the newest), to change it. */
  private async goBack(): Promise<void> {
    const protocol = this.task.protocol;
    if (!protocol || this.busy) return;
    clearError(this.errorBox);
    this.busy = true;
    this.syncControls();
    let previous: PreviousAnswer<P, C>;
    try {
      previous = await postJson(
        protocol.previous_url,
        { before: this.editing },
        this.postOptions(LOADING_RECONNECTING),
      );
    } catch (error) {
      this.reconnected();
      this.busy = false;
      const none = error instanceof ApiError && error.status === 404;
      if (none) this.status.textContent = "There is no earlier answer you can change.";
      else renderError(this.errorBox, error);
      this.syncControls();
      return;
    }
    this.reconnected();
    this.busy = false;
    this.editing = previous.assignment;
    this.show({
      assignment: previous.assignment,
      page_token: previous.page_token,
      item: previous.item,
      config: previous.config,
    });
    this.restore(previous.answer);
    this.syncControls();
    this.progressText.textContent = "Changing an earlier answer";
    this.status.textContent = "Your new answer replaces the one you sent. Save it to go on.";
    this.submitButton.textContent = "Save the changed answer";
  }

  /** Send the changed answer; then back to the item the worker was on. */
  private async saveEdit(body: Record<string, unknown>): Promise<void> {
    const protocol = this.task.protocol;
    const assignment = this.editing;
    if (!protocol || assignment === null) return;
    try {
      await postJson(
        submitUrl(protocol.edit_url_template, assignment),
        body,
        this.postOptions(SAVING_RECONNECTING),
      );
    } catch (error) {
      this.reconnected();
      this.busy = false;
      this.status.textContent = "";
      renderError(this.errorBox, error);
      this.setState("item");
      this.syncControls();
      return;
    }
    this.reconnected();
    this.busy = false;
    this.editing = null;
    this.current = null;
    this.submitButton.textContent = "Submit and continue";
    await this.loadNext();
  }

  protected setState(state: FlowState): void {
    this.root.dataset.state = state;
  }

  private show(next: NextItem<P, C>): void {
    this.current = next;
    this.submissionKey = (this.options.keyFactory ?? newSubmissionKey)();
    const done = next.progress?.done ?? 0;
    const total = next.progress?.total ?? 0;
    const noun = this.itemNoun().toLowerCase();
    this.progressText.textContent = total
      ? `Your ${noun} ${Math.min(done + 1, total)} of ${total}`
      : `Your ${noun}`;
    this.progressBar.max = Math.max(total, 1);
    this.progressBar.value = Math.min(done, total);
    this.status.textContent = "";
    clearError(this.errorBox);
    this.dockErrors();
    this.taskBox.querySelector(".ht-retry")?.remove();
    this.doneBox.hidden = true;
    this.taskBox.hidden = false;
    const instruction = (next.item.payload as { instruction?: unknown } | null)?.instruction;
    this.instructionBox.textContent = typeof instruction === "string" ? instruction : "";
    this.instructionBox.hidden = typeof instruction !== "string" || !instruction;
    this.render(next, { ...this.task.config, ...(next.config ?? {}) } as C);
    if (this.task.mode === TRAINING_MODE) {
      this.progressText.textContent = total
        ? `Training example ${Math.min(done + 1, total)} of ${total}`
        : "Training example";
      this.submitButton.textContent = "Check my answer";
      const attempt = (next as NextItem<P, C> & { training?: { attempt: number; tries: number } }).training;
      if (attempt && attempt.attempt > 1 && done === 0)
        this.status.textContent = `Not passed yet: attempt ${attempt.attempt} of ${attempt.tries}. Answer the examples again.`;
    }
    this.interaction.reset();
    this.timer.start(next.expires_at);
    this.setState("item");
    this.syncControls();
    this.itemsShown += 1;
    this.placeKeys();
    this.keepClearOfDock();
    if (this.itemsShown === 2) this.instructions()?.removeAttribute("open"); // open on the first item only
    this.focusItem();
    if (this.itemsShown === 1) this.doc.defaultView?.performance?.mark?.("hatlab-first-item");
  }

  /** Scrolling (focus moves, scrollIntoView) keeps what it brings into view clear of the sticky
   * answer bar: the page's scroll padding is the bar's height. */
  private keepClearOfDock(): void {
    const html = this.doc.documentElement;
    if (html) html.style.scrollPaddingBottom = `${this.dock.offsetHeight + 8}px`;
  }

  /** The page's instructions panel (the template's), if any. */
  private instructions(): HTMLDetailsElement | null {
    return this.doc.querySelector<HTMLDetailsElement>("details.hatlab-instructions");
  }

  /** The keyboard line: in the instructions panel, or just above the dock when there is none. */
  private placeKeys(): void {
    placeKeyLine(this.keysLine, this.keyHelp(), this.dock, this.instructions());
  }

  /** Show why the answer cannot be sent next to the control it is about, and bring it into view. */
  protected showMissing(missing: Missing): void {
    renderError(this.errorBox, new ApiError(400, { [missing.field]: [missing.message] }, missing.message));
    const anchor = this.errorAnchor(missing.field);
    if (anchor) {
      anchor.after(this.errorBox);
      // Scrolled into the part of the screen the sticky answer bar leaves free.
      this.keepClearOfDock();
      if (typeof this.errorBox.scrollIntoView === "function")
        this.errorBox.scrollIntoView({ block: "nearest" });
    }
  }

  /** Put the error box back in the answer bar (where errors not about one control belong). */
  private dockErrors(): void {
    if (this.errorBox.parentElement !== this.dock) this.controls.after(this.errorBox);
  }

  /** An end state the next endpoint answered as an error (a paused study, a blocked worker). */
  private endByError(error: unknown): boolean {
    const state = endStateOf(error);
    if (state === null) return false;
    this.showEnd(state, {});
    return true;
  }

  /** The end of the hand-out for this worker: their share done (thank them, then hand them back to
   * their platform), or a page saying why there is nothing for them now. */
  private finish(completion: Completion): void {
    this.showEnd(completionEnd(completion), completion);
  }

  /** Show one of the end pages (done, full for now, paused, closed, blocked). */
  private showEnd(state: EndState, completion: Completion): void {
    this.timer.stop();
    this.current = null;
    this.taskBox.hidden = true;
    this.status.textContent = "";
    const { title, form } = renderEndPage(this.doneBox, state, completion, {
      gold: this.task.mode === GOLD_MODE,
      doneUrl: this.task.done_url,
      postForm: (f) => this.postForm(f),
      submitForm: (f) => this.submitForm(f),
    });
    this.setState(state);
    title.tabIndex = -1;
    title.focus();
    if (state === "done" && completion.redirect_url && !form) {
      const d = this.doc;
      (this.options.navigate ?? ((url: string) => d.defaultView?.location.assign(url)))(
        completion.redirect_url,
      );
    }
  }

  /**
   * Post the platform's completion form with the copy of the answers (MTurk's externalSubmit);
   * returns the form, or null when `form` is not one this page may post.
   */
  private postForm(form: CompletionForm): HTMLFormElement | null {
    const copy = this.copy ?? new AnswerCopy(this.task.study, this.storageOption());
    const extra = { [ANSWER_COPY_FIELD]: copy.toField(this.task.study) };
    const element = postCompletionForm(this.doc, form, extra, (f) => this.submitForm(f));
    // Posted: the platform keeps the copy now, and a later HIT of this study starts a fresh one.
    if (element) copy.clear();
    return element;
  }

  private submitForm(form: HTMLFormElement): void {
    (this.options.submitForm ?? ((f: HTMLFormElement) => f.submit()))(form);
  }

  private storageOption(): Storage | null | undefined {
    return "storage" in this.options ? this.options.storage : undefined;
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

  /** Options of a request; while it is being retried the status line says `reconnecting`. */
  private postOptions(reconnecting: string): PostOptions {
    return {
      csrfToken: this.task.csrf_token,
      fetchImpl: this.options.fetchImpl,
      retryDelayMs: this.options.retryDelayMs,
      sleep: this.options.sleep,
      onRetry: () => {
        this.status.textContent = reconnecting;
        this.root.dataset.reconnecting = "true";
      },
    };
  }

  /** The request is over (answered or given up): no longer reconnecting. */
  private reconnected(): void {
    delete this.root.dataset.reconnecting;
  }
}

/**
 * Start a page whose kind is one of `kinds` with `make`: find the mount point and the configuration,
 * then fetch the first item. A page that cannot start shows why instead.
 */
export function mountTask<T extends { start(): Promise<void> }>(
  doc: Document,
  kinds: readonly string[],
  make: (root: HTMLElement, task: TaskConfig<never>) => T,
): T | null {
  const root = doc.getElementById("hatlab-app");
  if (!root) return null;
  try {
    const flow = make(root, readTaskConfig<never>(doc, "hatlab-task", kinds));
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

/** Run `start` once the document is ready, when the page carries a task configuration. */
export function autoMount(start: () => unknown): void {
  if (typeof document === "undefined" || !document.getElementById("hatlab-task")) return;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => start());
  else start();
}
