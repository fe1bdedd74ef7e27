import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { ANSWER_COPY_FIELD, PREVIEW_ASSIGNMENT_ID } from "../src/mturk";
import { ChoiceTask } from "../src/kinds/forced_choice";
import { HighlightTask } from "../src/kinds/highlight";
import {
  type FlowOptions,
  type Missing,
  type NextItem,
  PREVIEW_MESSAGE,
  SAMPLE_MESSAGE,
  SAVING_RECONNECTING,
  TaskFlow,
  type TaskConfig,
  mountTask,
} from "../src/task_loop";
import { MarkingTask } from "../src/kinds/token_marking";
import { RatingTask } from "../src/kinds/sentence_rating";
import { $, fakeClock, key, MemoryStorage, server, settle } from "./helpers";

/** A minimal kind: a yes/no question about a word, answered with the keys y and n. */
interface YesNoConfig {
  question?: string;
}

class YesNoTask extends TaskFlow<{ word: string }, YesNoConfig> {
  choice: "yes" | "no" | null = null;
  shownAt = 0;
  readonly prompt: HTMLElement;

  constructor(root: HTMLElement, task: TaskConfig<YesNoConfig>, options: FlowOptions = {}) {
    super(root, task, options);
    this.prompt = this.doc.createElement("p");
    this.prompt.className = "yn-prompt";
    this.body.append(this.prompt);
  }

  answer(): { choice: string } | null {
    return this.choice === null ? null : { choice: this.choice };
  }

  protected missing(): Missing | null {
    return this.choice === null ? { field: "answer.choice", message: "say yes or no" } : null;
  }

  protected timings(): Record<string, number | null> {
    return { answer_ms: Math.round(this.now() - this.shownAt) };
  }

  protected signals(): Record<string, unknown> {
    return { keys: 1 };
  }

  protected render(next: NextItem<{ word: string }, YesNoConfig>, config: YesNoConfig): void {
    this.choice = null;
    this.shownAt = this.now();
    this.prompt.textContent = `${config.question ?? "Is it a word?"} ${next.item.payload.word}`;
  }

  protected onItemKey(event: KeyboardEvent): void {
    if (event.key === "y" || event.key === "n") {
      this.choice = event.key === "y" ? "yes" : "no";
      this.syncControls();
    }
  }
}

const TASK: TaskConfig<YesNoConfig> = {
  study: "s-7",
  kind: "yes_no",
  next_url: "/api/work/s-7/next/",
  submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
  done_url: "/w/s-7/done/",
  csrf_token: "csrf-7",
  config: { question: "Is this a word?" },
};

const SUBMIT_TO = "https://workersandbox.mturk.com";
const ACCEPTED = `?assignmentId=ASG1&hitId=HIT1&workerId=W1&turkSubmitTo=${encodeURIComponent(SUBMIT_TO)}`;
const FORM = { action: `${SUBMIT_TO}/mturk/externalSubmit`, fields: { assignmentId: "ASG1" } };

function item(uid: string, word: string, done: number, total = 2) {
  return { assignment: uid, item: { kind: "yes_no", payload: { word } }, progress: { done, total } };
}

/** The fields of a posted form, name -> value. */
function fieldsOf(form: HTMLFormElement): Record<string, string> {
  return Object.fromEntries([...form.querySelectorAll("input")].map((input) => [input.name, input.value]));
}

let root: HTMLElement;
const started: Array<{ destroy(): void }> = [];

function track<T extends { destroy(): void }>(flow: T): T {
  started.push(flow);
  return flow;
}

beforeEach(() => {
  document.body.replaceChildren();
  root = document.createElement("div");
  root.id = "hatlab-app";
  document.body.append(root);
});

afterEach(() => {
  for (const flow of started.splice(0)) flow.destroy();
});

