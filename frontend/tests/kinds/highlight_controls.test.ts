import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { HighlightTask, type TaskConfig } from "../../src/kinds/highlight";
import { $, fakeClock, pointer, server, settle } from "../helpers";

const TASK: TaskConfig = {
  study: "s-1",
  kind: "highlight",
  next_url: "/api/work/s-1/next/",
  submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
  done_url: "/w/s-1/done/",
  csrf_token: "csrf-abc",
  config: { mode: "read_first", labels: ["positive", "negative"], time_limit_s: 600 },
  protocol: {
    skip_reasons: ["I can't judge this", "The text is broken"],
    back: true,
    skip_url_template: "/api/work/assignments/ASSIGNMENT/skip/",
    edit_url_template: "/api/work/assignments/ASSIGNMENT/edit/",
    previous_url: "/api/work/s-1/previous/",
  },
};

function item(uid: string, words: string[], done: number) {
  return {
    assignment: uid,
    expires_at: new Date(Date.now() + 600_000).toISOString(),
    page_token: `token-${uid}`,
    item: { kind: "highlight", payload: { words, breaks: [] } },
    progress: { done, total: 2 },
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

function button(text: string): HTMLButtonElement {
  const found = Array.from(document.querySelectorAll<HTMLButtonElement>("button")).find(
    (b) => b.textContent === text,
  );
  if (!found) throw new Error(`no button ${text}`);
  return found;
}

let root: HTMLElement;
let task: HighlightTask | null = null;

beforeEach(() => {
  document.body.replaceChildren();
  root = document.createElement("div");
  root.id = "hatlab-app";
  document.body.append(root);
});

afterEach(() => task?.destroy());

describe("the worker's controls", () => {
  it("goes back to change an answer (shown again), then skips the next item with a reason", async () => {
    const clock = fakeClock();
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", ["Great", "pizza", "here"], 0) },
      { status: 201, body: { response: 1, next: item("a2", ["Cold", "soup"], 1) } },
      {
        status: 200,
        body: {
          assignment: "a1",
          page_token: "token-a1",
          item: { kind: "highlight", payload: { words: ["Great", "pizza", "here"], breaks: [] } },
          answer: { label: "positive", map: [0, 1, 0] },
          config: TASK.config,
          edit: true,
        },
      },
      { status: 201, body: { edit: 7 } },
      { status: 200, body: item("a2", ["Cold", "soup"], 1) },
      {
        status: 200,
        body: {
          skipped: 3,
          next: { done: true, progress: { done: 2, total: 2 }, completion: { message: "Thanks!" } },
        },
      },
    ]);
    const keys = ["key-1", "key-2", "key-3", "key-4"];
    task = new HighlightTask(root, TASK, { fetchImpl, now: clock.now, keyFactory: () => keys.shift()! });
    await task.start();

    $(".ht-label[data-value='positive']").click();
    click(words()[1]);
    $(".ht-submit").click();
    await settle();
    expect($(".ht-progress-text").textContent).toBe("Your item 2 of 2");

    button("Previous item").click();
    await settle();
    expect(calls[2]).toMatchObject({ url: TASK.protocol!.previous_url, body: { before: null } });
    expect($(".ht-progress-text").textContent).toBe("Changing an earlier answer");
    expect(words().map((w) => w.textContent)).toEqual(["Great", "pizza", "here"]);
    expect($(".ht-label[data-value='positive']").getAttribute("aria-pressed")).toBe("true");
    expect(words().map((w) => w.classList.contains("is-on"))).toEqual([false, true, false]);
    expect(button("Skip…").hidden).toBe(true); // an answer already sent is changed, not skipped

    click(words()[2]);
    button("Save the changed answer").click();
    await settle();
    expect(calls[3].url).toBe("/api/work/assignments/a1/edit/");
    expect(calls[3].body).toMatchObject({
      submission_key: "key-3",
      answer: { label: "positive", map: [0, 1, 1] },
    });
    expect(calls[4].url).toBe(TASK.next_url);
    expect(words().map((w) => w.textContent)).toEqual(["Cold", "soup"]);
    expect($(".ht-submit").textContent).toBe("Submit and continue");

    const skip = button("Skip…");
    expect(skip.hidden).toBe(false);
    skip.click();
    const confirm = button("Skip this item");
    expect(confirm.disabled).toBe(true); // a reason first
    const reason = document.querySelector<HTMLInputElement>("input[value='The text is broken']")!;
    reason.checked = true;
    reason.dispatchEvent(new Event("change"));
    expect(confirm.disabled).toBe(false);
    confirm.click();
    await settle();
    expect(calls[5]).toMatchObject({
      url: "/api/work/assignments/a2/skip/",
      body: { reason: "The text is broken" },
    });
    expect(root.dataset.state).toBe("done");
    expect(calls).toHaveLength(6);
  });

  it("says so when there is no earlier answer, and shows no controls the study does not allow", async () => {
    const { fetchImpl } = server([
      { status: 200, body: item("a1", ["One"], 0) },
      { status: 404, body: { errors: { before: ["there is no earlier answer you can change"] } } },
    ]);
    task = new HighlightTask(root, TASK, { fetchImpl });
    await task.start();
    button("Previous item").click();
    await settle();
    expect($(".ht-status").textContent).toBe("There is no earlier answer you can change.");
    expect(root.dataset.state).toBe("item");
    task.destroy();

    document.body.replaceChildren(root);
    const plain = server([{ status: 200, body: item("b1", ["Two"], 0) }]);
    task = new HighlightTask(root, { ...TASK, protocol: undefined }, { fetchImpl: plain.fetchImpl });
    await task.start();
    expect(document.querySelector(".ht-skip")).toBeNull();
    expect(document.querySelector(".ht-back")).toBeNull();
  });
});
