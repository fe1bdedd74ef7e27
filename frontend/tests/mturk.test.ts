import { describe, expect, it } from "vitest";

import {
  ANSWER_COPY_FIELD,
  AnswerCopy,
  MAX_COPY_CHARS,
  PREVIEW_ASSIGNMENT_ID,
  externalSubmitUrl,
  isPreview,
  isSubmitForm,
  mturkParams,
  postCompletionForm,
} from "../src/mturk";
import { MemoryStorage } from "./helpers";

describe("MTurk parameters", () => {
  it("reads the four parameters MTurk adds and tells a preview apart", () => {
    const accepted = mturkParams(
      "?assignmentId=A1&hitId=H1&workerId=W1&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com",
    );
    expect(accepted).toEqual({
      assignmentId: "A1",
      hitId: "H1",
      workerId: "W1",
      turkSubmitTo: "https://workersandbox.mturk.com",
    });
    expect(isPreview(accepted)).toBe(false);
    expect(isPreview(mturkParams(`?assignmentId=${PREVIEW_ASSIGNMENT_ID}&hitId=H1`))).toBe(true);
    expect(mturkParams("?invite=abc")).toBeNull();
    expect(isPreview(null)).toBe(false);
  });

  it("builds the externalSubmit URL from turkSubmitTo", () => {
    expect(externalSubmitUrl("https://www.mturk.com/")).toBe("https://www.mturk.com/mturk/externalSubmit");
    expect(externalSubmitUrl("https://workersandbox.mturk.com")).toBe(
      "https://workersandbox.mturk.com/mturk/externalSubmit",
    );
  });
});

describe("the completion form", () => {
  it("accepts only http(s) externalSubmit forms", () => {
    expect(isSubmitForm({ action: "https://www.mturk.com/mturk/externalSubmit", fields: {} })).toBe(true);
    expect(isSubmitForm({ action: "javascript:alert(1)//mturk/externalSubmit", fields: {} })).toBe(false);
    expect(isSubmitForm({ action: "https://evil.example/collect", fields: {} })).toBe(false);
    expect(isSubmitForm({ action: "not a url", fields: {} })).toBe(false);
    expect(isSubmitForm(null)).toBe(false);
  });

  it("posts hidden fields set as text, with the copy of the answers", () => {
    const form = {
      action: "https://workersandbox.mturk.com/mturk/externalSubmit",
      fields: { assignmentId: "A1" },
    };
    const posted: HTMLFormElement[] = [];
    const element = postCompletionForm(document, form, { [ANSWER_COPY_FIELD]: '{"x":"<b>"}' }, (f) =>
      posted.push(f),
    );
    expect(element).not.toBeNull();
    expect(posted).toEqual([element]);
    expect(element!.method).toBe("post");
    expect(element!.action).toBe(form.action);
    const values = Object.fromEntries(
      [...element!.querySelectorAll("input")].map((input) => [input.name, input.value]),
    );
    expect(values).toEqual({ assignmentId: "A1", hatlab: '{"x":"<b>"}' });
    expect(element!.querySelector("b")).toBeNull();
    expect(postCompletionForm(document, { action: "https://evil.example/", fields: {} })).toBeNull();
  });
});

describe("the copy of the answers", () => {
  it("keeps each submission once, survives a reload, and serialises for the form", () => {
    const storage = new MemoryStorage();
    const copy = new AnswerCopy("s1", storage);
    copy.add({ assignment: "a1", submission_key: "k1", answer: { label: "positive", map: [1, 0] } });
    copy.add({ assignment: "a1", submission_key: "k1", answer: { label: "positive", map: [1, 0] } });
    copy.add({ assignment: "a2", submission_key: "k2", answer: { label: "negative", map: [0, 1] } });
    const reloaded = new AnswerCopy("s1", storage);
    expect(reloaded.entries().map((e) => e.submission_key)).toEqual(["k1", "k2"]);
    expect(JSON.parse(reloaded.toField("s1"))).toEqual({ study: "s1", submissions: reloaded.entries() });
    expect(new AnswerCopy("s2", storage).entries()).toEqual([]);
    reloaded.clear();
    expect(new AnswerCopy("s1", storage).entries()).toEqual([]);
  });

  it("stays under MTurk's answer size, dropping signals first, then the oldest answers", () => {
    const copy = new AnswerCopy("s1", null);
    const big = "x".repeat(5000);
    for (let i = 0; i < 20; i += 1) {
      copy.add({
        assignment: `a${i}`,
        submission_key: `k${i}`,
        answer: { label: "positive" },
        signals: { note: big },
      });
    }
    const field = copy.toField("s1");
    expect(field.length).toBeLessThanOrEqual(MAX_COPY_CHARS);
    const parsed = JSON.parse(field);
    expect(parsed.submissions).toHaveLength(20);
    expect(parsed.submissions[0].signals).toBeUndefined();
    for (let i = 20; i < 1500; i += 1) {
      copy.add({
        assignment: `a${i}`,
        submission_key: `k${i}`,
        answer: { label: "positive", map: [1, 0, 1] },
      });
    }
    const truncated = JSON.parse(copy.toField("s1"));
    expect(truncated.truncated).toBe(true);
    expect(truncated.submissions.at(-1).submission_key).toBe("k1499");
    expect(JSON.stringify(truncated).length).toBeLessThanOrEqual(MAX_COPY_CHARS);
  });

  it("works without storage", () => {
    const failing = new MemoryStorage();
    failing.setItem = () => {
      throw new Error("QuotaExceededError");
    };
    const copy = new AnswerCopy("s1", failing);
    copy.add({ assignment: "a1", submission_key: "k1", answer: {} });
    expect(copy.entries()).toHaveLength(1);
  });
});