describe("mounting", () => {
  it("mounts a page of its kind and shows why another cannot start", () => {
    const script = document.createElement("script");
    script.id = "hatlab-task";
    script.type = "application/json";
    script.textContent = JSON.stringify(TASK);
    document.body.append(script);
    const { fetchImpl, calls } = server([{ status: 200, body: item("a1", "tree", 0) }]);
    const made = mountTask(document, ["yes_no"], (r, t) =>
      track(new YesNoTask(r, t, { fetchImpl, search: "" })),
    );
    expect(made).toBeInstanceOf(YesNoTask);
    expect(calls).toHaveLength(1);
    made!.destroy();
    expect(mountTask(document, ["highlight"], (r, t) => new YesNoTask(r, t))).toBeNull();
    expect(root.querySelector("[role=alert]")!.textContent).toMatch(/not one of highlight/);
  });
});

describe("the item loop", () => {
  it("fetches, renders with the item's config, submits with one key per item and finishes", async () => {
    const clock = fakeClock();
    const { fetchImpl, calls } = server([
      { status: 200, body: { ...item("a1", "tree", 0), config: { question: "Real word?" } } },
      { status: 201, body: { response: 1 } },
      { status: 200, body: item("a2", "blorp", 1) },
      new TypeError("offline"),
      { status: 200, body: { response: 2 } },
      {
        status: 200,
        body: {
          done: true,
          progress: { done: 2, total: 2 },
          completion: { message: "Thanks!", code: "CODE-7" },
        },
      },
    ]);
    const keys = ["k1", "k2"];
    const storage = new MemoryStorage();
    const flow = track(
      new YesNoTask(root, TASK, {
        fetchImpl,
        now: clock.now,
        retryDelayMs: 0,
        keyFactory: () => keys.shift()!,
        search: "",
        storage,
      }),
    );
    await flow.start();
    expect(root.dataset.state).toBe("item");
    expect($(".ht-progress-text").textContent).toBe("Your item 1 of 2");
    expect($(".yn-prompt").textContent).toBe("Real word? tree");
    expect(flow.submitButton.disabled).toBe(true);
    clock.advance(700);
    key(document.body, "y");
    expect(flow.submitButton.disabled).toBe(false);
    flow.submitButton.click();
    await settle();
    expect(calls[0]).toMatchObject({ url: TASK.next_url, body: {} });
    expect(calls[0].headers["X-CSRFToken"]).toBe("csrf-7");
    expect(calls[1]).toMatchObject({
      url: "/api/work/assignments/a1/submit/",
      body: {
        submission_key: "k1",
        answer: { choice: "yes" },
        timings: { answer_ms: 700 },
        signals: { keys: 1 },
      },
    });

    expect($(".yn-prompt").textContent).toBe("Is this a word? blorp");
    expect(($(".ht-progress-bar") as HTMLProgressElement).value).toBe(1);
    key(document.body, "n");
    flow.submitButton.click();
    await settle();
    // The network failed once: the resend carried the same body and key.
    expect(calls[4].body).toEqual(calls[3].body);
    expect(calls[4].body.submission_key).toBe("k2");
    expect(root.dataset.state).toBe("done");
    expect($(".ht-task").hidden).toBe(true);
    expect($(".ht-done-message").textContent).toBe("Thanks!");
    expect($(".ht-code").textContent).toBe("CODE-7");
    expect(($(".ht-done-link") as HTMLAnchorElement).getAttribute("href")).toBe("/w/s-7/done/");
    expect(storage.length).toBe(0); // outside MTurk nothing is copied
  });

  it("asks for the next item with each answer and needs no separate next call when it comes", async () => {
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", "tree", 0) },
      { status: 201, body: { response: 1, next: item("a2", "blorp", 1) } },
      {
        status: 201,
        body: {
          response: 2,
          next: { done: true, progress: { done: 2, total: 2 }, completion: { message: "All done" } },
        },
      },
    ]);
    const flow = track(new YesNoTask(root, TASK, { fetchImpl, retryDelayMs: 0, search: "" }));
    await flow.start();
    key(document.body, "y");
    flow.submitButton.click();
    await settle();
    expect(calls[1].body.next).toBe(true);
    expect($(".yn-prompt").textContent).toBe("Is this a word? blorp");
    key(document.body, "n");
    flow.submitButton.click();
    await settle();
    expect(calls.map((c) => c.url)).toEqual([
      TASK.next_url,
      "/api/work/assignments/a1/submit/",
      "/api/work/assignments/a2/submit/",
    ]);
    expect(root.dataset.state).toBe("done");
    expect($(".ht-done-message").textContent).toBe("All done");
  });

  it("says it is reconnecting while the server is away and saves the answer once, with no click", async () => {
    const unavailable = {
      status: 503,
      body: { detail: "The database is briefly unavailable; nothing was lost.", retry_after: 2 },
      headers: { "Retry-After": "2" },
    };
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", "tree", 0) },
      unavailable,
      new TypeError("Failed to fetch"),
      unavailable,
      { status: 201, body: { response: 1, next: item("a2", "blorp", 1) } },
    ]);
    // Each wait is held until the test lets it go, to look at the page meanwhile.
    const waits: Array<{ ms: number; go: () => void }> = [];
    const sleep = (ms: number) => new Promise<void>((go) => waits.push({ ms, go }));
    const flow = track(
      new YesNoTask(root, TASK, {
        fetchImpl,
        retryDelayMs: 250,
        sleep,
        keyFactory: () => "k-once",
        search: "",
      }),
    );
    await flow.start();
    key(document.body, "y");
    flow.submitButton.click();
    for (const expected of [2000, 500, 2000]) {
      await settle();
      expect(waits.at(-1)?.ms).toBe(expected);
      expect($(".ht-status").textContent).toBe(SAVING_RECONNECTING);
      expect(root.dataset.reconnecting).toBe("true");
      expect(root.dataset.state).toBe("saving");
      expect($(".ht-errors").hidden).toBe(true); // no error while reconnecting
      expect(flow.submitButton.disabled).toBe(true); // and no second submission either
      waits.at(-1)!.go(); // the second wait is the backoff after a network failure: 250 ms doubled
    }
    await settle();
    expect(waits).toHaveLength(3);
    const submits = calls.filter((c) => c.url === "/api/work/assignments/a1/submit/");
    expect(submits).toHaveLength(4);
    expect(new Set(submits.map((c) => JSON.stringify(c.body))).size).toBe(1);
    expect(submits[0].body.submission_key).toBe("k-once");
    expect($(".yn-prompt").textContent).toBe("Is this a word? blorp");
    expect(root.dataset.reconnecting).toBeUndefined();
    expect($(".ht-status").textContent).toBe("");
  });

  it("goes to next for the reason when the answer comes back with next: null", async () => {
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", "tree", 0) },
      { status: 201, body: { response: 1, next: null } },
      { status: 409, body: { errors: { study: ["the study is paused, not running"] } } },
    ]);
    const flow = track(new YesNoTask(root, TASK, { fetchImpl, retryDelayMs: 0, search: "" }));
    await flow.start();
    key(document.body, "y");
    flow.submitButton.click();
    await settle();
    expect(calls[2].url).toBe(TASK.next_url);
    // A page of its own, not an error: nothing to retry, no developer's wording.
    expect(root.dataset.state).toBe("paused");
    expect($(".ht-done-title").textContent).toBe("This study is paused.");
    expect(root.textContent).toMatch(/come back later/);
    expect(root.textContent).not.toMatch(/not running/);
    expect(document.querySelector(".ht-retry")).toBeNull();
    expect($(".ht-task").hidden).toBe(true);
  });

  it("says what is missing instead of sending, and ignores keys typed into text fields", async () => {
    const { fetchImpl, calls } = server([{ status: 200, body: item("a1", "tree", 0, 1) }]);
    const flow = track(new YesNoTask(root, TASK, { fetchImpl, search: "" }));
    await flow.start();
    const input = document.createElement("input");
    document.body.append(input);
    key(input, "y");
    expect(flow.answer()).toBeNull();
    await flow.submit();
    expect(calls).toHaveLength(1);
    expect($(".ht-errors").textContent).toBe("Say yes or no.");
  });

  it("offers another item when the assignment is gone, and a retry when loading fails", async () => {
    const { fetchImpl } = server([
      { status: 200, body: item("a1", "tree", 0, 1) },
      { status: 409, body: { errors: { assignment: ["this slot went to another annotator"] } } },
      { status: 500, body: { detail: "Server error" } },
      { status: 200, body: item("a3", "leaf", 0, 1) },
    ]);
    const flow = track(new YesNoTask(root, TASK, { fetchImpl, retryDelayMs: 0, search: "" }));
    await flow.start();
    key(document.body, "y");
    await flow.submit();
    expect(root.dataset.state).toBe("error");
    expect($(".ht-errors").textContent).toBe(
      "This item is no longer open for you: it was answered already, or its time ran out and it went to someone else.",
    );
    expect($(".ht-retry").textContent).toBe("Get another item");
    expect(flow.submitButton.disabled).toBe(true);
    $(".ht-retry").click();
    await settle();
    expect(root.dataset.state).toBe("error");
    expect($(".ht-errors").textContent).toBe(
      "Something went wrong on our side. Your answer is kept on this page; please try again.",
    );
    expect($(".ht-retry").textContent).toBe("Try again");
    $(".ht-retry").click();
    await settle();
    expect($(".yn-prompt").textContent).toBe("Is this a word? leaf");
    expect(document.querySelector(".ht-retry")).toBeNull();
    expect($(".ht-errors").hidden).toBe(true);
  });

  it("sends the worker back to the platform's completion URL", async () => {
    const { fetchImpl } = server([
      {
        status: 200,
        body: {
          done: true,
          progress: { done: 2, total: 2 },
          completion: { redirect_url: "https://app.prolific.com/submissions/complete?cc=C1" },
        },
      },
    ]);
    const visited: string[] = [];
    await track(
      new YesNoTask(root, TASK, { fetchImpl, navigate: (url) => visited.push(url), search: "" }),
    ).start();
    expect(visited).toEqual(["https://app.prolific.com/submissions/complete?cc=C1"]);
    expect(($(".ht-done-link") as HTMLAnchorElement).textContent).toBe("Return to the study platform");
  });
});

