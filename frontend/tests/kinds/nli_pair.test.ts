import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { NliPairTask, type TaskConfig, describeRule, ruleOf, ruleProblem } from "../../src/kinds/nli_pair";
import { $, fakeClock, key, pointer, server, settle } from "../helpers";

const RULES = {
  entailment: { premise: "required", hypothesis: "allowed" },
  neutral: { premise: "forbidden", hypothesis: "required" },
  contradiction: { premise: "required", hypothesis: "required" },
} as const;

const TASK: TaskConfig = {
  study: "s-1",
  kind: "nli_pair",
  next_url: "/api/work/s-1/next/",
  submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
  done_url: "/w/s-1/done/",
  config: { labels: ["entailment", "neutral", "contradiction"], rules: RULES },
};

function item(uid: string, premise: string[], hypothesis: string[], done: number, total = 2) {
  return {
    assignment: uid,
    item: {
      kind: "nli_pair",
      payload: { premise: { words: premise, breaks: [] }, hypothesis: { words: hypothesis } },
    },
    progress: { done, total },
    config: TASK.config,
  };
}

function words(side: "premise" | "hypothesis"): HTMLElement[] {
  return Array.from(document.querySelectorAll<HTMLElement>(`.nli-${side} .hl-word`));
}

function click(el: HTMLElement, pointerType = "mouse"): void {
  pointer(el, "pointerdown", { pointerType });
  pointer(el, "pointerup", { pointerType });
}

let root: HTMLElement;
const started: NliPairTask[] = [];

function startTask(options: ConstructorParameters<typeof NliPairTask>[2]): NliPairTask {
  const task = new NliPairTask(root, TASK, options);
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

describe("rules", () => {
  it("fills a missing rule with allowed and says each rule in words", () => {
    expect(ruleOf(TASK.config, "other")).toEqual({ premise: "allowed", hypothesis: "allowed" });
    expect(describeRule("neutral", ruleOf(TASK.config, "neutral"))).toBe(
      "neutral: highlight no word of the premise, and at least one word of the hypothesis.",
    );
    const contradiction = ruleOf(TASK.config, "contradiction");
    expect(ruleProblem("contradiction", contradiction, { premise: 1, hypothesis: 0 })?.field).toBe(
      "answer.hypothesis_map",
    );
    expect(ruleProblem("contradiction", contradiction, { premise: 1, hypothesis: 2 })).toBeNull();
  });
});

describe("a session of two pairs", () => {
  it("shows both texts labelled, keeps read-first, answers with one map per text", async () => {
    const clock = fakeClock();
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", ["A", "man", "rides", "a", "bike"], ["A", "person", "cycles"], 0) },
      { status: 201, body: { response: 1 } },
      { status: 200, body: item("a2", ["Two", "dogs", "sleep"], ["Dogs", "run"], 1) },
      { status: 201, body: { response: 2 } },
      {
        status: 200,
        body: { done: true, progress: { done: 2, total: 2 }, completion: { message: "Thanks!" } },
      },
    ]);
    const keys = ["key-1", "key-2"];
    const task = startTask({ fetchImpl, now: clock.now, keyFactory: () => keys.shift()! });
    await task.start();

    expect($(".ht-progress-text").textContent).toBe("Your pair 1 of 2");
    expect($(".nli-premise .nli-text-title").textContent).toBe("Premise");
    expect($(".nli-hypothesis .nli-text-title").textContent).toBe("Hypothesis");
    expect(words("premise").map((w) => w.textContent)).toEqual(["A", "man", "rides", "a", "bike"]);
    expect(words("hypothesis").map((w) => w.textContent)).toEqual(["A", "person", "cycles"]);

    // Read-first: nothing can be highlighted in either text before a label.
    click(words("premise")[2]);
    click(words("hypothesis")[2], "touch");
    expect(document.querySelectorAll(".hl-word.is-on")).toHaveLength(0);
    expect(words("hypothesis")[0].getAttribute("aria-disabled")).toBe("true");

    clock.advance(4_000);
    key(document.body, "1"); // entailment
    expect($(".ht-label[data-value='entailment']").getAttribute("aria-pressed")).toBe("true");
    expect($(".nli-rule").textContent).toContain("at least one word of the premise");
    // Entailment needs a premise word: submit shows why and sends nothing.
    $(".ht-submit").click();
    await settle();
    expect(calls).toHaveLength(1);
    expect($(".ht-errors").textContent).toBe('For "entailment", highlight at least one word in the premise.');

    clock.advance(1_000);
    click(words("premise")[2]);
    click(words("premise")[4]);
    click(words("hypothesis")[2], "touch");
    // Ctrl+Z undoes in the text last worked on (the hypothesis), not in both.
    key(document.body, "z", { ctrlKey: true });
    expect(task.widgets.hypothesis.map()).toEqual([0, 0, 0]);
    expect(task.widgets.premise.map()).toEqual([0, 0, 1, 0, 1]);
    words("hypothesis")[2].focus();
    key(words("hypothesis")[2], " ");
    clock.advance(2_000);
    $(".ht-submit").click();
    await settle();

    expect(calls[1].url).toBe("/api/work/assignments/a1/submit/");
    expect(calls[1].body).toMatchObject({
      submission_key: "key-1",
      answer: { label: "entailment", premise_map: [0, 0, 1, 0, 1], hypothesis_map: [0, 0, 1] },
      timings: { read_ms: 4_000, answer_ms: 3_000, label_at_ms: 4_000, first_highlight_at_ms: 5_000 },
      signals: { blocked_attempts: 2, undos: 1, actions: { mouse: 2, touch: 1, pen: 0, keyboard: 1 } },
    });

    // Neutral forbids the premise: the page dims it and refuses a premise highlight.
    expect($(".ht-progress-text").textContent).toBe("Your pair 2 of 2");
    key(document.body, "2");
    expect($(".nli-premise").classList.contains("is-forbidden")).toBe(true);
    click(words("premise")[1]);
    click(words("hypothesis")[1]);
    $(".ht-submit").click();
    await settle();
    expect(calls).toHaveLength(3);
    expect($(".ht-errors").textContent).toContain("allows no highlighted word in the premise");
    expect($(".ht-errors").previousElementSibling).toBe($(".nli-premise .hl-text"));
    click(words("premise")[1]);
    $(".ht-submit").click();
    await settle();
    expect(calls[3].body).toMatchObject({
      submission_key: "key-2",
      answer: { label: "neutral", premise_map: [0, 0, 0], hypothesis_map: [0, 1] },
    });
    expect(root.dataset.state).toBe("done");
  });
});

