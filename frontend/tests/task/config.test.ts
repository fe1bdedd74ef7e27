import { beforeEach, describe, expect, it } from "vitest";

import { type TaskConfig, readTaskConfig, submitUrl } from "../../src/task/config";

const TASK: TaskConfig<{ question?: string }> = {
  study: "s-7",
  kind: "yes_no",
  next_url: "/api/work/s-7/next/",
  submit_url_template: "/api/work/assignments/ASSIGNMENT/submit/",
  done_url: "/w/s-7/done/",
  csrf_token: "csrf-7",
  config: { question: "Is this a word?" },
};

beforeEach(() => {
  document.body.replaceChildren();
});

describe("configuration helpers", () => {
  it("reads the json_script block, checks its URLs and, when asked, its kind", () => {
    const script = document.createElement("script");
    script.id = "hatlab-task";
    script.type = "application/json";
    script.textContent = JSON.stringify({ ...TASK, config: undefined });
    document.body.append(script);
    expect(readTaskConfig(document)).toEqual({ ...TASK, config: {} });
    expect(readTaskConfig(document, "hatlab-task", ["yes_no"]).kind).toBe("yes_no");
    expect(() => readTaskConfig(document, "hatlab-task", ["highlight"])).toThrow(
      /"yes_no" is not one of highlight/,
    );
    script.textContent = JSON.stringify({ ...TASK, next_url: "" });
    expect(() => readTaskConfig(document)).toThrow(/next_url/);
    expect(() => readTaskConfig(document, "missing")).toThrow(/#missing/);
  });

  it("keeps the page's study config and rejects a missing submit URL", () => {
    const script = document.createElement("script");
    script.id = "hatlab-task";
    script.type = "application/json";
    script.textContent = JSON.stringify(TASK);
    document.body.append(script);
    expect(readTaskConfig(document).config).toEqual({ question: "Is this a word?" });
    script.textContent = JSON.stringify({ ...TASK, submit_url_template: 5 });
    expect(() => readTaskConfig(document)).toThrow(/submit_url_template/);
  });

  it("fills the assignment into the submit URL", () => {
    expect(submitUrl(TASK.submit_url_template, "a/b")).toBe("/api/work/assignments/a%2Fb/submit/");
  });
});
