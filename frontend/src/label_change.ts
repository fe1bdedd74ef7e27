/**
 * The label-and-highlights pages' two shared pieces: the question asked when the worker changes the
 * label while words are highlighted ("keep the highlights made for the old label?"), and the undo
 * history that Escape walks back (label choices and highlight steps, in the order they were made).
 * Text is written only with textContent.
 */

import type { HighlightWidget } from "./highlight_widget";

export type KeepAnswer = "keep" | "clear" | "cancel";

/**
 * Ask whether to keep the highlights made for label `from` now that the worker chose `to`: a modal
 * `<dialog>` with "Keep them" and "Clear them"; Escape (the dialog's cancel) takes the change back.
 */
export function askKeepHighlights(host: HTMLElement, from: string, to: string): Promise<KeepAnswer> {
  const doc = host.ownerDocument;
  const dialog = doc.createElement("dialog");
  dialog.className = "ht-keep";
  dialog.setAttribute("aria-labelledby", "ht-keep-title");
  const title = doc.createElement("h2");
  title.id = "ht-keep-title";
  title.textContent = `Keep your highlights for "${to}"?`;
  const text = doc.createElement("p");
  text.textContent = `You highlighted these words when your label was "${from}".`;
  const keep = doc.createElement("button");
  keep.type = "button";
  keep.className = "ht-keep-yes";
  keep.textContent = "Keep them";
  const clear = doc.createElement("button");
  clear.type = "button";
  clear.className = "ht-keep-no";
  clear.textContent = "Clear them";
  const row = doc.createElement("p");
  row.className = "ht-keep-actions";
  row.append(keep, clear);
  dialog.append(title, text, row);
  host.append(dialog);
  return new Promise((resolve) => {
    const close = (answer: KeepAnswer): void => {
      if (typeof dialog.close === "function" && dialog.open) dialog.close();
      dialog.remove();
      resolve(answer);
    };
    keep.addEventListener("click", () => close("keep"));
    clear.addEventListener("click", () => close("clear"));
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      close("cancel");
    });
    dialog.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        close("cancel");
      }
    });
    if (typeof dialog.showModal === "function") dialog.showModal();
    else dialog.setAttribute("open", "");
    keep.focus();
  });
}

type Entry = { type: "label"; previous: string | null } | { type: "words"; widget: HighlightWidget };

/** The order of a page's undoable actions over its widgets: label choices and highlight steps. */
export class UndoHistory {
  private entries: Entry[] = [];
  private readonly seen = new Map<HighlightWidget, number>();

  constructor(private readonly widgets: readonly HighlightWidget[]) {}

  /** A new item: nothing to undo. */
  reset(): void {
    this.entries = [];
    for (const widget of this.widgets) this.seen.set(widget, widget.stepCount);
  }

  /** The label was changed from `previous`. */
  label(previous: string | null): void {
    this.sync();
    this.entries.push({ type: "label", previous });
  }

  /** Follow the widgets' own steps (made by pointer or keys, or undone with Ctrl+Z or the button). */
  sync(): void {
    for (const widget of this.widgets) {
      const before = this.seen.get(widget) ?? 0;
      const now = widget.stepCount;
      for (let i = before; i < now; i++) this.entries.push({ type: "words", widget });
      for (let i = now; i < before; i++) {
        const at = this.entries.map((e) => e.type === "words" && e.widget === widget).lastIndexOf(true);
        if (at >= 0) this.entries.splice(at, 1);
      }
      this.seen.set(widget, now);
    }
  }

  /** Undo the last action; `restoreLabel` puts a label back. False when there is nothing to undo. */
  undo(restoreLabel: (label: string | null) => void): boolean {
    this.sync();
    const entry = this.entries.pop();
    if (!entry) return false;
    if (entry.type === "label") {
      restoreLabel(entry.previous);
    } else {
      this.seen.set(entry.widget, entry.widget.stepCount - 1);
      entry.widget.undo();
    }
    return true;
  }
}
