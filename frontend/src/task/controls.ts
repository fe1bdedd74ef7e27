/**
 * The worker's controls a study's protocol allows on its task page: skip the item with a reason (the
 * item goes to someone else) and go back to an answer already sent to change it. The routes and
 * the reasons come with the page's configuration (`protocol`). Text is written only with textContent.
 */

import { el } from "./dom";

export interface ProtocolControls {
  skip_reasons: string[];
  back: boolean;
  skip_url_template: string;
  edit_url_template: string;
  previous_url: string;
}

/** What `previous` answers: an answer already sent, its item, and what it is now. */
export interface PreviousAnswer<P, C> {
  assignment: string;
  page_token?: string | null;
  item: { kind: string; payload: P };
  answer: unknown;
  config?: Partial<C>;
  edit: true;
}

/** The controls are on when the study gives skip reasons or allows going back. */
export function controlsOn(protocol: ProtocolControls | undefined | null): protocol is ProtocolControls {
  return !!protocol && (protocol.skip_reasons.length > 0 || protocol.back);
}

/**
 * The skip question: one radio button per reason, "Skip this item" and "Cancel". `onSkip` gets the
 * chosen reason; the box closes itself on Cancel or Escape.
 */
export class SkipChooser {
  readonly box: HTMLElement;
  private readonly confirm: HTMLButtonElement;
  private readonly radios: HTMLInputElement[];

  constructor(doc: Document, reasons: string[], onSkip: (reason: string) => void, onClose: () => void) {
    this.box = el(doc, "fieldset", "ht-skip-box");
    this.box.hidden = true;
    const legend = el(doc, "legend", "", "Why do you skip this item?");
    this.radios = reasons.map((reason) => {
      const input = doc.createElement("input");
      input.type = "radio";
      input.name = "ht-skip-reason";
      input.value = reason;
      input.addEventListener("change", () => (this.confirm.disabled = false));
      return input;
    });
    const labels = this.radios.map((input, i) => {
      const label = el(doc, "label", "ht-skip-reason");
      label.append(input, " ", reasons[i]);
      return label;
    });
    this.confirm = el(doc, "button", "ht-skip-confirm", "Skip this item");
    this.confirm.type = "button";
    this.confirm.disabled = true;
    this.confirm.addEventListener("click", () => {
      const chosen = this.radios.find((r) => r.checked);
      if (chosen) onSkip(chosen.value);
    });
    const cancel = el(doc, "button", "ht-skip-cancel", "Cancel");
    cancel.type = "button";
    cancel.addEventListener("click", () => onClose());
    this.box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.stopPropagation();
        onClose();
      }
    });
    const row = el(doc, "div", "ht-skip-actions");
    row.append(this.confirm, cancel);
    this.box.append(legend, ...labels, row);
  }

  open(): void {
    this.radios.forEach((r) => (r.checked = false));
    this.confirm.disabled = true;
    this.box.hidden = false;
    this.radios[0]?.focus();
  }

  close(): void {
    this.box.hidden = true;
  }

  get isOpen(): boolean {
    return !this.box.hidden;
  }
}
