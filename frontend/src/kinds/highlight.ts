/**
 * The highlight task page (Sen et al. 2020's read-first protocol, or free-style): fetch an item, let
 * the annotator choose a label and highlight words, submit, and go on until the study says done.
 * The item loop (fetch, submit with a submission_key made once per item, finish, the MTurk
 * hand-off) is `TaskFlow` of task_loop.ts.
 */

import { HighlightWidget, type Mode } from "../words";
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
    this.body.append(this.question, this.labelBox, widgetRoot);
  }

  /** The label and the word map, once a label is chosen. */
  answer(): { label: string | null; map: number[] } | null {
    return this.widget.label === null ? null : this.widget.answer();
  }

  /** A label other than the undecided one needs a highlighted word when the study says so. */
  protected missing(): Missing | null {
    const { require_highlight: required = false, undecided_label: undecided = null } = this.itemConfig;
    const label = this.widget.label;
    if (label === null) return { field: "answer.label", message: "choose a label first" };
    if (!required || label === undecided || this.widget.highlightedCount > 0) return null;
    return { field: "answer.map", message: `highlight at least one word that shows the label "${label}"` };
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

  syncControls(): void {
    const chosen = this.widget.label;
    this.labelButtons.forEach((button) => {
      const on = button.dataset.value === chosen;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("is-chosen", on);
      button.disabled = this.busy;
    });
    super.syncControls();
  }

  protected onItemKey(event: KeyboardEvent): void {
    if (!/^[1-9]$/.test(event.key)) return;
    const index = Number(event.key) - 1;
    if (index >= this.labels.length) return;
    event.preventDefault();
    this.choose(index);
  }
}

/** Start the page: find the mount point and the configuration, then fetch the first item. */
export function mount(doc: Document = document): HighlightTask | null {
  return mountTask(doc, ["highlight"], (root, task) => new HighlightTask(root, task));
}

autoMount(() => mount());
