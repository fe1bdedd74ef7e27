/**
 * The word-highlight widget (Sen et al. 2020, YELP-HAT: read the text, pick its label, then highlight
 * the words that show the label; the free-style variant highlights while reading).
 *
 * A document is shown as its canonical words; the answer is a 0/1 map over them. Words toggle by
 * click or tap; shift-click or a drag across words sets a run (a finger's sideways drag: an up or
 * down swipe scrolls the page, so long texts scroll as usual); keyboard users move with the arrow
 * keys (one tab stop, roving tabindex) and toggle with Space (Enter is the page's submit key),
 * shift+arrow carries the current word's state onto the next one. Every change is one undo step
 * (button and Ctrl+Z; the page's Escape). In read-first
 * mode the words are aria-disabled and a hint says why until a label is chosen. The widget records
 * when the label was chosen and when the first word was highlighted, and counts signals of
 * attention: focus losses, time hidden, pastes, blocked attempts.
 *
 * Document text is only ever written with textContent.
 */

export type Mode = "read_first" | "free";
export type InputKind = "mouse" | "touch" | "pen" | "keyboard";

export interface HighlightOptions {
  mode?: Mode;
  /** Clock in milliseconds (performance.now by default); injectable for tests. */
  now?: () => number;
  /** Called after every change of map, label or lock state. */
  onChange?: (widget: HighlightWidget) => void;
}

export interface Timings {
  /** From showing the text to the end of reading (label chosen; in free mode, the first action). */
  read_ms: number;
  /** From the end of reading to the submission. */
  answer_ms: number;
  label_at_ms: number | null;
  first_highlight_at_ms: number | null;
}

export interface Signals {
  /** Times the window lost focus (blur). */
  blurs: number;
  /** Times the page was hidden (visibilitychange to hidden: tab switch, minimised). */
  hides: number;
  /** Total time the page was hidden while this text was shown. */
  hidden_ms: number;
  pastes: number;
  /** Tries to highlight before a label was chosen (read-first mode). */
  blocked_attempts: number;
  undos: number;
  /** Highlight actions per input kind. */
  actions: Record<InputKind, number>;
}

interface Step {
  indices: number[];
  before: number[];
}

interface Drag {
  start: number;
  current: number;
  target: number;
  input: InputKind;
}

const HINT_LOCKED = "Read the text and choose a label first; then highlight the words that show it.";
const HINT_READY = "Click words to highlight them; drag across words to highlight a run.";
const HINT_READY_TOUCH =
  "Tap words to highlight them; slide a finger sideways across words to highlight a run.";

/** Whether the device is touch-only (no hover, a coarse pointer). */
function touchOnly(doc: Document): boolean {
  const win = doc.defaultView;
  return (
    typeof win?.matchMedia === "function" && win.matchMedia("(hover: none) and (pointer: coarse)").matches
  );
}

let widgetCount = 0;

function inputOf(event: Event): InputKind {
  const type = (event as PointerEvent).pointerType;
  return type === "touch" || type === "pen" ? type : "mouse";
}

function isTextField(target: EventTarget | null): boolean {
  if (!target || !(target as Element).tagName) return false;
  const el = target as HTMLElement;
  return el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName);
}

export class HighlightWidget {
  readonly root: HTMLElement;
  readonly text: HTMLElement;
  readonly hint: HTMLElement;
  readonly count: HTMLElement;
  readonly undoButton: HTMLButtonElement;

  private mode: Mode;
  private readonly now: () => number;
  private onChange?: (widget: HighlightWidget) => void;
  private readonly doc: Document;
  private words: string[] = [];
  private spans: HTMLElement[] = [];
  private values: Uint8Array = new Uint8Array(0);
  private steps: Step[] = [];
  private active = 0;
  private anchor: number | null = null;
  private drag: Drag | null = null;
  private chosen: string | null = null;
  private shownAt = 0;
  private labelAt: number | null = null;
  private firstHighlightAt: number | null = null;
  private hiddenSince: number | null = null;
  private counters: Omit<Signals, "actions"> = {
    blurs: 0,
    hides: 0,
    hidden_ms: 0,
    pastes: 0,
    blocked_attempts: 0,
    undos: 0,
  };
  private actionCounts: Record<InputKind, number> = { mouse: 0, touch: 0, pen: 0, keyboard: 0 };
  private readonly cleanup: Array<() => void> = [];

