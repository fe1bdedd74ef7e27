/**
 * The NLI pair page (e-SNLI, Camburu et al. 2018): a premise and a hypothesis, each shown as its own
 * canonical words in a labelled box. The annotator chooses a label first (read-first, as the
 * highlight page: words stay locked until then), then highlights the words of either text that
 * justify it. Each text has its own `HighlightWidget` (mouse, keyboard and touch, undo); the answer
 * is the label and one 0/1 map per text. The study's rules say, per label, whether a text's
 * highlights are required, allowed or forbidden; the page says so next to the labels and will not
 * submit an answer that breaks them (the server checks again). The two texts come first, the
 * question and the labels in the answer bar below them; changing the label while words are
 * highlighted asks whether to keep them. Escape undoes the last label choice or highlight step (in
 * either text); Ctrl+Z undoes in the text last worked on (in the other when that has nothing to
 * undo). The item loop is `TaskFlow` of task_loop.ts.
 */

import { UndoHistory, askKeepHighlights } from "../label_change";
import { HighlightWidget } from "../highlight_widget";
import {
  type FlowOptions,
  type Missing,
  type NextItem,
  TaskFlow,
  type TaskConfig as LoopConfig,
  autoMount,
  el,
  fromTextField,
  mountTask,
} from "../task_loop";

export type Side = "premise" | "hypothesis";
export type Rule = "required" | "allowed" | "forbidden";

export const SIDES: readonly Side[] = ["premise", "hypothesis"];
const TITLES: Record<Side, string> = { premise: "Premise", hypothesis: "Hypothesis" };

export interface StudyConfig {
  labels?: string[];
  rules?: Record<string, Partial<Record<Side, Rule>>>;
  instructions?: string;
  time_limit_s?: number;
}

export type TaskConfig = LoopConfig<StudyConfig>;

export interface TextView {
  words: string[];
  breaks?: number[];
}

export interface PairPayload {
  premise: TextView;
  hypothesis: TextView;
}

export interface PairAnswer {
  label: string;
  premise_map: number[];
  hypothesis_map: number[];
}

/** What `label` asks of each text (a label without a rule allows anything). */
export function ruleOf(config: StudyConfig, label: string): Record<Side, Rule> {
  const rule = config.rules?.[label] ?? {};
  return { premise: rule.premise ?? "allowed", hypothesis: rule.hypothesis ?? "allowed" };
}

/** The rule of `label` in plain words, shown after the label is chosen. */
export function describeRule(label: string, rule: Record<Side, Rule>): string {
  const parts = SIDES.map((side) => {
    const name = side === "premise" ? "the premise" : "the hypothesis";
    if (rule[side] === "required") return `at least one word of ${name}`;
    if (rule[side] === "forbidden") return `no word of ${name}`;
    return `words of ${name} if they help`;
  });
  return `${label}: highlight ${parts.join(", and ")}.`;
}

/** The first way `maps` break `label`'s rule, or null when they keep it. */
export function ruleProblem(
  label: string,
  rule: Record<Side, Rule>,
  counts: Record<Side, number>,
): Missing | null {
  for (const side of SIDES) {
    if (rule[side] === "required" && counts[side] === 0)
      return {
        field: `answer.${side}_map`,
        message: `For "${label}", highlight at least one word in the ${side}.`,
      };
    if (rule[side] === "forbidden" && counts[side] > 0)
      return {
        field: `answer.${side}_map`,
        message: `"${label}" allows no highlighted word in the ${side}: clear them there.`,
      };
  }
  return null;
}

export class NliPairTask extends TaskFlow<PairPayload, StudyConfig> {
  readonly widgets: Record<Side, HighlightWidget>;
  readonly boxes: Record<Side, HTMLElement>;
  private readonly labelBox: HTMLElement;
  private readonly question: HTMLElement;
  private readonly ruleNote: HTMLElement;
  private labels: string[] = [];
  private labelButtons: HTMLButtonElement[] = [];
  private itemConfig: StudyConfig;
  private lastSide: Side = "premise";
  private readonly history: UndoHistory;
  private asking = false;
  private readonly undoKey = (event: KeyboardEvent): void => this.onUndoKey(event);

