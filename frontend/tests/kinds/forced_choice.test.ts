import { afterEach, beforeEach, describe, expect, it } from "vitest";

import {
  answerChoices,
  ChoiceTask,
  choiceText,
  formatProbability,
  markedWords,
  NO_PREFERENCE,
  orList,
  readTaskConfig,
  renderWords,
  type Choice,
  type Payload,
  type TaskConfig,
} from "../../src/kinds/forced_choice";
import { submitUrl } from "../../src/task_loop";
import { $, fakeClock, key, server, settle } from "../helpers";

const TWO_SIDED: Choice[] = [
  { choice: "A", confident: true },
  { choice: "A", confident: false },
  { choice: NO_PREFERENCE, confident: null },
  { choice: "B", confident: false },
  { choice: "B", confident: true },
];

function task(kind: string, choices: Choice[]): TaskConfig {
  return {
    study: "s-1",
    kind,
    next_url: "/api/work/s-1/next/",
    submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
    done_url: "/w/s-1/done/",
    csrf_token: "csrf-abc",
    config: { labels: ["negative", "positive"], choices, no_preference: choices.length % 2 === 1 },
  };
}

const REVEAL = task("reveal_model", TWO_SIDED);
const JUSTIFY = task("justify", [
  { choice: "negative", confident: true },
  { choice: "negative", confident: false },
  { choice: NO_PREFERENCE, confident: null },
  { choice: "positive", confident: false },
  { choice: "positive", confident: true },
]);
const INVESTIGATE = task("investigate", [
  { choice: "negative", confident: true },
  { choice: "negative", confident: false },
  { choice: "positive", confident: false },
  { choice: "positive", confident: true },
]);

function item(uid: string, kind: string, payload: Payload, done = 0, total = 2) {
  return {
    assignment: uid,
    expires_at: new Date(Date.now() + 600_000).toISOString(),
    item: { kind, payload },
    progress: { done, total },
  };
}

function $$(selector: string): HTMLElement[] {
  return Array.from(document.querySelectorAll<HTMLElement>(selector));
}

let root: HTMLElement;
const started: ChoiceTask[] = [];

function startTask(config: TaskConfig, options: ConstructorParameters<typeof ChoiceTask>[2]): ChoiceTask {
  const t = new ChoiceTask(root, config, options);
  started.push(t);
  return t;
}

beforeEach(() => {
  document.body.replaceChildren();
  root = document.createElement("div");
  root.id = "hatlab-app";
  document.body.append(root);
});

afterEach(() => {
  for (const t of started.splice(0)) t.destroy();
});

describe("helpers", () => {
  it("reads the configuration and refuses other kinds", () => {
    const script = document.createElement("script");
    script.id = "hatlab-task";
    script.type = "application/json";
    script.textContent = JSON.stringify(JUSTIFY);
    document.body.append(script);
    expect(readTaskConfig(document)).toEqual(JUSTIFY);
    script.textContent = JSON.stringify({ ...JUSTIFY, kind: "highlight" });
    expect(() => readTaskConfig(document)).toThrow(/highlight/);
    script.textContent = JSON.stringify({ ...JUSTIFY, submit_url_template: "" });
    expect(() => readTaskConfig(document)).toThrow(/submit_url_template/);
    expect(submitUrl(JUSTIFY.submit_url_template, "a b")).toBe("/api/work/assignments/a%20b/submit/");
  });

  it("names the answers and builds them from the options when the config has none", () => {
    expect(choiceText("reveal_model", { choice: "A", confident: true })).toEqual({
      main: "Model A",
      sub: "confident",
    });
    expect(choiceText("justify", { choice: "positive", confident: false })).toEqual({
      main: "positive",
      sub: "not confident",
    });
    expect(choiceText("justify", { choice: NO_PREFERENCE, confident: null }).main).toBe("No preference");
    expect(answerChoices({ options: ["x", "y"], no_preference: false })).toEqual([
      { choice: "x", confident: true },
      { choice: "x", confident: false },
      { choice: "y", confident: true },
      { choice: "y", confident: false },
    ]);
    expect(answerChoices({ options: ["x"] }).at(-1)).toEqual({ choice: NO_PREFERENCE, confident: null });
    expect(formatProbability(0.6234)).toBe("0.62 (62 %)");
    expect(formatProbability(Number.NaN)).toBe("unknown");
    expect(orList(["CS"])).toBe("CS");
    expect(orList(["CS", "MA", "PH"])).toBe("CS, MA or PH");
  });

  it("marks word ranges and writes runs of marked words as one <mark>, as text", () => {
    expect(
      markedWords(6, [
        [1, 3],
        [5, 9],
        [-2, 0],
      ]),
    ).toEqual([false, true, true, false, false, true]);
    const words = ["<b>Great</b>", "pizza", "&", "fresh", "salad", "!"];
    const p = renderWords(document, words, [false, true, true, false, true, true], [4]);
    expect(p.querySelector("b")).toBeNull();
    expect(Array.from(p.querySelectorAll("mark"), (m) => m.textContent)).toEqual(["pizza &", "salad !"]);
    expect(p.querySelectorAll("br")).toHaveLength(1);
    expect(p.textContent).toBe("<b>Great</b> pizza & freshsalad !");
  });
});