  constructor(root: HTMLElement, options: HighlightOptions = {}) {
    this.root = root;
    this.doc = root.ownerDocument;
    this.mode = options.mode ?? "read_first";
    this.now = options.now ?? (() => performance.now());
    const id = `hl-${++widgetCount}`;

    root.classList.add("hl-widget");
    this.hint = this.make("p", "hl-hint");
    this.hint.id = `${id}-hint`;
    this.text = this.make("div", "hl-text");
    this.text.setAttribute("role", "group");
    this.text.setAttribute("aria-label", "Text to highlight");
    this.text.setAttribute("aria-describedby", this.hint.id);
    const tools = this.make("div", "hl-tools");
    this.count = this.make("span", "hl-count");
    this.count.setAttribute("aria-live", "polite");
    this.undoButton = this.make("button", "hl-undo") as HTMLButtonElement;
    this.undoButton.type = "button";
    this.undoButton.textContent = "Undo";
    this.undoButton.title = "Undo the last change (Ctrl+Z)";
    tools.append(this.count, this.undoButton);
    root.replaceChildren(this.hint, this.text, tools);

    this.listen(this.text, "pointerdown", (e) => this.onPointerDown(e as PointerEvent));
    this.listen(this.doc, "pointermove", (e) => this.onPointerMove(e as PointerEvent));
    this.listen(this.doc, "pointerup", () => this.endDrag(true));
    this.listen(this.doc, "pointercancel", () => this.endDrag(false));
    this.listen(this.text, "keydown", (e) => this.onWordKey(e as KeyboardEvent));
    this.listen(this.text, "focusin", (e) => this.onFocusIn(e));
    this.listen(this.doc, "keydown", (e) => this.onDocumentKey(e as KeyboardEvent));
    this.listen(this.undoButton, "click", () => this.undo());
    this.listen(this.doc, "paste", () => void this.counters.pastes++);
    this.listen(this.doc, "visibilitychange", () => this.onVisibility());
    const win = this.doc.defaultView;
    if (win) this.listen(win, "blur", () => void this.counters.blurs++);
    this.load([]);
    this.onChange = options.onChange;
  }

  /** Show a new text: `breaks` are indices of words that start a new paragraph. */
  load(words: readonly string[], breaks: readonly number[] = [], mode?: Mode): void {
    if (mode) this.mode = mode;
    this.words = [...words];
    this.values = new Uint8Array(words.length);
    this.steps = [];
    this.active = 0;
    this.anchor = null;
    this.drag = null;
    this.chosen = null;
    this.shownAt = this.now();
    this.labelAt = null;
    this.firstHighlightAt = null;
    this.hiddenSince = this.doc.visibilityState === "hidden" ? this.shownAt : null;
    for (const key of Object.keys(this.counters) as Array<keyof typeof this.counters>) this.counters[key] = 0;
    for (const key of Object.keys(this.actionCounts) as InputKind[]) this.actionCounts[key] = 0;

    const breakSet = new Set(breaks);
    const nodes: Node[] = [];
    this.spans = this.words.map((word, i) => {
      if (i > 0) {
        if (breakSet.has(i)) nodes.push(this.make("span", "hl-break"));
        else nodes.push(this.doc.createTextNode(" "));
      }
      const span = this.make("span", "hl-word");
      span.textContent = word;
      span.dataset.i = String(i);
      span.setAttribute("role", "checkbox");
      span.tabIndex = i === 0 ? 0 : -1;
      nodes.push(span);
      return span;
    });
    this.text.replaceChildren(...nodes);
    this.refresh();
  }

  /** The chosen label; choosing one unlocks highlighting in read-first mode. */
  chooseLabel(label: string): void {
    if (this.labelAt === null) this.labelAt = this.now();
    this.chosen = label;
    this.refresh();
  }

  get label(): string | null {
    return this.chosen;
  }

  get locked(): boolean {
    return this.mode === "read_first" && this.chosen === null;
  }

  get highlightedCount(): number {
    return this.values.reduce((n, v) => n + v, 0);
  }

  get canUndo(): boolean {
    return this.steps.length > 0;
  }

  /** How many undoable steps this text has. */
  get stepCount(): number {
    return this.steps.length;
  }

  /** Put the label back to `label` (an undone label choice; null locks read-first mode again). */
  restoreLabel(label: string | null): void {
    this.chosen = label;
    if (label === null) this.labelAt = null;
    this.refresh();
  }

