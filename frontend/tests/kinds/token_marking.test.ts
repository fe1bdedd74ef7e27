import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { MarkingTask, type MarkingConfig } from "../../src/kinds/token_marking";
import type { TaskConfig } from "../../src/task_loop";
import { fakeClock, pointer, server, settle } from "../helpers";

const TASK: TaskConfig<MarkingConfig> = {
  study: "s-2",
  kind: "token_marking",
  next_url: "/api/work/s-2/next/",
  submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
  csrf_token: "csrf",
  config: { require_mark: true },
};

describe("MarkingTask", () => {
  let root: HTMLElement;
  let task: MarkingTask | null = null;

  beforeEach(() => {
    document.body.replaceChildren();
    root = document.createElement("div");
    root.id = "hatlab-app";
    document.body.append(root);
  });

  afterEach(() => task?.destroy());

  it("shows label and explanation as text and submits the marked words", async () => {
    const clock = fakeClock();
    const { fetchImpl, calls } = server([
      {
        status: 200,
        body: {
          assignment: "a-9",
          item: {
            kind: "token_marking",
            payload: {
              words: ["A", "man", "plays", "guitar"],
              breaks: [],
              label: "entailment",
              explanation: "<img src=x> a man plays",
            },
          },
          progress: { done: 0, total: 1 },
        },
      },
      { status: 201, body: { response: 5 } },
      { status: 200, body: { done: true, progress: { done: 2, total: 2 } } },
    ]);
    task = new MarkingTask(root, TASK, { fetchImpl, now: clock.now, keyFactory: () => "k-1" });
    await task.start();
    expect(root.querySelector(".tm-label-value")?.textContent).toBe("entailment");
    expect(root.querySelector(".tm-explanation")?.textContent).toBe("<img src=x> a man plays");
    expect(root.querySelector("img")).toBeNull();
    const submit = root.querySelector<HTMLButtonElement>(".ht-submit")!;
    expect(submit.disabled).toBe(true);
    expect(task.answer()).toBeNull();
    await task.submit(); // nothing marked: an error, nothing sent
    expect(calls.length).toBe(1);
    expect(root.querySelector(".ht-errors")?.textContent).toBe("Mark at least one word of the text.");

    const words = root.querySelectorAll(".hl-word");
    clock.advance(800);
    pointer(words[1], "pointerdown", { pointerType: "touch" });
    pointer(words[1], "pointerup", { pointerType: "touch" });
    pointer(words[2], "pointerdown");
    pointer(words[2], "pointerup");
    expect(submit.disabled).toBe(false);
    clock.advance(400);
    submit.click();
    await settle();
    expect(calls[1].body).toMatchObject({
      submission_key: "k-1",
      answer: { map: [0, 1, 1, 0] },
      timings: { read_ms: 800, answer_ms: 400, first_highlight_at_ms: 800 },
    });
    expect((calls[1].body.signals as { actions: Record<string, number> }).actions.touch).toBe(1);
    expect(root.dataset.state).toBe("done");
  });
});
