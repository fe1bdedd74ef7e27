/**
 * The highlight task page (Sen et al. 2020's read-first protocol, or free-style): fetch an item, let
 * the annotator choose a label and highlight words, submit, and go on until the study says done.
 * The text comes first; the question and the labels sit in the answer bar below it. Changing the
 * label while words are highlighted asks whether to keep them; Escape undoes the last label choice
 * or highlight step. The item loop (fetch, submit with a submission_key made once per item, finish,
 * the MTurk hand-off, the shared keys) is `TaskFlow` of task_loop.ts.
 */

import { UndoHistory, askKeepHighlights } from "../label_change";
import { HighlightWidget, type Mode } from "../highlight_widget";
import {
  type FlowOptions,
  type Missing,
  type NextItem,
  TaskFlow,
  type TaskConfig as LoopConfig,
  autoMount,
  el,
  mountTask,
} from "../task_loop";

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

export type TaskConfig = LoopConfig<StudyConfig>;

export interface HighlightPayload {
  words: string[];
  breaks?: number[];
}

/** Labels as `{value, text}`: the config may give plain strings or objects. */
export function normaliseLabels(labels: StudyConfig["labels"]): LabelChoice[] {
  return (labels ?? []).map((l) =>
    typeof l === "string" ? { value: l, text: l } : { value: l.value, text: l.text ?? l.label ?? l.value },
  );
}

export class HighlightTask extends TaskFlow<HighlightPayload, StudyConfig> {
  readonly widget: HighlightWidget;
  private readonly labelBox: HTMLElement;
  private readonly question: HTMLElement;
  private labels: LabelChoice[] = [];
  private labelButtons: HTMLButtonElement[] = [];
  private mode: Mode;
  private itemConfig: StudyConfig;
  private readonly history: UndoHistory;
  private asking = false;

  constructor(root: HTMLElement, task: TaskConfig, options: FlowOptions = {}) {
    super(root, task, options);
    this.mode = task.config.mode ?? "read_first";
    this.itemConfig = task.config;
    const d = this.doc;
    this.question = el(d, "p", "ht-question");
    this.question.id = "ht-question";
    this.labelBox = el(d, "div", "ht-labels");
    this.labelBox.setAttribute("role", "group");
    this.labelBox.setAttribute("aria-labelledby", this.question.id);
    const widgetRoot = el(d, "div", "ht-widget");
    this.widget = new HighlightWidget(widgetRoot, {
      mode: this.mode,
      now: options.now,
      onChange: () => this.syncControls(),
    });
    this.history = new UndoHistory([this.widget]);
    this.body.append(widgetRoot);
    this.controls.append(this.question, this.labelBox);
  }

  /** The label and the word map, once a label is chosen. */
  answer(): { label: string | null; map: number[] } | null {
    return this.widget.label === null ? null : this.widget.answer();
  }

  /** A label other than the undecided one needs a highlighted word when the study says so. */
  protected missing(): Missing | null {
    const { require_highlight: required = false, undecided_label: undecided = null } = this.itemConfig;
    const label = this.widget.label;
    if (label === null) return { field: "answer.label", message: "Choose a label first." };
    if (!required || label === undecided || this.widget.highlightedCount > 0) return null;
    return {
      field: "answer.map",
      message: `Highlight at least one word in the text that shows "${this.labelText(label)}".`,
    };
  }

  protected errorAnchor(field: string): HTMLElement | null {
    return field === "answer.map" ? this.widget.text : null;
  }

  protected keyCount(): number {
    return this.labels.length;
  }

  protected digitsDo(): string {
    return "choose a label";
  }

  protected extraKeys(): string[] {
    return ["Tab to the text, then the arrow keys move and Space highlights a word"];
  }

  protected chooseByKey(index: number): boolean {
    if (index >= this.labels.length) return false;
    this.choose(index);
    return true;
  }

  protected undoLast(): boolean {
    return this.history.undo((label) => this.widget.restoreLabel(label));
  }

  private labelText(value: string): string {
    return this.labels.find((l) => l.value === value)?.text ?? value;
  }

  protected timings(): Record<string, number | null> {
    return { ...this.widget.timings() };
  }

  protected signals(): Record<string, unknown> {
    return { ...this.widget.signals() };
  }

  protected anotherText(): string {
    return "Get another text";
  }

  destroy(): void {
    super.destroy();
    this.widget.destroy();
  }

  protected render(next: NextItem<HighlightPayload, StudyConfig>, config: StudyConfig): void {
    this.itemConfig = config;
    this.mode = config.mode ?? this.mode;
    this.renderLabels(normaliseLabels(config.labels));
    const payload = next.item.payload;
    this.widget.load(payload.words ?? [], payload.breaks ?? [], this.mode);
    this.history.reset();
  }

  /** A training example's expected words, marked on the text beside the worker's own. */
  protected showExpected(expected: unknown): void {
    const map = (expected as { map?: unknown } | null)?.map;
    if (!Array.isArray(map)) return;
    this.widget.text.querySelectorAll<HTMLElement>(".hl-word").forEach((word, i) => {
      word.classList.toggle("hl-expected", map[i] === 1);
    });
  }

  /** The answer sent before, back on the item: its label, then its highlighted words. */
  protected restore(answer: unknown): void {
    const given = answer as { label?: unknown; map?: unknown } | null;
    if (!given || typeof given.label !== "string") return;
    this.widget.chooseLabel(given.label);
    if (Array.isArray(given.map)) given.map.forEach((on, i) => on && this.widget.setRange(i, i, 1));
    this.history.reset();
    this.syncControls();
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
      button.addEventListener("click", () => void this.choose(i));
      return button;
    });
    this.labelBox.replaceChildren(...this.labelButtons);
    this.question.textContent = "Which label fits this text?";
  }

  /** Choose label `index`; a change of label with words highlighted asks whether to keep them. */
  private async choose(index: number): Promise<void> {
    const label = this.labels[index];
    if (!label || !this.current || this.busy || this.asking) return;
    const previous = this.widget.label;
    if (previous === label.value) return;
    let keep = true;
    if (previous !== null && this.widget.highlightedCount > 0) {
      this.asking = true;
      const answer = await askKeepHighlights(this.root, this.labelText(previous), label.text);
      this.asking = false;
      if (answer === "cancel") return;
      keep = answer === "keep";
    }
    this.history.label(previous);
    this.widget.chooseLabel(label.value);
    if (!keep) this.widget.clearAll();
    this.history.sync();
  }

  syncControls(): void {
    this.history?.sync();
    const chosen = this.widget.label;
    this.labelButtons.forEach((button) => {
      const on = button.dataset.value === chosen;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("is-chosen", on);
      button.disabled = this.busy;
    });
    super.syncControls();
  }
}

/** Start the page: find the mount point and the configuration, then fetch the first item. */
export function mount(doc: Document = document): HighlightTask | null {
  return mountTask(doc, ["highlight"], (root, task) => new HighlightTask(root, task));
}

autoMount(() => mount());