  /** Clear every highlighted word as one undoable step. */
  clearAll(input: InputKind = "mouse"): boolean {
    return this.setRange(0, this.values.length - 1, 0, input);
  }

  /** The 0/1 map over the words. */
  map(): number[] {
    return Array.from(this.values);
  }

  /** The answer: the chosen label and a 0/1 map over the words. */
  answer(): { label: string | null; map: number[] } {
    return { label: this.chosen, map: this.map() };
  }

  /** Set `indices` to `value` as one undoable step (no-op when locked or nothing changes). */
  setRange(from: number, to: number, value: number, input: InputKind = "mouse"): boolean {
    if (this.locked) {
      this.block();
      return false;
    }
    const [lo, hi] = from <= to ? [from, to] : [to, from];
    const indices: number[] = [];
    const before: number[] = [];
    for (let i = Math.max(lo, 0); i <= Math.min(hi, this.values.length - 1); i++) {
      if (this.values[i] !== value) {
        indices.push(i);
        before.push(this.values[i]);
        this.values[i] = value;
      }
    }
    if (!indices.length) return false;
    this.steps.push({ indices, before });
    this.actionCounts[input]++;
    if (value === 1 && this.firstHighlightAt === null) this.firstHighlightAt = this.now();
    this.refresh();
    return true;
  }

  /** Toggle one word. */
  toggle(index: number, input: InputKind = "mouse"): boolean {
    return this.setRange(index, index, this.values[index] ? 0 : 1, input);
  }

  /** Undo the last step. */
  undo(): boolean {
    const step = this.steps.pop();
    if (!step) return false;
    step.indices.forEach((i, k) => {
      this.values[i] = step.before[k];
    });
    this.counters.undos++;
    this.refresh();
    return true;
  }

  /** Timings of this text up to `at` (now by default), rounded to milliseconds. */
  timings(at: number = this.now()): Timings {
    const rel = (t: number | null) => (t === null ? null : Math.round(t - this.shownAt));
    const candidates = this.mode === "read_first" ? [this.labelAt] : [this.labelAt, this.firstHighlightAt];
    const known = candidates.filter((t): t is number => t !== null);
    const readEnd = known.length ? Math.min(...known) : at;
    return {
      read_ms: Math.round(readEnd - this.shownAt),
      answer_ms: Math.round(at - readEnd),
      label_at_ms: rel(this.labelAt),
      first_highlight_at_ms: rel(this.firstHighlightAt),
    };
  }

  /** Attention signals gathered while this text was shown. */
  signals(at: number = this.now()): Signals {
    const hidden = this.counters.hidden_ms + (this.hiddenSince === null ? 0 : at - this.hiddenSince);
    return { ...this.counters, hidden_ms: Math.round(hidden), actions: { ...this.actionCounts } };
  }

  /** Remove the document and window listeners (the widget's own nodes go with its root). */
  destroy(): void {
    for (const off of this.cleanup.splice(0)) off();
  }

  // ---- events -------------------------------------------------------------------------------

  private onPointerDown(event: PointerEvent): void {
    const index = this.indexOf(event.target);
    if (index === null || (event.button ?? 0) !== 0) return;
    const input = inputOf(event);
    if (this.locked) {
      this.block();
      return;
    }
    if (input === "mouse") event.preventDefault();
    this.focusWord(index);
    if (event.shiftKey && this.anchor !== null) {
      this.setRange(this.anchor, index, this.values[this.anchor], input);
      return;
    }
    this.drag = { start: index, current: index, target: this.values[index] ? 0 : 1, input };
    this.paint();
  }

  private onPointerMove(event: PointerEvent): void {
    if (!this.drag) return;
    const hit =
      typeof this.doc.elementFromPoint === "function"
        ? this.doc.elementFromPoint(event.clientX, event.clientY)
        : null;
    const index = this.indexOf(hit ?? event.target);
    if (index === null || index === this.drag.current) return;
    this.drag.current = index;
    this.paint();
  }

  private endDrag(commit: boolean): void {
    const drag = this.drag;
    if (!drag) return;
    this.drag = null;
    if (commit) {
      this.anchor = drag.start;
      this.focusWord(drag.current);
      if (this.setRange(drag.start, drag.current, drag.target, drag.input)) return;
    }
    this.paint();
  }