describe("what the worker reads", () => {
  it("counts against the worker's own share and shows a page for each end of the hand-out", async () => {
    const ends: Array<[unknown, string, RegExp]> = [
      [
        { done: true, progress: { done: 0, total: 3 }, completion: { finished: false, state: "full" } },
        "full",
        /full for now/,
      ],
      [
        { done: true, progress: { done: 1, total: 3 }, completion: { finished: false, state: "closed" } },
        "closed",
        /closed/,
      ],
      [
        {
          done: true,
          progress: { done: 3, total: 3 },
          completion: { finished: true, state: "done", code: "C-1" },
        },
        "done",
        /you are done/,
      ],
    ];
    for (const [body, state, title] of ends) {
      const { fetchImpl } = server([
        { status: 200, body: item("a1", "tree", 1, 3) },
        { status: 201, body: { response: 1, next: body } },
      ]);
      const flow = track(new YesNoTask(root, TASK, { fetchImpl, search: "", navigate: () => undefined }));
      await flow.start();
      expect($(".ht-progress-text").textContent).toBe("Your item 2 of 3");
      key(document.body, "y");
      await flow.submit();
      expect(root.dataset.state).toBe(state);
      expect($(".ht-done-title").textContent).toMatch(title);
      // Only a finished worker gets the platform's completion step.
      expect(document.querySelector(".ht-code")?.textContent ?? null).toBe(state === "done" ? "C-1" : null);
      flow.destroy();
    }
  });

  it("a worker the study no longer takes is told so, not shown an error", async () => {
    const { fetchImpl } = server([
      { status: 403, body: { errors: { worker: ["you can no longer work on this study"] } } },
    ]);
    await track(new YesNoTask(root, TASK, { fetchImpl, search: "" })).start();
    expect(root.dataset.state).toBe("blocked");
    expect(document.querySelector(".ht-retry")).toBeNull();
  });

  it("says a server's 400 in plain words: no field path, the code words replaced", async () => {
    const { fetchImpl } = server([
      { status: 200, body: item("a1", "tree", 0) },
      {
        status: 400,
        body: { errors: { "answer.map": ["must be a list of 13 values, each 0 or 1 (one per word)"] } },
      },
      {
        status: 400,
        body: { errors: { "answer.map": ["highlight at least one word that shows the label 'x'"] } },
      },
    ]);
    const flow = track(new YesNoTask(root, TASK, { fetchImpl, search: "" }));
    await flow.start();
    key(document.body, "y");
    await flow.submit();
    expect($(".ht-errors").textContent).toBe("Check the words you highlighted.");
    await flow.submit();
    expect($(".ht-errors").textContent).toBe("Highlight at least one word that shows the label 'x'.");
    expect($(".ht-errors").textContent).not.toMatch(/answer\./);
  });

  it("puts the keyboard line in the instructions and closes them from the second item on", async () => {
    const details = document.createElement("details");
    details.className = "hatlab-instructions";
    details.open = true;
    document.body.prepend(details);
    const { fetchImpl } = server([
      { status: 200, body: item("a1", "tree", 0) },
      { status: 201, body: { response: 1, next: item("a2", "leaf", 1) } },
    ]);
    const flow = track(new YesNoTask(root, TASK, { fetchImpl, search: "" }));
    await flow.start();
    expect(details.open).toBe(true);
    expect(details.querySelector(".ht-keys")!.textContent).toBe(
      "Keys: Enter submits once the answer is complete; Escape undoes the last change.",
    );
    key(document.body, "y");
    await flow.submit();
    expect($(".yn-prompt").textContent).toBe("Is this a word? leaf");
    expect(details.open).toBe(false);
  });

  it("Enter submits from anywhere once the answer is complete, and not before", async () => {
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", "tree", 0) },
      { status: 201, body: { response: 1, next: item("a2", "leaf", 1) } },
    ]);
    const flow = track(new YesNoTask(root, TASK, { fetchImpl, search: "" }));
    await flow.start();
    const button = document.createElement("button");
    flow.controls.append(button);
    key(button, "Enter"); // incomplete: a button keeps its own Enter
    expect(calls).toHaveLength(1);
    key(document.body, "Enter"); // incomplete, elsewhere: says what is missing
    expect($(".ht-errors").textContent).toBe("Say yes or no.");
    key(document.body, "y");
    key(button, "Enter"); // complete: submits, even from a button
    await settle();
    expect(calls).toHaveLength(2);
  });
});

