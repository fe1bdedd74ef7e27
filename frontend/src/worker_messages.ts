/**
 * What a worker reads when something stops them: errors in plain words (never a field path such as
 * `answer.map`, never the server's wording for developers), and the end pages of the hand-out (done,
 * full for now, paused, closed, blocked). Researcher pages keep api.ts's `renderError`, which names
 * the fields. Everything is written with textContent.
 */

import { ApiError, NETWORK_MESSAGE, type FieldErrors } from "./api";

/** The end states of a task page (the root's `data-state`). */
export type EndState = "done" | "full" | "paused" | "closed" | "blocked";

export const END_PAGES: Record<EndState, { title: string; lead: string }> = {
  done: { title: "Thank you — you are done.", lead: "Your answers are saved." },
  full: {
    title: "This study is full for now.",
    lead: "Every item is being worked on or is finished. Please come back later: items come free again when other people leave them.",
  },
  paused: {
    title: "This study is paused.",
    lead: "Please come back later. Any answer you already sent is saved.",
  },
  closed: {
    title: "This study is closed.",
    lead: "It has ended, so there is nothing more to do here. Any answer you sent is saved.",
  },
  blocked: { title: "You can no longer take part in this study.", lead: "Thank you for your time." },
};

/** Plain words for the fields of an answer a worker can get wrong. */
const FIELD_WORDS: Array<[RegExp, string]> = [
  [/^answer\.label$/, "Choose one of the labels shown."],
  [/^answer\.premise_map$/, "Check the words you highlighted in the premise."],
  [/^answer\.hypothesis_map$/, "Check the words you highlighted in the hypothesis."],
  [/^answer\.map$/, "Check the words you highlighted."],
  [/^answer(\..*)?$/, "Choose an answer first."],
];

const STALE =
  "This item is no longer open for you: it was answered already, or its time ran out and it went to someone else.";
const CLOSED = "This study has ended, so this answer could not be saved.";
const SERVER = "Something went wrong on our side. Your answer is kept on this page; please try again.";
const NOT_SAVED = "Your answer could not be saved. Please check it and try again.";

/** A message as a sentence: capital first letter, a full stop at the end. */
export function sentence(message: string): string {
  const text = message.trim();
  if (!text) return text;
  const first = text[0].toUpperCase() + text.slice(1);
  return /[.!?…]$/.test(first) ? first : `${first}.`;
}

/** Whether a server message is already written for a worker (no code words, no JSON, no paths). */
function readable(message: string): boolean {
  return !/[{}[\]_]|\bmust be\b|\bnull\b|\bUUID\b|\bJSON\b/i.test(message);
}

/** One plain line per problem of a 400 answer: the server's sentence when it is readable, otherwise
 * what the field is about. */
export function plainLines(errors: FieldErrors): string[] {
  const lines: string[] = [];
  for (const [field, messages] of Object.entries(errors)) {
    const fallback = FIELD_WORDS.find(([pattern]) => pattern.test(field))?.[1] ?? NOT_SAVED;
    for (const message of messages) {
      const line = field.startsWith("answer") && readable(message) ? sentence(message) : fallback;
      if (!lines.includes(line)) lines.push(line);
    }
  }
  return lines.length ? lines : [NOT_SAVED];
}

/** The lines a worker reads for `error`. */
export function workerLines(error: unknown): string[] {
  if (!(error instanceof ApiError)) return [SERVER];
  if (error.status === 0) return [NETWORK_MESSAGE];
  if (error.status === 400) return plainLines(error.errors);
  if (error.status === 409 && error.errors.study) return [CLOSED];
  if ([404, 409, 410].includes(error.status)) return [STALE];
  if (error.status === 403 && error.errors.detail) return ["Please reload the page and try again."];
  return [SERVER];
}

/** The end state an error of the hand-out means: a study not running, a worker blocked; else null. */
export function endStateOf(error: unknown): EndState | null {
  if (!(error instanceof ApiError)) return null;
  if (error.status === 409 && error.errors.study) return "paused";
  if (error.status === 403 && error.errors.worker) {
    const text = error.errors.worker.join(" ");
    return /no longer/.test(text) ? "blocked" : null;
  }
  return null;
}

/** Show `error` in `container` in plain words, one list entry per line. */
export function renderError(container: HTMLElement, error: unknown): void {
  const doc = container.ownerDocument;
  const list = doc.createElement("ul");
  for (const line of workerLines(error)) {
    const item = doc.createElement("li");
    item.textContent = line;
    list.append(item);
  }
  container.replaceChildren(list);
  container.hidden = false;
}