  private onWordKey(event: KeyboardEvent): void {
    const index = this.indexOf(event.target);
    if (index === null || event.ctrlKey || event.metaKey || event.altKey) return;
    const last = this.spans.length - 1;
    const moves: Record<string, number> = {
      ArrowRight: index + 1,
      ArrowDown: index + 1,
      ArrowLeft: index - 1,
      ArrowUp: index - 1,
      Home: 0,
      End: last,
    };
    if (event.key in moves) {
      event.preventDefault();
      const to = Math.max(0, Math.min(last, moves[event.key]));
      if (event.shiftKey && to !== index) {
        if (this.locked) this.block();
        else this.setRange(to, to, this.values[index], "keyboard");
        this.anchor = index;
      }
      this.focusWord(to);
    } else if (event.key === " ") {
      event.preventDefault();
      if (event.shiftKey && this.anchor !== null) {
        this.setRange(this.anchor, index, this.values[this.anchor], "keyboard");
      } else {
        this.anchor = index;
        this.toggle(index, "keyboard");
      }
    }
  }

  private onDocumentKey(event: KeyboardEvent): void {
    const undoKey = (event.ctrlKey || event.metaKey) && !event.shiftKey && event.key.toLowerCase() === "z";
    if (!undoKey || isTextField(event.target) || !this.root.isConnected) return;
    event.preventDefault();
    this.undo();
  }

  private onFocusIn(event: Event): void {
    const index = this.indexOf(event.target);
    if (index !== null && index !== this.active) this.setActive(index);
  }

  private onVisibility(): void {
    const t = this.now();
    if (this.doc.visibilityState === "hidden") {
      this.counters.hides++;
      if (this.hiddenSince === null) this.hiddenSince = t;
    } else if (this.hiddenSince !== null) {
      this.counters.hidden_ms += t - this.hiddenSince;
      this.hiddenSince = null;
    }
  }

  // ---- rendering ----------------------------------------------------------------------------

  private block(): void {
    this.counters.blocked_attempts++;
    this.hint.classList.remove("hl-nudge");
    // Reading offsetWidth restarts the CSS animation on every blocked attempt.
    void this.hint.offsetWidth;
    this.hint.classList.add("hl-nudge");
  }

  private setActive(index: number): void {
    this.spans[this.active]?.setAttribute("tabindex", "-1");
    this.active = index;
    this.spans[index]?.setAttribute("tabindex", "0");
  }

  private focusWord(index: number): void {
    this.setActive(index);
    this.spans[index]?.focus({ preventScroll: true });
  }

  private shown(i: number): number {
    const d = this.drag;
    if (d && i >= Math.min(d.start, d.current) && i <= Math.max(d.start, d.current)) return d.target;
    return this.values[i];
  }

  private paint(): void {
    const locked = this.locked;
    this.spans.forEach((span, i) => {
      const on = this.shown(i) === 1;
      span.classList.toggle("is-on", on);
      span.setAttribute("aria-checked", on ? "true" : "false");
      if (locked) span.setAttribute("aria-disabled", "true");
      else span.removeAttribute("aria-disabled");
    });
  }

  private refresh(): void {
    const locked = this.locked;
    this.root.classList.toggle("is-locked", locked);
    this.hint.textContent = locked ? HINT_LOCKED : touchOnly(this.doc) ? HINT_READY_TOUCH : HINT_READY;
    this.hint.classList.toggle("hl-hint-locked", locked);
    if (!locked) this.hint.classList.remove("hl-nudge");
    const n = this.highlightedCount;
    this.count.textContent = `${n} ${n === 1 ? "word" : "words"} highlighted`;
    this.undoButton.disabled = !this.canUndo;
    this.paint();
    this.onChange?.(this);
  }

  private indexOf(target: EventTarget | null): number | null {
    const el = target && (target as Element).closest ? (target as Element).closest("[data-i]") : null;
    if (!el || !this.text.contains(el)) return null;
    const i = Number((el as HTMLElement).dataset.i);
    return Number.isInteger(i) && i >= 0 && i < this.spans.length ? i : null;
  }

  private make(tag: string, className: string): HTMLElement {
    const el = this.doc.createElement(tag);
    el.className = className;
    return el;
  }

  private listen(target: EventTarget, type: string, handler: (event: Event) => void): void {
    target.addEventListener(type, handler);
    this.cleanup.push(() => target.removeEventListener(type, handler));
  }
}