describe("the MTurk hand-off", () => {
  it("asks for nothing while the worker previews the HIT", async () => {
    const { fetchImpl, calls } = server([]);
    const storage = new MemoryStorage();
    const flow = track(
      new YesNoTask(root, TASK, {
        fetchImpl,
        storage,
        search: `?assignmentId=${PREVIEW_ASSIGNMENT_ID}&hitId=HIT1`,
      }),
    );
    await flow.start();
    expect(calls).toHaveLength(0);
    expect(root.dataset.state).toBe("preview");
    expect($(".ht-status").textContent).toBe(PREVIEW_MESSAGE);
    expect($(".ht-task").hidden).toBe(true);
    expect(storage.length).toBe(0);
  });

  it("shows a researcher's sample item, lets it be tried and sends nothing", async () => {
    const { fetchImpl, calls } = server([]);
    const flow = track(
      new YesNoTask(root, { ...TASK, sample: item("", "lantern", 0, 1) }, { fetchImpl, search: "" }),
    );
    await flow.start();
    expect(root.dataset.state).toBe("preview");
    expect($(".ht-status").textContent).toBe(SAMPLE_MESSAGE);
    expect($(".ht-task").hidden).toBe(false);
    expect($(".yn-prompt").textContent).toBe("Is this a word? lantern");
    key(document.body, "y");
    expect(flow.answer()).toEqual({ choice: "yes" });
    expect(($(".ht-submit") as HTMLButtonElement).disabled).toBe(true);
    await flow.submit();
    expect(calls).toHaveLength(0);
  });

  it("copies each acknowledged answer and posts it with the externalSubmit form", async () => {
    const { fetchImpl } = server([
      { status: 200, body: item("a1", "tree", 0) },
      { status: 400, body: { errors: { "answer.choice": ["not today"] } } },
      { status: 201, body: { response: 1 } },
      { status: 200, body: item("a2", "blorp", 1) },
      { status: 201, body: { response: 2 } },
      {
        status: 200,
        body: {
          done: true,
          progress: { done: 2, total: 2 },
          completion: { message: "Submit your work to MTurk.", form: FORM },
        },
      },
    ]);
    const storage = new MemoryStorage();
    const posted: HTMLFormElement[] = [];
    const keys = ["k1", "k2"];
    const visited: string[] = [];
    const options = {
      fetchImpl,
      storage,
      search: ACCEPTED,
      keyFactory: () => keys.shift()!,
      submitForm: (form: HTMLFormElement) => posted.push(form),
      navigate: (url: string) => visited.push(url),
    };
    const flow = track(new YesNoTask(root, TASK, options));
    expect(flow.mturk).toEqual({
      assignmentId: "ASG1",
      hitId: "HIT1",
      workerId: "W1",
      turkSubmitTo: SUBMIT_TO,
    });
    await flow.start();
    key(document.body, "n");
    await flow.submit(); // refused: not copied
    expect(storage.getItem("hatlab-copy:s-7")).toBeNull();
    key(document.body, "y");
    await flow.submit();
    await settle();
    // A reload of the page would still find the first answer.
    expect(JSON.parse(storage.getItem("hatlab-copy:s-7")!)).toEqual([
      {
        assignment: "a1",
        submission_key: "k1",
        answer: { choice: "yes" },
        timings: expect.any(Object),
        signals: { keys: 1, interaction: expect.any(Object) },
      },
    ]);
    key(document.body, "n");
    await flow.submit();
    await settle();

    expect(root.dataset.state).toBe("done");
    expect(posted).toHaveLength(1);
    const form = posted[0];
    expect(form.method).toBe("post");
    expect(form.action).toBe(FORM.action);
    const fields = fieldsOf(form);
    expect(fields.assignmentId).toBe("ASG1");
    const copy = JSON.parse(fields[ANSWER_COPY_FIELD]);
    expect(copy.study).toBe("s-7");
    expect(copy.submissions.map((s: { submission_key: string }) => s.submission_key)).toEqual(["k1", "k2"]);
    expect(copy.submissions.map((s: { answer: unknown }) => s.answer)).toEqual([
      { choice: "yes" },
      { choice: "no" },
    ]);
    expect(storage.getItem("hatlab-copy:s-7")).toBeNull(); // handed to MTurk: a next HIT starts afresh
    expect($(".ht-done-message").textContent).toBe("Submit your work to MTurk.");
    expect(document.querySelector(".ht-done-link")).toBeNull();
    $(".ht-done-submit").click(); // the worker can send it again should the browser not have
    expect(posted).toEqual([form, form]);
    expect(visited).toEqual([]);
  });

  it("posts the form without a copy outside MTurk's frame and refuses forms to other sites", async () => {
    const first = server([
      { status: 200, body: { done: true, progress: { done: 2, total: 2 }, completion: { form: FORM } } },
    ]);
    const posted: HTMLFormElement[] = [];
    const storage = new MemoryStorage();
    const options = { storage, search: "", submitForm: (form: HTMLFormElement) => posted.push(form) };
    await track(new YesNoTask(root, TASK, { ...options, fetchImpl: first.fetchImpl })).start();
    expect(posted).toHaveLength(1);
    expect(JSON.parse(fieldsOf(posted[0])[ANSWER_COPY_FIELD])).toEqual({ study: "s-7", submissions: [] });

    const evil = { action: "https://evil.example/collect", fields: { assignmentId: "ASG1" } };
    const second = server([
      { status: 200, body: { done: true, progress: { done: 2, total: 2 }, completion: { form: evil } } },
    ]);
    await track(new YesNoTask(root, TASK, { ...options, fetchImpl: second.fetchImpl })).start();
    expect(posted).toHaveLength(1);
    expect(($(".ht-done-link") as HTMLAnchorElement).getAttribute("href")).toBe("/w/s-7/done/");
  });
});

