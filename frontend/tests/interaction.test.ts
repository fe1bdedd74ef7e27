import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { InteractionCounter, SCROLL_GAP_MS } from "../src/interaction";
import { type NextItem, TaskFlow, type TaskConfig } from "../src/task_loop";
import { fakeClock, key, pointer, server, settle } from "./helpers";

const cleanup: Array<{ destroy(): void }> = [];

function counter(clock = fakeClock(), countUntrusted = true): InteractionCounter {
  const made = new InteractionCounter(document, { now: clock.now, countUntrusted });
  cleanup.push(made);
  return made;
}

function fire(target: EventTarget, type: string): void {
  target.dispatchEvent(new Event(type, { bubbles: true }));
}

beforeEach(() => document.body.replaceChildren());
afterEach(() => {
  for (const made of cleanup.splice(0)) made.destroy();
});

describe("the input-event counter", () => {
  it("counts presses, moves, keys, touches, pastes, focus and blur, and the time to the first input", () => {
    const clock = fakeClock();
    const counts = counter(clock);
    const box = document.createElement("div");
    document.body.append(box);
    pointer(box, "pointermove");
    pointer(box, "pointermove");
    fire(window, "blur");
    fire(window, "focus");
    clock.advance(1_250);
    pointer(box, "pointerdown");
    clock.advance(300);
    key(box, "a");
    key(document, "b");
    fire(box, "touchstart");
    fire(box, "paste");
    expect(counts.counts()).toEqual({
      pointer: 1,
      moves: 2,
      keys: 2,
      touches: 1,
      scrolls: 0,
      focus: 1,
      blur: 1,
      pastes: 1,
      first_input_ms: 1_250, // moves and focus are not input: the press at 1.25 s is the first
    });
  });

  it("counts a run of scroll events as one gesture, of any box in the page", () => {
    const clock = fakeClock();
    const counts = counter(clock);
    const box = document.createElement("div");
    document.body.append(box);
    for (let i = 0; i < 5; i++) {
      fire(box, "scroll"); // scroll does not bubble: the counter listens in the capture phase
      clock.advance(SCROLL_GAP_MS - 1);
    }
    clock.advance(SCROLL_GAP_MS);
    fire(document, "scroll");
    expect(counts.counts().scrolls).toBe(2);
    expect(counts.counts().first_input_ms).toBeNull();
  });

  it("starts again at zero for each item", () => {
    const clock = fakeClock();
    const counts = counter(clock);
    key(document.body, "x");
    clock.advance(5_000);
    counts.reset();
    expect(counts.counts()).toMatchObject({ keys: 0, first_input_ms: null });
    clock.advance(400);
    key(document.body, "y");
    expect(counts.counts()).toMatchObject({ keys: 1, first_input_ms: 400 });
  });

  it("ignores events a script made (element.click, dispatchEvent) unless told otherwise", () => {
    const counts = counter(fakeClock(), false);
    const button = document.createElement("button");
    document.body.append(button);
    button.click();
    pointer(button, "pointerdown");
    key(button, "Enter");
    fire(button, "touchstart");
    expect(counts.counts()).toMatchObject({ pointer: 0, keys: 0, touches: 0, first_input_ms: null });
  });

  it("stops counting once destroyed", () => {
    const counts = counter();
    counts.destroy();
    key(document.body, "x");
    expect(counts.counts().keys).toBe(0);
  });
});

/** A kind whose answer is whatever key was pressed last. */
class KeyTask extends TaskFlow<{ word: string }> {
  last: string | null = null;
  answer(): { key: string } | null {
    return this.last === null ? null : { key: this.last };
  }
  protected timings(): Record<string, number | null> {
    return {};
  }
  protected signals(): Record<string, unknown> {
    return { own: 1 };
  }
  protected render(_next: NextItem<{ word: string }>): void {
    this.last = null;
  }
  protected onItemKey(event: KeyboardEvent): void {
    this.last = event.key;
    this.syncControls();
  }
}

const TASK: TaskConfig = {
  study: "s-1",
  kind: "keys",
  next_url: "/api/work/s-1/next/",
  submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
  config: {},
};

function item(uid: string, done: number, token: string | null = `token-${uid}`) {
  return {
    assignment: uid,
    page_token: token,
    item: { kind: "keys", payload: { word: "w" } },
    progress: { done, total: 2 },
  };
}

describe("the item loop's evidence", () => {
  it("sends each item's own input counts and its own page token with the kind's signals", async () => {
    const clock = fakeClock();
    const root = document.createElement("div");
    document.body.append(root);
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", 0) },
      { status: 201, body: { response: 1, next: item("a2", 1) } },
      { status: 201, body: { response: 2, next: { done: true } } },
    ]);
    const flow = new KeyTask(root, TASK, {
      fetchImpl,
      now: clock.now,
      search: "",
      storage: null,
      interaction: { countUntrusted: true },
    });
    cleanup.push(flow);
    await flow.start();
    clock.advance(900);
    key(document.body, "a");
    key(document.body, "b");
    await flow.submit();
    await settle();
    clock.advance(2_000);
    key(document.body, "c");
    await flow.submit();
    await settle();
    const first = calls[1].body.signals as Record<string, unknown>;
    const second = calls[2].body.signals as Record<string, unknown>;
    expect(first).toMatchObject({ own: 1, page_token: "token-a1" });
    expect(second).toMatchObject({ page_token: "token-a2" });
    expect(first.interaction).toMatchObject({ keys: 2, pointer: 0, first_input_ms: 900 });
    expect(second.interaction).toMatchObject({ keys: 1, first_input_ms: 2_000 });
  });

  it("sends no page token when the item came without one", async () => {
    const root = document.createElement("div");
    document.body.append(root);
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", 0, null) },
      { status: 201, body: { response: 1, next: { done: true } } },
    ]);
    const flow = new KeyTask(root, TASK, { fetchImpl, search: "", storage: null });
    cleanup.push(flow);
    await flow.start();
    key(document.body, "a");
    await flow.submit();
    await settle();
    expect(calls[1].body.signals).not.toHaveProperty("page_token");
    expect(calls[1].body.signals).toHaveProperty("interaction");
  });
});