describe("the keyboard model", () => {
  it("Escape undoes label choices and highlights in the order made, across both texts", async () => {
    const { fetchImpl } = server([
      { status: 200, body: item("a1", ["A", "man", "rides"], ["He", "moves"], 0) },
    ]);
    const task = startTask({ fetchImpl });
    await task.start();
    key(document.body, "1"); // entailment
    click(words("hypothesis")[1]);
    click(words("premise")[0]);
    click(words("hypothesis")[0]);
    key(document.body, "Escape");
    expect(task.answer()).toEqual({ label: "entailment", premise_map: [1, 0, 0], hypothesis_map: [0, 1] });
    key(document.body, "Escape");
    expect(task.answer()).toEqual({ label: "entailment", premise_map: [0, 0, 0], hypothesis_map: [0, 1] });
    // A change of label with words highlighted asks first; "Clear them" clears both texts.
    key(document.body, "3");
    const dialog = document.querySelector<HTMLDialogElement>("dialog.ht-keep")!;
    expect(dialog.textContent).toContain('Keep your highlights for "contradiction"?');
    (dialog.querySelector(".ht-keep-no") as HTMLButtonElement).click();
    await settle();
    expect(task.answer()).toEqual({ label: "contradiction", premise_map: [0, 0, 0], hypothesis_map: [0, 0] });
    key(document.body, "Escape"); // the clearing
    key(document.body, "Escape"); // the label
    expect(task.answer()).toEqual({ label: "entailment", premise_map: [0, 0, 0], hypothesis_map: [0, 1] });
  });
});
