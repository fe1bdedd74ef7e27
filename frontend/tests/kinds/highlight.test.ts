import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { HighlightTask, normaliseLabels, type TaskConfig } from "../../src/kinds/highlight";
import { readTaskConfig, submitUrl } from "../../src/task_loop";
import { $, fakeClock, key, pointer, server, settle } from "../helpers";

const TASK: TaskConfig = {
  study: "s-1",
  kind: "highlight",
  next_url: "/api/work/s-1/next/",
  submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
  done_url: "/w/s-1/done/",
  csrf_token: "csrf-abc",
  config: {
    mode: "read_first",
    labels: ["positive", "negative", "cannot decide"],
    time_limit_s: 600,
    undecided_label: "cannot decide",
    require_highlight: true,
  },
};

function item(uid: string, words: string[], done: number, total = 2) {
  return {
    assignment: uid,
    expires_at: new Date(Date.now() + 600_000).toISOString(),
    item: { kind: "highlight", payload: { words, breaks: [] } },
    progress: { done, total },
    config: TASK.config,
  };
}

function words(): HTMLElement[] {
  return Array.from(document.querySelectorAll<HTMLElement>(".hl-word"));
}

function click(el: HTMLElement): void {
  pointer(el, "pointerdown");
  pointer(el, "pointerup");
}

let root: HTMLElement;
const started: HighlightTask[] = [];

function startTask(options: ConstructorParameters<typeof HighlightTask>[2]): HighlightTask {
  const task = new HighlightTask(root, TASK, options);
  started.push(task);
  return task;
}

afterEach(() => {
  for (const task of started.splice(0)) task.destroy();
});

beforeEach(() => {
  document.body.replaceChildren();
  root = document.createElement("div");
  root.id = "hatlab-app";
  document.body.append(root);
});

describe("configuration", () => {
  it("reads the json_script block and checks its URLs", () => {
    const script = document.createElement("script");
    script.id = "hatlab-task";
    script.type = "application/json";
    script.textContent = JSON.stringify(TASK);
    document.body.append(script);
    expect(readTaskConfig(document)).toEqual(TASK);
    script.textContent = JSON.stringify({ ...TASK, next_url: "" });
    expect(() => readTaskConfig(document)).toThrow(/next_url/);
  });

  it("fills the assignment into the submit URL and accepts labels as strings or objects", () => {
    expect(submitUrl(TASK.submit_url_template, "a b")).toBe("/api/work/assignments/a%20b/submit/");
    expect(normaliseLabels(["pos", { value: "neg", text: "Negative" }, { value: "x" }])).toEqual([
      { value: "pos", text: "pos" },
      { value: "neg", text: "Negative" },
      { value: "x", text: "x" },
    ]);
  });
});