describe("every task page", () => {
  const PAGES = [
    ["highlight", (r: HTMLElement, t: TaskConfig<never>, o: FlowOptions) => new HighlightTask(r, t, o)],
    ["reveal_model", (r: HTMLElement, t: TaskConfig<never>, o: FlowOptions) => new ChoiceTask(r, t, o)],
    ["sentence_rating", (r: HTMLElement, t: TaskConfig<never>, o: FlowOptions) => new RatingTask(r, t, o)],
    ["token_marking", (r: HTMLElement, t: TaskConfig<never>, o: FlowOptions) => new MarkingTask(r, t, o)],
  ] as const;

  for (const [kind, make] of PAGES) {
    it(`${kind}: runs on the shared loop, stays read-only in a preview and hands off to MTurk`, async () => {
      const task = { ...TASK, kind, config: {} } as TaskConfig<never>;
      const preview = server([]);
      const previewed = track(
        make(root, task, { fetchImpl: preview.fetchImpl, search: `?assignmentId=${PREVIEW_ASSIGNMENT_ID}` }),
      );
      expect(previewed).toBeInstanceOf(TaskFlow);
      await previewed.start();
      expect(preview.calls).toHaveLength(0);
      expect(root.dataset.state).toBe("preview");

      const { fetchImpl } = server([
        { status: 200, body: { done: true, progress: { done: 2, total: 2 }, completion: { form: FORM } } },
      ]);
      const posted: HTMLFormElement[] = [];
      const storage = new MemoryStorage();
      const flow = track(
        make(root, task, { fetchImpl, storage, search: ACCEPTED, submitForm: (f) => posted.push(f) }),
      );
      await flow.start();
      expect(posted).toHaveLength(1);
      expect(fieldsOf(posted[0])).toMatchObject({ assignmentId: "ASG1" });
      expect(JSON.parse(fieldsOf(posted[0])[ANSWER_COPY_FIELD]).study).toBe("s-7");
    });
  }
});