  constructor(root: HTMLElement, task: TaskConfig, options: FlowOptions = {}) {
    super(root, task, options);
    this.itemConfig = task.config;
    const d = this.doc;
    this.question = el(d, "p", "ht-question");
    this.question.id = "nli-question";
    this.labelBox = el(d, "div", "ht-labels");
    this.labelBox.setAttribute("role", "group");
    this.labelBox.setAttribute("aria-labelledby", this.question.id);
    this.ruleNote = el(d, "p", "nli-rule");
    this.ruleNote.setAttribute("aria-live", "polite");
    const boxes = {} as Record<Side, HTMLElement>;
    const widgets = {} as Record<Side, HighlightWidget>;
    for (const side of SIDES) {
      const box = el(d, "section", `nli-text nli-${side}`);
      const title = el(d, "h3", "nli-text-title", TITLES[side]);
      title.id = `nli-${side}-title`;
      box.setAttribute("aria-labelledby", title.id);
      const widgetRoot = el(d, "div", "ht-widget");
      box.append(title, widgetRoot);
      widgets[side] = new HighlightWidget(widgetRoot, {
        now: options.now,
        onChange: () => this.syncControls(),
      });
      widgets[side].text.setAttribute("aria-label", `${TITLES[side]} words to highlight`);
      box.addEventListener("pointerdown", () => void (this.lastSide = side));
      box.addEventListener("focusin", () => void (this.lastSide = side));
      boxes[side] = box;
    }
    this.widgets = widgets;
    this.boxes = boxes;
    this.history = new UndoHistory([widgets.premise, widgets.hypothesis]);
    this.body.append(boxes.premise, boxes.hypothesis);
    this.controls.append(this.question, this.labelBox, this.ruleNote);
    // Both widgets undo on Ctrl+Z at the document; the page takes the key first (window, capture
    // phase) so that only the text last worked on undoes.
    this.doc.defaultView?.addEventListener("keydown", this.undoKey, true);
  }

  get label(): string | null {
    return this.widgets.premise.label;
  }

  /** The label and one map per text, once a label is chosen. */
  answer(): PairAnswer | null {
    const label = this.label;
    if (label === null) return null;
    return { label, premise_map: this.widgets.premise.map(), hypothesis_map: this.widgets.hypothesis.map() };
  }

  protected missing(): Missing | null {
    const label = this.label;
    if (label === null) return { field: "answer.label", message: "Choose a label first." };
    const counts = {
      premise: this.widgets.premise.highlightedCount,
      hypothesis: this.widgets.hypothesis.highlightedCount,
    };
    return ruleProblem(label, ruleOf(this.itemConfig, label), counts);
  }

  /** The premise widget's reading times; the first highlight in either text. */
  protected timings(): Record<string, number | null> {
    const at = this.now();
    const premise = this.widgets.premise.timings(at);
    const hypothesis = this.widgets.hypothesis.timings(at);
    const firsts = [premise.first_highlight_at_ms, hypothesis.first_highlight_at_ms].filter(
      (t): t is number => t !== null,
    );
    return { ...premise, first_highlight_at_ms: firsts.length ? Math.min(...firsts) : null };
  }

  /** Page-wide signals once (both widgets hear every blur), per-text ones summed. */
  protected signals(): Record<string, unknown> {
    const at = this.now();
    const premise = this.widgets.premise.signals(at);
    const hypothesis = this.widgets.hypothesis.signals(at);
    const actions = { ...premise.actions };
    for (const key of Object.keys(actions) as Array<keyof typeof actions>)
      actions[key] += hypothesis.actions[key];
    return {
      ...premise,
      blocked_attempts: premise.blocked_attempts + hypothesis.blocked_attempts,
      undos: premise.undos + hypothesis.undos,
      actions,
    };
  }

  protected itemNoun(): string {
    return "Pair";
  }

  protected errorAnchor(field: string): HTMLElement | null {
    const side = SIDES.find((s) => field === `answer.${s}_map`);
    return side ? this.widgets[side].text : null;
  }

  protected keyCount(): number {
    return this.labels.length;
  }