describe("a session of two items", () => {
  it("loads, answers, submits and finishes", async () => {
    const clock = fakeClock();
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", ["Great", "pizza", "here"], 0) },
      { status: 201, body: { response: 1 } },
      { status: 200, body: item("a2", ["Cold", "and", "bland"], 1) },
      { status: 201, body: { response: 2 } },
      {
        status: 200,
        body: {
          done: true,
          progress: { done: 2, total: 2 },
          completion: { message: "Thanks!", code: "C0DE-42" },
        },
      },
    ]);
    const keys = ["key-1", "key-2"];
    const task = startTask({ fetchImpl, now: clock.now, keyFactory: () => keys.shift()! });
    await task.start();

    expect(root.dataset.state).toBe("item");
    expect($(".ht-progress-text").textContent).toBe("Your item 1 of 2");
    expect(words().map((w) => w.textContent)).toEqual(["Great", "pizza", "here"]);
    const submit = $(".ht-submit") as HTMLButtonElement;
    expect(submit.disabled).toBe(true);

    // Read-first: a click before choosing a label changes nothing.
    click(words()[0]);
    expect(words()[0].classList.contains("is-on")).toBe(false);

    clock.advance(5_000);
    key(document.body, "1");
    expect($(".ht-label[data-value='positive']").getAttribute("aria-pressed")).toBe("true");
    expect(submit.disabled).toBe(false);
    clock.advance(1_000);
    click(words()[0]);
    click(words()[1]);
    clock.advance(2_000);
    submit.click();
    await settle();

    expect(calls[0]).toMatchObject({ url: TASK.next_url, body: {} });
    expect(calls[1].url).toBe("/api/work/assignments/a1/submit/");
    expect(calls[1].body).toMatchObject({
      submission_key: "key-1",
      answer: { label: "positive", map: [1, 1, 0] },
      timings: { read_ms: 5_000, answer_ms: 3_000, label_at_ms: 5_000, first_highlight_at_ms: 6_000 },
      signals: { blocked_attempts: 1, actions: { mouse: 2, touch: 0, pen: 0, keyboard: 0 } },
    });

    expect($(".ht-progress-text").textContent).toBe("Your item 2 of 2");
    expect(($(".ht-progress-bar") as HTMLProgressElement).value).toBe(1);
    expect(submit.disabled).toBe(true);
    $(".ht-label[data-value='negative']").click();
    words()[2].focus();
    key(words()[2], " ");
    key(words()[2], "ArrowLeft", { shiftKey: true });
    submit.click();
    await settle();

    expect(calls[3].url).toBe("/api/work/assignments/a2/submit/");
    expect(calls[3].body).toMatchObject({
      submission_key: "key-2",
      answer: { label: "negative", map: [0, 1, 1] },
    });
    expect(root.dataset.state).toBe("done");
    expect($(".ht-task").hidden).toBe(true);
    expect($(".ht-done-message").textContent).toBe("Thanks!");
    expect($(".ht-code").textContent).toBe("C0DE-42");
    expect(($(".ht-done-link") as HTMLAnchorElement).getAttribute("href")).toBe("/w/s-1/done/");
  });

  it("hands the worker back to the platform's completion URL", async () => {
    const { fetchImpl } = server([
      {
        status: 200,
        body: {
          done: true,
          progress: { done: 2, total: 2 },
          completion: { redirect_url: "https://x.test/ok?c=1" },
        },
      },
    ]);
    const visited: string[] = [];
    const task = startTask({ fetchImpl, navigate: (url) => visited.push(url) });
    await task.start();
    expect(visited).toEqual(["https://x.test/ok?c=1"]);
    expect(($(".ht-done-link") as HTMLAnchorElement).href).toBe("https://x.test/ok?c=1");
  });
});

describe("time limit", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("counts down to the assignment's expiry and then asks for the answer", async () => {
    vi.useFakeTimers({
      toFake: ["Date", "setInterval", "clearInterval"],
      now: Date.parse("2026-01-01T10:00:00Z"),
    });
    const next = { ...item("a1", ["x"], 0, 1), expires_at: "2026-01-01T10:01:01Z" };
    const { fetchImpl } = server([{ status: 200, body: next }]);
    await startTask({ fetchImpl }).start();
    const timer = $(".ht-timer");
    expect(timer.textContent).toBe("Time left 1:01");
    expect(timer.classList.contains("is-short")).toBe(false);
    vi.advanceTimersByTime(2_000);
    expect(timer.textContent).toBe("Time left 0:59");
    expect(timer.classList.contains("is-short")).toBe(true);
    vi.advanceTimersByTime(60_000);
    expect(timer.textContent).toBe("Time is up: submit now");
    key(document.body, "3");
    expect(($(".ht-submit") as HTMLButtonElement).disabled).toBe(false);
  });
});