describe("reveal_model", () => {
  it("shows both models' evidence side by side and answers with the keyboard", async () => {
    const clock = fakeClock();
    const { fetchImpl, calls } = server([
      {
        status: 200,
        body: item("a1", "reveal_model", {
          words: ["The", "soup", "was", "cold", "and", "bland"],
          breaks: [],
          predicted: "negative",
          evidence: { A: [[3, 4]], B: [[0, 2]] },
        }),
      },
      { status: 201, body: { response: 1 } },
      {
        status: 200,
        body: {
          done: true,
          progress: { done: 2, total: 2 },
          completion: { message: "Thanks!", code: "C0DE" },
        },
      },
    ]);
    const t = startTask(REVEAL, { fetchImpl, now: clock.now, keyFactory: () => "key-1" });
    await t.start();
    expect(root.dataset.state).toBe("item");
    expect($(".ht-progress-text").textContent).toBe("Your question 1 of 2");
    expect($(".fc-predicted").textContent).toBe("Both models classify this text as negative.");
    const marks = (side: string) =>
      Array.from($(`.fc-side[data-side='${side}']`).querySelectorAll("mark"), (m) => m.textContent);
    expect(marks("A")).toEqual(["cold"]);
    expect(marks("B")).toEqual(["The soup"]);
    const buttons = $$(".fc-choice");
    // Each button's name is its visible text (the key badge is hidden from the name): no aria-label
    // that says something else (axe's label-content-name-mismatch).
    expect(buttons.map((b) => b.getAttribute("aria-label"))).toEqual([null, null, null, null, null]);
    const visible = (b: HTMLElement) =>
      Array.from(b.childNodes)
        .filter((n) => !(n instanceof HTMLElement && n.getAttribute("aria-hidden") === "true"))
        .map((n) => n.textContent)
        .join("")
        .trim();
    expect(buttons.map(visible)).toEqual([
      "Model A confident",
      "Model A not confident",
      "No preference",
      "Model B not confident",
      "Model B confident",
    ]);
    const submit = $(".ht-submit") as HTMLButtonElement;
    expect(submit.disabled).toBe(true);
    key(document.body, "Enter"); // nothing chosen yet: nothing is sent
    expect(calls).toHaveLength(1);

    clock.advance(4_000);
    key(document.body, "5");
    expect(buttons[4].getAttribute("aria-pressed")).toBe("true");
    clock.advance(500);
    key(document.body, "4");
    expect(buttons[3].getAttribute("aria-pressed")).toBe("true");
    expect(buttons[4].getAttribute("aria-pressed")).toBe("false");
    // Escape takes the last choice back (to 5), a second Escape to none; then 4 again.
    key(document.body, "Escape");
    expect(t.answer()).toEqual({ choice: "B", confident: true });
    key(document.body, "Escape");
    expect(t.answer()).toBeNull();
    key(document.body, "Escape"); // nothing left to undo
    expect(t.answer()).toBeNull();
    key(document.body, "4");
    clock.advance(1_500);
    key(document.body, "Enter");
    await settle();
    expect(calls[1].url).toBe("/api/work/assignments/a1/submit/");
    expect(calls[1].body).toEqual({
      submission_key: "key-1",
      answer: { choice: "B", confident: false },
      timings: { read_ms: 4_000, answer_ms: 6_000 },
      // script-made key events (jsdom's) are not input: the page counts none of them
      signals: { choice_changes: 1, interaction: expect.objectContaining({ keys: 0, first_input_ms: null }) },
      next: true,
    });
    expect(root.dataset.state).toBe("done");
    expect($(".ht-code").textContent).toBe("C0DE");
  });
});