  protected digitsDo(): string {
    return "choose a label";
  }

  protected extraKeys(): string[] {
    return ["Tab to a text, then the arrow keys move and Space highlights a word"];
  }

  protected chooseByKey(index: number): boolean {
    if (index >= this.labels.length) return false;
    void this.choose(index);
    return true;
  }

  protected undoLast(): boolean {
    return this.history.undo((label) => {
      for (const side of SIDES) this.widgets[side].restoreLabel(label);
    });
  }

  protected anotherText(): string {
    return "Get another pair";
  }

  destroy(): void {
    super.destroy();
    this.doc.defaultView?.removeEventListener("keydown", this.undoKey, true);
    for (const side of SIDES) this.widgets[side].destroy();
  }

  protected render(next: NextItem<PairPayload, StudyConfig>, config: StudyConfig): void {
    this.itemConfig = config;
    this.renderLabels(config.labels ?? []);
    for (const side of SIDES) {
      const view = next.item.payload[side];
      this.widgets[side].load(view?.words ?? [], view?.breaks ?? [], "read_first");
    }
    this.lastSide = "premise";
    this.history.reset();
  }

  private renderLabels(labels: string[]): void {
    this.labels = labels;
    this.labelButtons = labels.map((label, i) => {
      const button = el(this.doc, "button", "ht-label");
      button.type = "button";
      button.dataset.value = label;
      button.setAttribute("aria-pressed", "false");
      if (i < 9) {
        const key = el(this.doc, "kbd", "ht-key", String(i + 1));
        key.setAttribute("aria-hidden", "true");
        button.append(key, " ");
        button.setAttribute("aria-keyshortcuts", String(i + 1));
      }
      button.append(el(this.doc, "span", "ht-label-text", label));
      button.addEventListener("click", () => void this.choose(i));
      return button;
    });
    this.labelBox.replaceChildren(...this.labelButtons);
    this.question.textContent =
      "Given the premise, is the hypothesis true (entailment), false (contradiction) or neither (neutral)?";
  }

  /** Choose label `index`; a change of label with words highlighted asks whether to keep them. */
  private async choose(index: number): Promise<void> {
    const label = this.labels[index];
    if (label === undefined || !this.current || this.busy || this.asking) return;
    const previous = this.label;
    if (previous === label) return;
    const highlighted = SIDES.some((side) => this.widgets[side].highlightedCount > 0);
    let keep = true;
    if (previous !== null && highlighted) {
      this.asking = true;
      const answer = await askKeepHighlights(this.root, previous, label);
      this.asking = false;
      if (answer === "cancel") return;
      keep = answer === "keep";
    }
    this.history.label(previous);
    for (const side of SIDES) this.widgets[side].chooseLabel(label);
    if (!keep) for (const side of SIDES) this.widgets[side].clearAll();
    this.history.sync();
  }

  syncControls(): void {
    this.history?.sync();
    const chosen = this.label;
    this.labelButtons.forEach((button) => {
      const on = button.dataset.value === chosen;
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("is-chosen", on);
      button.disabled = this.busy;
    });
    const rule = chosen === null ? null : ruleOf(this.itemConfig, chosen);
    this.ruleNote.textContent = chosen === null || rule === null ? "" : describeRule(chosen, rule);
    for (const side of SIDES) this.boxes[side].classList.toggle("is-forbidden", rule?.[side] === "forbidden");
    super.syncControls();
  }

  private onUndoKey(event: KeyboardEvent): void {
    const undo = (event.ctrlKey || event.metaKey) && !event.shiftKey && event.key.toLowerCase() === "z";
    if (!undo || fromTextField(event) || !this.root.isConnected) return;
    event.preventDefault();
    event.stopPropagation();
    if (!this.widgets[this.lastSide].undo()) {
      const other = this.lastSide === "premise" ? "hypothesis" : "premise";
      this.widgets[other].undo();
    }
  }
}

/** Start the page: find the mount point and the configuration, then fetch the first item. */
export function mount(doc: Document = document): NliPairTask | null {
  return mountTask(doc, ["nli_pair"], (root, task) => new NliPairTask(root, task));
}

autoMount(() => mount());