describe("failures", () => {
  it("asks for a highlight before sending a label other than the undecided one", async () => {
    const { fetchImpl, calls } = server([{ status: 200, body: item("a1", ["ok", "fine"], 0, 1) }]);
    await startTask({ fetchImpl }).start();
    key(document.body, "2");
    $(".ht-submit").click();
    await settle();
    expect(calls).toHaveLength(1);
    expect($(".ht-errors").textContent).toBe(
      'Highlight at least one word in the text that shows "negative".',
    );
    // Shown next to the words it is about, not at the far end of the page.
    expect($(".hl-text").nextElementSibling).toBe($(".ht-errors"));
    expect(($(".ht-submit") as HTMLButtonElement).disabled).toBe(false);
    // Enter says the same (the answer is not complete); once a word is highlighted it submits.
    key(document.body, "Enter");
    await settle();
    expect(calls).toHaveLength(1);
    click(words()[0]);
    key(document.body, "Enter");
    await settle();
    expect(calls).toHaveLength(2);
    expect(calls[1].body.answer).toEqual({ label: "negative", map: [1, 0] });
  });

  it("asks whether to keep the highlights when the label changes, and Escape undoes step by step", async () => {
    const { fetchImpl } = server([{ status: 200, body: item("a1", ["ok", "fine", "food"], 0, 1) }]);
    const task = startTask({ fetchImpl });
    await task.start();
    key(document.body, "1");
    click(words()[0]);
    click(words()[1]);
    const dialog = () => document.querySelector<HTMLDialogElement>("dialog.ht-keep");
    key(document.body, "2");
    expect(dialog()).not.toBeNull();
    expect(dialog()!.textContent).toContain('Keep your highlights for "negative"?');
    expect(task.answer()!.label).toBe("positive"); // nothing changes before the answer
    key(document.body, "3"); // the page's keys wait while the question is open
    expect(task.answer()!.label).toBe("positive");
    (dialog()!.querySelector(".ht-keep-no") as HTMLButtonElement).click();
    await settle();
    expect(dialog()).toBeNull();
    expect(task.answer()).toEqual({ label: "negative", map: [0, 0, 0] });
    // Escape: the clearing comes back, then the label goes back, then the two words one by one.
    key(document.body, "Escape");
    expect(task.answer()).toEqual({ label: "negative", map: [1, 1, 0] });
    key(document.body, "Escape");
    expect(task.answer()).toEqual({ label: "positive", map: [1, 1, 0] });
    key(document.body, "Escape");
    expect(task.answer()).toEqual({ label: "positive", map: [1, 0, 0] });
    key(document.body, "Escape");
    key(document.body, "Escape");
    expect(task.answer()).toBeNull(); // the first label choice undone: read-first locks the words again
    expect(words()[2].getAttribute("aria-disabled")).toBe("true");
    // Keep: the highlights stay with the new label; Escape on the question takes the change back.
    key(document.body, "1");
    click(words()[2]);
    key(document.body, "2");
    (dialog()!.querySelector(".ht-keep-yes") as HTMLButtonElement).click();
    await settle();
    expect(task.answer()).toEqual({ label: "negative", map: [0, 0, 1] });
    key(document.body, "1");
    key(dialog()!, "Escape");
    await settle();
    expect(dialog()).toBeNull();
    expect(task.answer()).toEqual({ label: "negative", map: [0, 0, 1] });
  });

  it("shows a 400 naming the field and resends with the same submission_key", async () => {
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", ["ok", "fine"], 0, 1) },
      { status: 400, body: { errors: { "answer.label": ["must be one of ['good', 'bad']"] } } },
      new TypeError("offline"),
      { status: 200, body: { response: 9 } },
      { status: 200, body: { done: true, progress: { done: 2, total: 2 }, completion: {} } },
    ]);
    const task = startTask({ fetchImpl, retryDelayMs: 0, keyFactory: () => "same-key" });
    await task.start();
    key(document.body, "2");
    click(words()[1]);
    $(".ht-submit").click();
    await settle();
    expect($(".ht-errors").hidden).toBe(false);
    expect($(".ht-errors").textContent).toBe("Choose one of the labels shown.");
    expect(root.dataset.state).toBe("item");

    $(".ht-submit").click();
    await settle();
    expect(calls.map((c) => c.body.submission_key)).toEqual([
      undefined,
      "same-key",
      "same-key",
      "same-key",
      undefined,
    ]);
    expect(calls[3].body).toEqual(calls[2].body);
    expect(calls[3].body.answer).toEqual({ label: "negative", map: [0, 1] });
    expect(root.dataset.state).toBe("done");
  });

  it("offers another item when the assignment is gone", async () => {
    const { fetchImpl } = server([
      { status: 200, body: item("a1", ["x"], 0, 1) },
      { status: 409, body: { errors: { assignment: ["This assignment expired."] } } },
      { status: 200, body: item("a3", ["y"], 0, 1) },
    ]);
    const task = startTask({ fetchImpl, retryDelayMs: 0 });
    await task.start();
    key(document.body, "3");
    $(".ht-submit").click();
    await settle();
    expect($(".ht-errors").textContent).toMatch(/^This item is no longer open for you/);
    expect(($(".ht-submit") as HTMLButtonElement).disabled).toBe(true);
    $(".ht-retry").click();
    await settle();
    expect(words().map((w) => w.textContent)).toEqual(["y"]);
    expect($(".ht-errors").hidden).toBe(true);
  });

  it("ignores shortcut digits typed into a text field and beyond the labels", async () => {
    const { fetchImpl } = server([{ status: 200, body: item("a1", ["x"], 0, 1) }]);
    const task = startTask({ fetchImpl });
    await task.start();
    const input = document.createElement("input");
    document.body.append(input);
    key(input, "1");
    key(document.body, "4");
    expect(task.widget.label).toBeNull();
  });
});
