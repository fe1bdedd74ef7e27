/**
 * Evidence that a person worked on an item: counts of the page's input events while the item was
 * shown, sent with each answer in `signals.interaction` (compact counts, never an event log: the
 * server caps signals' size). The server's risk score (annotate/quality/risk.py) reads `pointer`,
 * `keys` and `touches`: an answer without any was given without real input.
 *
 * Only events the browser marks as trusted count (`isTrusted`: real input, not `element.click()` or
 * `dispatchEvent` from a script). Scrolls are counted as gestures (scroll events less than
 * `SCROLL_GAP_MS` apart are one), pointer moves as events.
 */

export interface InteractionCounts {
  /** Pointer presses (mouse, pen, touch). */
  pointer: number;
  /** Pointer moves. */
  moves: number;
  /** Key presses. */
  keys: number;
  /** Touches started. */
  touches: number;
  /** Scroll gestures. */
  scrolls: number;
  /** Times the window got focus / lost it. */
  focus: number;
  blur: number;
  pastes: number;
  /** Milliseconds from showing the item to the first press, key or touch; null when none came. */
  first_input_ms: number | null;
}

export interface InteractionOptions {
  /** Clock in milliseconds (performance.now by default). */
  now?: () => number;
  /** Count untrusted (script-made) events too: for tests only, whose events are all made by script. */
  countUntrusted?: boolean;
}

export const SCROLL_GAP_MS = 250;

type Counter = Exclude<keyof InteractionCounts, "first_input_ms">;

const DOCUMENT_EVENTS: ReadonlyArray<[string, Counter, boolean]> = [
  // [event type, counter, whether it is input (sets first_input_ms)]
  ["pointerdown", "pointer", true],
  ["pointermove", "moves", false],
  ["keydown", "keys", true],
  ["touchstart", "touches", true],
  ["paste", "pastes", false],
];

function zero(): InteractionCounts {
  return {
    pointer: 0,
    moves: 0,
    keys: 0,
    touches: 0,
    scrolls: 0,
    focus: 0,
    blur: 0,
    pastes: 0,
    first_input_ms: null,
  };
}

/** Counts a document's input events per item: `reset()` when an item is shown, `counts()` to send. */
export class InteractionCounter {
  private readonly now: () => number;
  private readonly countUntrusted: boolean;
  private tally: InteractionCounts = zero();
  private shownAt: number;
  private lastScroll = Number.NEGATIVE_INFINITY;
  private readonly cleanup: Array<() => void> = [];

  constructor(doc: Document, options: InteractionOptions = {}) {
    this.now = options.now ?? (() => performance.now());
    this.countUntrusted = options.countUntrusted ?? false;
    this.shownAt = this.now();
    for (const [type, counter, input] of DOCUMENT_EVENTS) {
      this.listen(doc, type, () => this.count(counter, input));
    }
    // Scrolls of the page or of any box in it (scroll does not bubble: listen in the capture phase).
    this.listen(doc, "scroll", () => this.scroll(), true);
    const win = doc.defaultView;
    if (win) {
      this.listen(win, "focus", () => this.count("focus", false));
      this.listen(win, "blur", () => this.count("blur", false));
    }
  }

  /** Start counting for a new item. */
  reset(): void {
    this.tally = zero();
    this.shownAt = this.now();
    this.lastScroll = Number.NEGATIVE_INFINITY;
  }

  /** The counts since the last `reset()`. */
  counts(): InteractionCounts {
    return { ...this.tally };
  }

  destroy(): void {
    for (const off of this.cleanup.splice(0)) off();
  }

  private count(counter: Counter, input: boolean): void {
    this.tally[counter]++;
    if (input && this.tally.first_input_ms === null) {
      this.tally.first_input_ms = Math.max(0, Math.round(this.now() - this.shownAt));
    }
  }

  private scroll(): void {
    const t = this.now();
    if (t - this.lastScroll >= SCROLL_GAP_MS) this.tally.scrolls++;
    this.lastScroll = t;
  }

  private listen(target: EventTarget, type: string, handler: () => void, capture = false): void {
    const listener = (event: Event): void => {
      if (event.isTrusted || this.countUntrusted) handler();
    };
    target.addEventListener(type, listener, { capture, passive: true });
    this.cleanup.push(() => target.removeEventListener(type, listener, { capture }));
  }
}
