/**
 * The sentence-rating task page (Pappas & Popescu-Belis 2016, HATDOC): the whole review is shown with one sentence
 * highlighted, with one aspect and the review's star rating for it, and the annotator answers "How
 * much does the highlighted sentence explain the given aspect rating?" on five levels. The review
 * comes first, the question and the levels in the answer bar below it. Keys 1–5 pick a level,
 * Enter submits, Escape takes the last choice back; the buttons are large enough to tap. The item loop (fetch, submit, finish,
 * the MTurk hand-off) is `TaskFlow` of task_loop.ts. Text is written only with textContent.
 */

import {
  type FlowOptions,
  type Missing,
  type NextItem,
  TaskFlow,
  type TaskConfig,
  autoMount,
  el,
  mountTask,
} from "../task_loop";

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
  /** The levels before each change, for Escape. */
  private previous: Array<number | null> = [];
  private target: HTMLElement | null = null;

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
    this.body.append(this.reviewBox, this.aspectLine, this.aspectNote);
    this.controls.append(this.question, this.choices);
  }

  get rating(): number | null {
    return this.chosen;
  }

  answer(): { rating: number } | null {
    return this.chosen === null ? null : { rating: this.chosen };
  }

  protected missing(): Missing | null {
    return this.chosen === null
      ? { field: "answer", message: "Choose how much the sentence explains the rating." }
      : null;
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
    if (this.chosen === value) return;
    if (this.chosenAt === null) this.chosenAt = this.now();
    else this.changes++;
    this.previous.push(this.chosen);
    this.chosen = value;
    this.syncControls();
  }

  syncControls(): void {
    this.buttons.forEach((button) => {
      const on = Number(button.dataset.value) === this.chosen;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("is-chosen", on);
    });
    super.syncControls();
  }

  protected keyCount(): number {
    return this.levels.length;
  }

  protected chooseByKey(index: number): boolean {
    const level = this.levels[index];
    if (!level) return false;
    this.choose(level.value);
    return true;
  }

  /** Escape: the level before the last change (none after the first). */
  protected undoLast(): boolean {
    if (!this.previous.length || this.busy) return false;
    this.chosen = this.previous.pop() ?? null;
    this.syncControls();
    return true;
  }

  protected render(next: NextItem<RatingPayload, RatingConfig>, config: RatingConfig): void {
    const p = next.item.payload;
    this.levels = config.labels?.length ? config.labels : DEFAULT_LEVELS;
    this.chosen = null;
    this.previous = [];
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
    this.question.textContent = question;
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
    this.target = target;
  }

  /** The new review from its top (see TaskFlow), then the rated sentence brought into view. */
  protected focusItem(): void {
    super.focusItem();
    if (typeof this.target?.scrollIntoView === "function") this.target.scrollIntoView({ block: "nearest" });
  }
}

export function mount(doc: Document = document): RatingTask | null {
  return mountTask(doc, ["sentence_rating"], (root, task) => new RatingTask(root, task));
}

autoMount(() => mount());
