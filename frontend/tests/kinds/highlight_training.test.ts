import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { HighlightTask, type TaskConfig } from "../../src/kinds/highlight";
import { $, pointer, server, settle } from "../helpers";

const TASK: TaskConfig = {
  study: "s-1",
  kind: "highlight",
  mode: "training",
  next_url: "/api/work/s-1/training/next/",
  submit_url_template: "/api/work/s-1/training/ASSIGNMENT/answer/",
  done_url: "/w/s-1/done/",
  csrf_token: "csrf-abc",
  config: { mode: "read_first", labels: ["positive", "negative"], time_limit_s: 600 },
  protocol: null,
};

function example(id: string, words: string[], done: number, attempt = 1) {
  return {
    assignment: id,
    item: { kind: "highlight", payload: { words, breaks: [] } },
    progress: { done, total: 2 },
    config: TASK.config,
    training: { attempt, tries: 2 },
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
let task: HighlightTask | null = null;

beforeEach(() => {
  document.body.replaceChildren();
  root = document.createElement("div");
  root.id = "hatlab-app";
  document.body.append(root);
});

afterEach(() => task?.destroy());

describe("the training phase", () => {
  it("shows the expected answer after each example, then goes back to the study's page", async () => {
    const { fetchImpl, calls } = server([
      { status: 200, body: example("11", ["Great", "pizza"], 0) },
      {
        status: 201,
        body: {
          response: 5,
          training: {
            passed: false,
            expected: "label “positive”; words 1 “Great”",
            expected_answer: { label: "positive", map: [1, 0] },
            explanation: "“Great” praises the food.",
          },
        },
      },
      { status: 200, body: example("12", ["Cold", "soup"], 1) },
      {
        status: 201,
        body: {
          response: 6,
          training: {
            passed: true,
            expected: "label “negative”; words 1 “Cold”",
            expected_answer: { label: "negative", map: [1, 0] },
            explanation: "",
          },
        },
      },
      {
        status: 200,
        body: {
          done: true,
          progress: { done: 2, total: 2 },
          completion: { finished: true, state: "done", redirect_url: "/w/s-1/" },
        },
      },
    ]);
    const went: string[] = [];
    task = new HighlightTask(root, TASK, { fetchImpl, navigate: (url) => went.push(url) });
    await task.start();
    expect($(".ht-progress-text").textContent).toBe("Training example 1 of 2");
    expect($(".ht-submit").textContent).toBe("Check my answer");
    expect(document.querySelector(".ht-skip")).toBeNull();

    $(".ht-label[data-value='negative']").click();
    click(words()[1]);
    $(".ht-submit").click();
    await settle();
    expect(calls[1].url).toBe("/api/work/s-1/training/11/answer/");
    expect(calls[1].body).toMatchObject({ answer: { label: "negative", map: [0, 1] } });
    expect(root.dataset.state).toBe("feedback");
    expect($(".ht-feedback").dataset.passed).toBe("false");
    expect($(".ht-feedback-expected").textContent).toBe("Expected: label “positive”; words 1 “Great”");
    expect($(".ht-feedback-why").textContent).toBe("“Great” praises the food.");
    expect(words().map((w) => w.classList.contains("hl-expected"))).toEqual([true, false]);
    expect(($(".ht-submit") as HTMLButtonElement).disabled).toBe(true); // no second answer

    $(".ht-feedback-next").click();
    await settle();
    expect($(".ht-progress-text").textContent).toBe("Training example 2 of 2");
    expect(document.querySelector(".ht-feedback")).toBeNull();
    $(".ht-label[data-value='negative']").click();
    click(words()[0]);
    $(".ht-submit").click();
    await settle();
    expect($(".ht-feedback").dataset.passed).toBe("true");
    expect(document.querySelector(".ht-feedback-why")).toBeNull(); // no explanation given
    $(".ht-feedback-next").click();
    await settle();
    expect(went).toEqual(["/w/s-1/"]);
    expect(root.dataset.state).not.toBe("done"); // no "you are done" page on the way
  });

  it("says which attempt it is when the examples start again", async () => {
    const { fetchImpl } = server([{ status: 200, body: example("11", ["Great"], 0, 2) }]);
    task = new HighlightTask(root, TASK, { fetchImpl });
    await task.start();
    expect($(".ht-status").textContent).toBe("Not passed yet: attempt 2 of 2. Answer the examples again.");
  });
});
