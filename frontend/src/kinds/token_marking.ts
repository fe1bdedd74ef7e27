/**
 * The token-marking task page (the NLI importance-alignment paper's expert oracle): the input, its gold label and a
 * natural-language explanation written for it are shown, and the annotator marks the input's words
 * that the explanation's author thought important. Marking reuses the word-highlight widget in
 * free mode (click, tap, drag, shift-click; arrow keys and Space; Escape or Ctrl+Z undoes). The input
 * comes first, the label and the explanation after it. The item loop (fetch, submit, finish, the
 * MTurk hand-off, the shared keys) is `TaskFlow` of task_loop.ts.
 */

import { HighlightWidget } from "../highlight_widget";
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

export interface MarkingPayload {
  words: string[];
  breaks?: number[];
  label: string;
  explanation: string;
}

export interface MarkingConfig {
  question?: string;
  require_mark?: boolean;
  instructions?: string;
  time_limit_s?: number;
}

export class MarkingTask extends TaskFlow<MarkingPayload, MarkingConfig> {
  readonly widget: HighlightWidget;
  private readonly labelLine: HTMLElement;
  private readonly explanation: HTMLElement;
  private readonly question: HTMLElement;

  constructor(root: HTMLElement, task: TaskConfig<MarkingConfig>, options: FlowOptions = {}) {
    super(root, task, options);
    const d = this.doc;
    const given = el(d, "div", "tm-given");
    this.labelLine = el(d, "p", "tm-label");
    const explained = el(d, "div", "tm-explanation-box");
    explained.append(el(d, "strong", "tm-explanation-title", "Explanation"));
    this.explanation = el(d, "p", "tm-explanation");
    explained.append(this.explanation);
    given.append(this.labelLine, explained);
    this.question = el(d, "p", "ht-question");
    const widgetRoot = el(d, "div", "ht-widget");
    this.widget = new HighlightWidget(widgetRoot, {
      mode: "free",
      now: options.now,
      onChange: () => this.syncControls(),
    });
    this.body.append(widgetRoot, given);
    this.controls.append(this.question);
  }

  private get requireMark(): boolean {
    return this.task.config.require_mark ?? true;
  }

  answer(): { map: number[] } | null {
    if (!this.current || (this.requireMark && this.widget.highlightedCount === 0)) return null;
    return { map: this.widget.map() };
  }

  protected missing(): Missing | null {
    return this.answer() === null
      ? { field: "answer.map", message: "Mark at least one word of the text." }
      : null;
  }

  protected errorAnchor(field: string): HTMLElement | null {
    return field === "answer.map" ? this.widget.text : null;
  }

  protected extraKeys(): string[] {
    return ["Tab to the text, then the arrow keys move and Space marks a word"];
  }

  protected undoLast(): boolean {
    return this.widget.undo();
  }

  protected timings(): Record<string, number | null> {
    const t = this.widget.timings();
    return { read_ms: t.read_ms, answer_ms: t.answer_ms, first_highlight_at_ms: t.first_highlight_at_ms };
  }

  protected signals(): Record<string, unknown> {
    return { ...this.widget.signals() };
  }

  protected render(next: NextItem<MarkingPayload, MarkingConfig>, config: MarkingConfig): void {
    const p = next.item.payload;
    this.labelLine.replaceChildren(
      el(this.doc, "strong", "tm-label-title", "Label: "),
      el(this.doc, "span", "tm-label-value", p.label),
    );
    this.explanation.textContent = p.explanation;
    this.question.textContent =
      config.question ?? "Mark the words of the input that the explanation's author thought were important.";
    this.widget.load(p.words ?? [], p.breaks ?? [], "free");
  }

  destroy(): void {
    super.destroy();
    this.widget.destroy();
  }
}

export function mount(doc: Document = document): MarkingTask | null {
  return mountTask(doc, ["token_marking"], (root, task) => new MarkingTask(root, task));
}

autoMount(() => mount());
