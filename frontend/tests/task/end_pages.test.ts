import { beforeEach, describe, expect, it } from "vitest";

import type { CompletionForm } from "../../src/mturk";
import { type EndPageOptions, completionEnd, renderEndPage } from "../../src/task/end_pages";
import { END_PAGES } from "../../src/worker_messages";

const FORM: CompletionForm = {
  action: "https://workersandbox.mturk.com/mturk/externalSubmit",
  fields: { assignmentId: "A1" },
};

let box: HTMLElement;

function options(overrides: Partial<EndPageOptions> = {}) {
  const posted: CompletionForm[] = [];
  const submitted: HTMLFormElement[] = [];
  const made = document.createElement("form");
  const opts: EndPageOptions = {
    gold: false,
    doneUrl: "/w/s/done/",
    postForm: (form) => {
      posted.push(form);
      return made;
    },
    submitForm: (form) => void submitted.push(form),
    ...overrides,
  };
  return { opts, posted, submitted, made };
}

beforeEach(() => {
  document.body.replaceChildren();
  box = document.createElement("section");
  box.hidden = true;
  document.body.append(box);
});

describe("completionEnd", () => {
  it("reads the end from the completion's state, else whether the share is done", () => {
    expect(completionEnd({})).toBe("done");
    expect(completionEnd({ finished: true })).toBe("done");
    expect(completionEnd({ finished: false })).toBe("full");
    expect(completionEnd({ state: "full", finished: true })).toBe("full");
    expect(completionEnd({ state: "closed" })).toBe("closed");
    expect(completionEnd({ state: "done", finished: false })).toBe("full");
    expect(completionEnd({ state: "something else" })).toBe("done");
  });
});

describe("renderEndPage", () => {
  it("says each end in its own words and shows the box", () => {
    for (const state of ["full", "paused", "closed", "blocked"] as const) {
      const { opts, posted } = options();
      const { title, form } = renderEndPage(box, state, { message: "m", code: "C", form: FORM }, opts);
      expect(title.textContent).toBe(END_PAGES[state].title);
      expect(box.querySelector(".ht-done-lead")!.textContent).toBe(END_PAGES[state].lead);
      expect(box.hidden).toBe(false);
      expect(box.dataset.end).toBe(state);
      // only the done page carries the message, the code, the form and the way back
      expect(box.querySelector(".ht-done-message, .ht-done-code, .ht-done-next")).toBeNull();
      expect(form).toBeNull();
      expect(posted).toEqual([]);
    }
  });

  it("thanks the worker with the message and code, and links to the done page", () => {
    const { opts } = options();
    const { title } = renderEndPage(box, "done", { message: "Well done.", code: "XYZ-1" }, opts);
    expect(title).toBe(box.firstElementChild);
    expect(title.textContent).toBe(END_PAGES.done.title);
    expect(box.querySelector(".ht-done-message")!.textContent).toBe("Well done.");
    expect(box.querySelector(".ht-done-code")!.textContent).toBe("Your completion code: XYZ-1");
    const link = box.querySelector<HTMLAnchorElement>(".ht-done-link")!;
    expect(link.textContent).toBe("Finish");
    expect(link.getAttribute("href")).toBe("/w/s/done/");
  });

  it("links back to the platform when the completion names a redirect, and to nothing without a URL", () => {
    renderEndPage(box, "done", { redirect_url: "https://app.prolific.com/x" }, options().opts);
    const link = box.querySelector<HTMLAnchorElement>(".ht-done-link")!;
    expect(link.textContent).toBe("Return to the study platform");
    expect(link.getAttribute("href")).toBe("https://app.prolific.com/x");
    renderEndPage(box, "done", {}, options({ doneUrl: undefined }).opts);
    expect(box.querySelector(".ht-done-next")).toBeNull();
  });

  it("posts the completion form and offers to submit it again", () => {
    const { opts, posted, submitted, made } = options();
    const { form } = renderEndPage(box, "done", { form: FORM, redirect_url: "https://x.test/" }, opts);
    expect(posted).toEqual([FORM]);
    expect(form).toBe(made);
    expect(box.querySelector(".ht-done-link")).toBeNull();
    const again = box.querySelector<HTMLButtonElement>(".ht-done-submit")!;
    expect(again.textContent).toBe("Submit to Mechanical Turk");
    again.click();
    expect(submitted).toEqual([made]);
  });

  it("falls back to the link when the form is not one the page may post", () => {
    const { opts, posted } = options({ postForm: () => null });
    const { form } = renderEndPage(box, "done", { form: FORM }, opts);
    expect(form).toBeNull();
    expect(posted).toEqual([]);
    expect(box.querySelector(".ht-done-submit")).toBeNull();
    expect(box.querySelector(".ht-done-link")!.textContent).toBe("Finish");
  });

  it("says the gold answer was saved and leads back to the golds in the gold editor", () => {
    const { opts } = options({ gold: true, doneUrl: "/r/golds/" });
    const { title } = renderEndPage(box, "done", {}, opts);
    expect(title.textContent).toBe("Gold answer saved.");
    expect(box.querySelector(".ht-done-lead")).toBeNull();
    const link = box.querySelector<HTMLAnchorElement>(".ht-done-link")!;
    expect(link.textContent).toBe("Back to the golds");
    expect(link.getAttribute("href")).toBe("/r/golds/");
  });

  it("replaces what the box showed before", () => {
    box.append(document.createElement("p"));
    renderEndPage(box, "paused", {}, options().opts);
    expect(box.children).toHaveLength(2);
  });
});
