/**
 * The end pages of a task page, shown when the hand-out stops for the worker: done (thanks, the
 * completion message and code, then the way back to their platform: a link, a redirect, or MTurk's
 * completion form), full for now, paused, closed, and blocked. Their words are worker_messages.ts's
 * `END_PAGES`; the gold editor's end says the gold answer was saved. Text is written only with
 * textContent.
 */

import type { CompletionForm } from "../mturk";
import { END_PAGES, type EndState } from "../worker_messages";
import type { Completion } from "./config";
import { el } from "./dom";

/** The end a completion means: the worker's share done, the study full for now, or closed. */
export function completionEnd(completion: Completion): EndState {
  return completion.state === "full" || completion.state === "closed"
    ? completion.state
    : completion.finished === false
      ? "full"
      : "done";
}

export interface EndPageOptions {
  /** The gold editor's end (the researcher's answer became the gold). */
  gold: boolean;
  /** Where "Finish" leads when the completion names no redirect. */
  doneUrl?: string;
  /** Post the platform's completion form; the form, or null when it is not one this page may post. */
  postForm(form: CompletionForm): HTMLFormElement | null;
  /** Submit a completion form again (the page's button, should the browser not have sent it). */
  submitForm(form: HTMLFormElement): void;
}

/**
 * Fill `box` with the end page of `state` and show it; a done page with a completion form posts it.
 * Returns the page's title (to move focus to) and the form posted, if any.
 */
export function renderEndPage(
  box: HTMLElement,
  state: EndState,
  completion: Completion,
  options: EndPageOptions,
): { title: HTMLElement; form: HTMLFormElement | null } {
  const d = box.ownerDocument;
  const gold = options.gold;
  const page = END_PAGES[state];
  const title = el(d, "h2", "ht-done-title", gold ? "Gold answer saved." : page.title);
  const parts: HTMLElement[] = gold ? [title] : [title, el(d, "p", "ht-done-lead", page.lead)];
  if (completion.message && state === "done") parts.push(el(d, "p", "ht-done-message", completion.message));
  const form = state === "done" && completion.form ? options.postForm(completion.form) : null;
  if (state === "done" && completion.code) {
    const p = el(d, "p", "ht-done-code", "Your completion code: ");
    p.append(el(d, "code", "ht-code", completion.code));
    parts.push(p);
  }
  if (form) {
    // The form is on its way; should the browser not have sent it, the worker can.
    const again = el(d, "button", "ht-done-submit", "Submit to Mechanical Turk");
    again.type = "button";
    again.addEventListener("click", () => options.submitForm(form));
    const p = el(d, "p", "ht-done-next");
    p.append(again);
    parts.push(p);
  } else if (state === "done") {
    const target = completion.redirect_url || options.doneUrl;
    if (target) {
      const text = completion.redirect_url
        ? "Return to the study platform"
        : gold
          ? "Back to the golds"
          : "Finish";
      const link = el(d, "a", "ht-done-link", text);
      link.href = target;
      const p = el(d, "p", "ht-done-next");
      p.append(link);
      parts.push(p);
    }
  }
  box.replaceChildren(...parts);
  box.hidden = false;
  box.dataset.end = state;
  return { title, form };
}
