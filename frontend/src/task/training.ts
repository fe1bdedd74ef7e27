/**
 * The training phase of a task page (`mode: "training"`): the same page and widget, its next and submit
 * the training's; after each answer the worker sees whether it was right, the expected answer and why,
 * then goes on. Text is written only with textContent.
 */

import { el } from "./dom";

export const TRAINING_MODE = "training";

/** What the training's answer route says after an answer. */
export interface TrainingFeedback {
  passed: boolean | null;
  /** The expected answer in words. */
  expected: string;
  /** The expected answer as the kind's answer object (a kind may show it on the item). */
  expected_answer: unknown;
  explanation: string;
}

/** The feedback box: right or not, the expected answer, the explanation and a Continue button. */
export function renderFeedback(
  doc: Document,
  feedback: TrainingFeedback,
  onContinue: () => void,
): HTMLElement {
  const box = el(doc, "section", "ht-feedback");
  box.dataset.passed = feedback.passed ? "true" : "false";
  box.setAttribute("aria-live", "polite");
  const title = el(
    doc,
    "h3",
    "ht-feedback-title",
    feedback.passed ? "Right: that is the expected answer." : "Not quite: here is the expected answer.",
  );
  title.tabIndex = -1;
  const expected = el(doc, "p", "ht-feedback-expected", `Expected: ${feedback.expected}`);
  const parts: HTMLElement[] = [title, expected];
  if (feedback.explanation) parts.push(el(doc, "p", "ht-feedback-why", feedback.explanation));
  const next = el(doc, "button", "ht-feedback-next", "Continue");
  next.type = "button";
  next.addEventListener("click", () => onContinue());
  parts.push(next);
  box.append(...parts);
  return box;
}