describe("gold mode", () => {
  it("names the buttons and the end for the researcher whose answer becomes the gold", async () => {
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", "tree", 0, 1) },
      {
        status: 200,
        body: {
          response: 7,
          next: {
            done: true,
            completion: { message: "Item 1 is a gold item." },
            progress: { done: 1, total: 1 },
          },
        },
      },
    ]);
    const flow = track(new YesNoTask(root, { ...TASK, mode: "gold" }, { fetchImpl, storage: null }));
    await flow.start();
    expect($(".ht-submit").textContent).toBe("Save as the gold answer");
    key(document, "y");
    $(".ht-submit").click();
    await settle();
    expect(calls[1].body.answer).toEqual({ choice: "yes" });
    expect($(".ht-done-title").textContent).toBe("Gold answer saved.");
    expect($(".ht-done-message").textContent).toBe("Item 1 is a gold item.");
    expect($(".ht-done-link").textContent).toBe("Back to the golds");
    expect(($(".ht-done-link") as HTMLAnchorElement).getAttribute("href")).toBe(TASK.done_url);
  });

  it("keeps the worker's words on a worker's page", async () => {
    const { fetchImpl } = server([{ status: 200, body: item("a1", "tree", 0, 1) }]);
    const flow = track(new YesNoTask(root, TASK, { fetchImpl, storage: null }));
    await flow.start();
    expect($(".ht-submit").textContent).toBe("Submit and continue");
  });
});
