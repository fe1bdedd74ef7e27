/**
 * A task page's configuration and what the work API sends it: the `<script id="hatlab-task"
 * type="application/json">` block the template embeds (Django's json_script), the items the next
 * endpoint hands out, what submit answers, and the completion at the end of the hand-out.
 */

import type { CompletionForm } from "../mturk";
import type { ProtocolControls } from "./controls";

export interface Completion {
  /** Whether the worker has done their share (the platform's completion step follows). */
  finished?: boolean;
  /** Why the hand-out stopped: "done", "full" (nothing free now), "closed" (the study finished). */
  state?: string;
  redirect_url?: string;
  code?: string;
  message?: string;
  /** A form to post back to the platform (MTurk's externalSubmit with the assignmentId). */
  form?: CompletionForm;
}

export interface TaskConfig<C = Record<string, unknown>> {
  study: string;
  kind: string;
  next_url: string;
  submit_url_template: string;
  done_url?: string;
  csrf_token?: string;
  /** "gold": the gold editor, where a researcher's answer becomes the item's gold answer (one item;
   * the same widgets, other words on the buttons). A worker's page has no mode. */
  mode?: "gold" | "training";
  config: C;
  /** The worker's controls the study's protocol allows (skip with a reason, back to change an answer). */
  protocol?: ProtocolControls | null;
  /** A researcher's preview: the item to show; the page sends nothing. */
  sample?: (NextItem<unknown, C> & { message?: string }) | null;
}

export interface NextItem<P, C = Record<string, unknown>> {
  assignment: string;
  expires_at?: string;
  /** The signed token bound to this item and the moment it was served; sent back with its answer. */
  page_token?: string | null;
  item: { kind: string; payload: P };
  progress?: { done: number; total: number };
  /** The study's public config as the server sends it with each item (it overrides the page's). */
  config?: Partial<C>;
}

export type NextAnswer<P, C = Record<string, unknown>> =
  NextItem<P, C> | { done: true; completion?: Completion };

/** What submit answers: the stored response, and (asked with "next": true) the following item, or
 * null when the next endpoint has an error to give. */
export interface Submitted<P, C = Record<string, unknown>> {
  response: number;
  next?: NextAnswer<P, C> | null;
}

/** The task page's mode that edits an item's gold answer. */
export const GOLD_MODE = "gold";

/**
 * Read and check the JSON configuration that the template embeds; with `kinds`, the task kind must
 * be one of them.
 */
export function readTaskConfig<C>(
  doc: Document,
  id = "hatlab-task",
  kinds?: readonly string[],
): TaskConfig<C> {
  const node = doc.getElementById(id);
  if (!node?.textContent) throw new Error(`The page has no #${id} configuration.`);
  const config = JSON.parse(node.textContent) as TaskConfig<C>;
  for (const key of ["next_url", "submit_url_template"] as const) {
    if (typeof config[key] !== "string" || !config[key]) throw new Error(`Task configuration lacks ${key}.`);
  }
  if (kinds && !kinds.includes(config.kind)) {
    throw new Error(`Task kind ${JSON.stringify(config.kind)} is not one of ${kinds.join(", ")}.`);
  }
  config.config = config.config ?? ({} as C);
  return config;
}

/** The submit URL of `assignment`, from the template's ASSIGNMENT placeholder. */
export function submitUrl(template: string, assignment: string): string {
  return template.replace("ASSIGNMENT", encodeURIComponent(assignment));
}