describe("justify", () => {
  it("shows only the evidence texts and sends no preference without confidence", async () => {
    const { fetchImpl, calls } = server([
      { status: 200, body: item("a1", "justify", { evidence: ["cold soup", "<i>rude</i>", "never again"] }) },
      { status: 201, body: { response: 1 } },
      { status: 200, body: { done: true, progress: { done: 2, total: 2 } } },
    ]);
    const t = startTask(JUSTIFY, { fetchImpl, keyFactory: () => "key-9" });
    await t.start();
    expect($$(".fc-snippet").map((s) => s.textContent)).toEqual(["cold soup", "<i>rude</i>", "never again"]);
    expect(document.querySelector("i")).toBeNull();
    expect(document.querySelector(".fc-text")).toBeNull(); // not the document
    expect($(".fc-prompt").textContent).toContain("Which class is the document most likely to be?");
    $$(".fc-choice")[2].click();
    expect(t.answer()).toEqual({ choice: NO_PREFERENCE, confident: null });
    // Once an answer is chosen, Enter submits it from anywhere, even on another answer's button
    // (after a click the focus stays on the clicked button: Enter must not press it again).
    const focused = $$(".fc-choice")[0];
    focused.focus();
    key(focused, "Enter");
    await settle();
    expect(calls).toHaveLength(3);
    expect(calls[1].body).toMatchObject({ answer: { choice: NO_PREFERENCE, confident: null } });
    expect(($(".ht-done-link") as HTMLAnchorElement).getAttribute("href")).toBe("/w/s-1/done/");
  });
});

describe("investigate", () => {
  it("shows the prediction, its probability, evidence for it and for the other class", async () => {
    const { fetchImpl, calls } = server([
      {
        status: 200,
        body: item("a1", "investigate", {
          predicted: "positive",
          probability: 0.6234,
          evidence: ["friendly staff"],
          counter_evidence: ["cold", "bland soup"],
          counter_labels: ["negative"],
        }),
      },
      new Error("offline"),
      { status: 201, body: { response: 7 } },
      { status: 200, body: { done: true, progress: { done: 2, total: 2 } } },
    ]);
    const keys = ["key-a", "key-b"];
    const t = startTask(INVESTIGATE, { fetchImpl, retryDelayMs: 0, keyFactory: () => keys.shift()! });
    await t.start();
    expect($(".fc-predicted").textContent).toBe("The model predicts positive with probability 0.62 (62 %).");
    const groups = $$(".fc-group");
    expect(groups.map((g) => g.querySelector("h3")!.textContent)).toEqual([
      "Evidence for positive",
      "Evidence for negative",
    ]);
    expect(Array.from(groups[1].querySelectorAll("li"), (li) => li.textContent)).toEqual([
      "cold",
      "bland soup",
    ]);
    expect($$(".fc-choice").map((b) => b.dataset.choice)).not.toContain(NO_PREFERENCE);
    key(document.body, "1");
    ($(".ht-submit") as HTMLButtonElement).click();
    await settle();
    // The network failed once; the retry carried the same submission key.
    expect(calls.slice(1, 3).map((c) => c.body.submission_key)).toEqual(["key-a", "key-a"]);
    expect(calls[2].body).toMatchObject({ answer: { choice: "negative", confident: true } });
    expect(root.dataset.state).toBe("done");
  });

  it("offers another question when the assignment went to someone else", async () => {
    const { fetchImpl } = server([
      {
        status: 200,
        body: item("a1", "investigate", {
          predicted: "negative",
          probability: 0.55,
          evidence: [],
          counter_evidence: ["tasty"],
          counter_labels: ["positive"],
        }),
      },
      { status: 409, body: { errors: { assignment: ["this assignment was already submitted"] } } },
    ]);
    const t = startTask(INVESTIGATE, { fetchImpl });
    await t.start();
    expect($$(".fc-group")[0].querySelector(".fc-none")!.textContent).toBe("none");
    key(document.body, "3");
    ($(".ht-submit") as HTMLButtonElement).click();
    await settle();
    expect(root.dataset.state).toBe("error");
    expect($(".ht-errors").textContent).toMatch(/^This item is no longer open for you/);
    expect($(".ht-retry").textContent).toBe("Get another question");
  });
});
