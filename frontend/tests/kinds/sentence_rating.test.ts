import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { RatingTask, renderReview, stars, type RatingConfig } from "../../src/kinds/sentence_rating";
import type { TaskConfig } from "../../src/task_loop";
import { fakeClock, key, server, settle } from "../helpers";

const TASK: TaskConfig<RatingConfig> = {
  study: "s-1",
  kind: "sentence_rating",
  next_url: "/api/work/s-1/next/",
  submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
  done_url: "/w/s-1/done/",
  csrf_token: "csrf-abc",
  config: {
    question: "How much does the highlighted sentence explain the given aspect rating?",
    labels: [
      { value: 1, text: "not at all" },
      { value: 2, text: "a little" },
      { value: 3, text: "moderately" },
      { value: 4, text: "rather well" },
      { value: 5, text: "very well" },
    ],
  },
};

const WORDS = ["Great", "<b>story</b>!", "The", "voice", "was", "flat."];

function item(uid: string, sentence: [number, number], done: number) {
  return {
    assignment: uid,
    expires_at: new Date(Date.now() + 600_000).toISOString(),
    item: {
      kind: "sentence_rating",
      payload: {
        words: WORDS,
        breaks: [],
        sentence,
        aspect: "performance",
        aspect_title: "Performance",
        aspect_description: "The narrator's voice.",
        rating: 2,
        rating_max: 5,
      },
    },
    progress: { done, total: 2 },
  };
}

describe("renderReview and stars", () => {
  it("wraps exactly the sentence's words in one mark, as text", () => {
    const { review, target } = renderReview(document, WORDS, [2, 6], [2]);
    expect(target.textContent).toBe("The voice was flat.");
    expect(review.querySelectorAll("mark").length).toBe(1);
    expect(review.querySelector("b")).toBeNull();
    expect(review.textContent).toContain("<b>story</b>!");
    expect(review.querySelector(".rt-break + mark")).toBe(target);
  });

  it("draws star ratings", () => {
    expect(stars(4)).toBe("★★★★☆");
    expect(stars(1, 3)).toBe("★☆☆");
  });
});

describe("RatingTask", () => {
  let root: HTMLElement;
  let task: RatingTask | null = null;

  beforeEach(() => {
    document.body.replaceChildren();
    root = document.createElement("div");
    root.id = "hatlab-app";
    document.body.append(root);
  });

  afterEach(() => task?.destroy());

  it("answers with keys 1–5 and Enter, then with a click, and finishes", async () => {
    const clock = fakeClock();
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a-1", [0, 2], 0) },
      { status: 201, body: { response: 1 } },
      { status: 200, body: item("a-2", [2, 6], 1) },
      { status: 201, body: { response: 2 } },
      {
        status: 200,
        body: { done: true, progress: { done: 2, total: 2 }, completion: { message: "Thanks" } },
      },
    ]);
    let n = 0;
    task = new RatingTask(root, TASK, { fetchImpl, now: clock.now, keyFactory: () => `key-${++n}` });
    await task.start();
    expect(root.dataset.state).toBe("item");
    expect(root.querySelector("mark")?.textContent).toBe("Great <b>story</b>!");
    expect(root.querySelector(".rt-aspect")?.textContent).toContain("★★☆☆☆");
    expect(root.querySelector(".rt-aspect")?.textContent).toContain("rated performance 2 of 5 stars");
    expect(root.querySelector(".ht-question")?.textContent).toBe(
      "How much does the highlighted sentence explain the given aspect rating?",
    );
    // The keys are in the one keyboard line (and on the buttons), not in the question.
    expect(root.querySelector(".ht-keys")?.textContent).toBe(
      "Keys: 1–5 choose an answer; Enter submits once the answer is complete; Escape undoes the last change.",
    );
    const submit = root.querySelector<HTMLButtonElement>(".ht-submit")!;
    expect(submit.disabled).toBe(true);
    key(document, "Enter"); // nothing chosen yet: nothing is sent
    expect(calls.length).toBe(1);

    clock.advance(1500);
    key(document, "4");
    expect(task.rating).toBe(4);
    expect(root.querySelector('[data-value="4"]')?.getAttribute("aria-pressed")).toBe("true");
    expect(submit.disabled).toBe(false);
    key(document, "9"); // no ninth level
    expect(task.rating).toBe(4);
    key(document, "2");
    key(document, "Escape"); // takes the 2 back
    expect(task.rating).toBe(4);
    expect(root.querySelector('[data-value="2"]')?.getAttribute("aria-pressed")).toBe("false");
    clock.advance(500);
    key(document, "Enter");
    await settle();
    expect(calls[1].url).toBe("/api/work/assignments/a-1/submit/");
    expect(calls[1].body).toMatchObject({
      submission_key: "key-1",
      answer: { rating: 4 },
      timings: { read_ms: 1500, answer_ms: 500 },
    });

    expect(root.querySelector("mark")?.textContent).toBe("The voice was flat.");
    expect(task.rating).toBeNull();
    root.querySelector<HTMLButtonElement>('[data-value="2"]')!.click();
    root.querySelector<HTMLButtonElement>('[data-value="1"]')!.click();
    submit.click();
    await settle();
    expect(calls[3].body).toMatchObject({
      submission_key: "key-2",
      answer: { rating: 1 },
      signals: { changes: 1 },
    });
    expect(root.dataset.state).toBe("done");
    expect(root.querySelector(".ht-done-message")?.textContent).toBe("Thanks");
  });

  it("shows a 400 in plain words and keeps the answer", async () => {
    const { fetchImpl } = server([
      { status: 200, body: item("a-1", [0, 2], 0) },
      { status: 400, body: { errors: { "answer.rating": ["must be a whole number from 1 to 5"] } } },
    ]);
    task = new RatingTask(root, TASK, { fetchImpl });
    await task.start();
    key(document, "3");
    await task.submit();
    expect(root.querySelector(".ht-errors")?.textContent).toBe("Choose an answer first.");
    expect(task.rating).toBe(3);
    expect(root.dataset.state).toBe("item");
  });
});
