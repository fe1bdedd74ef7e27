/**
 * The one keyboard model of every task page: digits 1–9 choose an answer, Enter submits once the answer
 * is complete, Escape undoes the last change, and a kind may add its own keys. Keys typed into a text
 * field, with a modifier, or while a dialog asks the worker something are left alone. The keyboard line
 * says the same in words, in the instructions panel (or above the answer bar without one).
 */

/** Whether a key event comes from a text field (shortcuts stay out of the way there). */
export function fromTextField(event: Event): boolean {
  const target = event.target as HTMLElement | null;
  return (
    !!target?.tagName &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName))
  );
}

/** Whether the device is touch-only (no hover, a coarse pointer): no keyboard hints are shown there. */
export function touchOnly(doc: Document): boolean {
  const win = doc.defaultView;
  return (
    typeof win?.matchMedia === "function" && win.matchMedia("(hover: none) and (pointer: coarse)").matches
  );
}

/** What a page's keys are, for its keyboard line. */
export interface KeyWords {
  /** How many answers the digit keys choose among (0: none). */
  count: number;
  /** What the digit keys do ("choose a label"). */
  digitsDo: string;
  /** The kind's keys beyond the shared ones ("←/→ move between words"). */
  extraKeys: readonly string[];
}

/** The keyboard line: "Keys: 1–3 choose a label; Enter submits once the answer is complete; …". */
export function keyHelp({ count, digitsDo, extraKeys }: KeyWords): string {
  const n = Math.min(count, 9);
  const parts = [
    ...(n > 1 ? [`1–${n} ${digitsDo}`] : n === 1 ? [`1 ${digitsDo}`] : []),
    ...extraKeys,
    "Enter submits once the answer is complete",
    "Escape undoes the last change",
  ];
  return `Keys: ${parts.join("; ")}.`;
}

/** Put the keyboard `line` (saying `text`) in the instructions panel, or just above `dock` without one. */
export function placeKeyLine(
  line: HTMLElement,
  text: string,
  dock: HTMLElement,
  instructions: HTMLElement | null,
): void {
  line.textContent = text;
  if (instructions) {
    if (line.parentElement !== instructions) instructions.append(line);
  } else if (line.nextElementSibling !== dock) {
    dock.before(line);
  }
}

/** What the keys act on: the item loop and its kind. */
export interface KeyTarget {
  /** Whether keys act now: an item is shown and nothing is being saved. */
  ready(): boolean;
  /** Whether the answer can be sent. */
  complete(): boolean;
  submit(): void;
  /** Undo the last change (Escape); false when there is nothing to undo. */
  undoLast(): boolean;
  /** Choose answer `index` (0-based) for digit key `index + 1`; false when there is no such answer. */
  chooseByKey(index: number): boolean;
  /** The kind's own keys (any other key). */
  onItemKey(event: KeyboardEvent): void;
}

/** Act on one page-wide keydown. */
export function handleTaskKey(event: KeyboardEvent, doc: Document, target: KeyTarget): void {
  if (event.ctrlKey || event.metaKey || event.altKey || !target.ready()) return;
  if (fromTextField(event)) return;
  if (doc.querySelector("dialog[open]")) return; // a question to the worker has the keys
  const from = event.target as HTMLElement | null;
  if (event.key === "Enter" && !event.shiftKey) {
    // Enter submits from anywhere once the answer is complete (a chosen label button is not pressed
    // again); before that it keeps its own meaning on a button, and elsewhere says what is missing.
    if (from?.closest?.("a, summary, .hl-undo, .ht-retry, dialog")) return;
    if (!target.complete() && from?.tagName === "BUTTON") return;
    event.preventDefault();
    target.submit();
    return;
  }
  if (event.key === "Escape") {
    if (target.undoLast()) event.preventDefault();
    return;
  }
  if (/^[1-9]$/.test(event.key) && !event.shiftKey) {
    if (target.chooseByKey(Number(event.key) - 1)) event.preventDefault();
    return;
  }
  target.onItemKey(event);
}

/** The page-wide keydown listener of a task page, until `destroy`. */
export class TaskKeyboard {
  private readonly doc: Document;
  private readonly listener: (event: KeyboardEvent) => void;

  constructor(doc: Document, target: KeyTarget) {
    this.doc = doc;
    this.listener = (event) => handleTaskKey(event, doc, target);
    doc.addEventListener("keydown", this.listener);
  }

  destroy(): void {
    this.doc.removeEventListener("keydown", this.listener);
  }
}
