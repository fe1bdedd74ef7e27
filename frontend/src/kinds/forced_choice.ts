/**
 * The page of the three forced-choice tasks (Lertvittayakumjorn & Toni 2019, Table 1), one
 * controller parameterised by the task kind and the question's payload:
 *
 * - reveal_model: the text twice, side by side, with model A's and model B's evidence highlighted,
 *   and the class both predicted; "which model is more reasonable?"
 * - justify: only the evidence texts; "which class is the document most likely to be?"
 * - investigate: the predicted class, its probability, evidence for it and evidence for the other
 *   class(es); "what is the true class?"
 *
 * The answer buttons come from the study config (`choices`, in the order of the paper's Figure 2):
 * an option with "confident" / "not confident", and "no preference" where the task has it. The texts
 * come first, the question and the answers in the answer bar below them. Keys 1–9 pick an answer,
 * Enter submits, Escape takes the last choice back; buttons are large enough to tap, and each
 * button's name is its visible text. The page never learns which
 * explanation method it shows nor the correct answer: the server keeps both. The item loop (fetch,
 * submit, finish, the MTurk hand-off) is `TaskFlow` of task_loop.ts.
 */

import {
  type FlowOptions,
  type NextItem,
  TaskFlow,
  type TaskConfig as LoopConfig,
  autoMount,
  el,
  mountTask,
  readTaskConfig as readLoopConfig,
} from "../task_loop";

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

export type TaskConfig = LoopConfig<ChoiceConfig>;

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

/** Read and check the JSON configuration that the template embeds (`#hatlab-task`): one of KINDS. */
export function readTaskConfig(doc: Document, id = "hatlab-task"): TaskConfig {
  return readLoopConfig<ChoiceConfig>(doc, id, KINDS);
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

export class ChoiceTask extends TaskFlow<Payload, ChoiceConfig> {
  private readonly questionSlot: HTMLElement;
  private readonly prompt: HTMLElement;
  private readonly choiceBox: HTMLElement;
  private choices: Choice[] = [];
  private buttons: HTMLButtonElement[] = [];
  private chosen: number | null = null;
  private shownAt = 0;
  private firstChoiceAt: number | null = null;
  private changes = 0;
  /** The choices before each change, for Escape. */
  private previous: Array<number | null> = [];

  constructor(root: HTMLElement, task: TaskConfig, options: FlowOptions = {}) {
    super(root, task, options);
    const d = this.doc;
    this.taskBox.classList.add("fc-task");
    this.questionSlot = el(d, "div", "fc-question-slot");
    this.prompt = el(d, "p", "ht-question fc-prompt");
    this.prompt.id = "fc-prompt";
    this.choiceBox = el(d, "div", "fc-choices");
    this.choiceBox.setAttribute("role", "group");
    this.choiceBox.setAttribute("aria-labelledby", this.prompt.id);
    this.submitButton.setAttribute("aria-keyshortcuts", "Enter");
    this.body.append(this.questionSlot);
    this.controls.append(this.prompt, this.choiceBox);
  }

  /** The chosen answer, as the server takes it (null before a choice). */
  answer(): Choice | null {
    if (this.chosen === null) return null;
    const c = this.choices[this.chosen];
    return { choice: c.choice, confident: c.choice === NO_PREFERENCE ? null : Boolean(c.confident) };
  }

  /** Choose answer `index` (a button click, a tap or a number key). */
  choose(index: number): void {
    if (!this.current || this.busy || index < 0 || index >= this.choices.length) return;
    if (this.firstChoiceAt === null) this.firstChoiceAt = this.now();
    if (this.chosen === index) return;
    if (this.chosen !== null) this.changes += 1;
    this.previous.push(this.chosen);
    this.chosen = index;
    this.syncControls();
  }

  protected keyCount(): number {
    return this.choices.length;
  }

  protected chooseByKey(index: number): boolean {
    if (index >= this.choices.length) return false;
    this.choose(index);
    return true;
  }

  /** Escape: the choice before the last change (none after the first). */
  protected undoLast(): boolean {
    if (!this.previous.length || this.busy) return false;
    this.chosen = this.previous.pop() ?? null;
    this.syncControls();
    return true;
  }

  protected timings(): Record<string, number | null> {
    const end = this.now();
    return {
      read_ms: Math.max(0, Math.round((this.firstChoiceAt ?? end) - this.shownAt)),
      answer_ms: Math.max(0, Math.round(end - this.shownAt)),
    };
  }

  protected signals(): Record<string, unknown> {
    return { choice_changes: this.changes };
  }

  protected itemNoun(): string {
    return "Question";
  }

  protected anotherText(): string {
    return "Get another question";
  }

  protected render(next: NextItem<Payload, ChoiceConfig>, config: ChoiceConfig): void {
    this.chosen = null;
    this.previous = [];
    this.firstChoiceAt = null;
    this.changes = 0;
    const kind = next.item.kind || this.task.kind;
    const { box, prompt } = renderQuestion(this.doc, kind, next.item.payload);
    this.questionSlot.replaceChildren(box);
    this.renderChoices(kind, answerChoices(config));
    this.prompt.textContent = prompt;
    this.shownAt = this.now();
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
      // The button's name is its visible text ("Model B not confident"): no aria-label that differs.
      const main = el(this.doc, "span", "fc-choice-main", text.main);
      button.append(main);
      if (text.sub) button.append(" ", el(this.doc, "span", "fc-choice-sub", text.sub));
      button.addEventListener("click", () => this.choose(i));
      return button;
    });
    this.choiceBox.replaceChildren(...this.buttons);
  }

  syncControls(): void {
    this.buttons.forEach((button, i) => {
      const on = i === this.chosen;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("is-chosen", on);
      button.disabled = this.busy;
    });
    super.syncControls();
  }
}

/** Start the page: find the mount point and the configuration, then fetch the first question. */
export function mount(doc: Document = document): ChoiceTask | null {
  return mountTask(doc, KINDS, (root, task) => new ChoiceTask(root, task));
}

autoMount(() => mount());
