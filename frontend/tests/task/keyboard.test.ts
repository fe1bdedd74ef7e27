import { afterEach, beforeEach, describe, expect, it } from "vitest";

import {
  type KeyTarget,
  TaskKeyboard,
  fromTextField,
  handleTaskKey,
  keyHelp,
  placeKeyLine,
  touchOnly,
} from "../../src/task/keyboard";
import { key } from "../helpers";

/** A key target that records what the keys asked of it. */
function recorder(state: { ready?: boolean; complete?: boolean; undo?: boolean; choices?: number } = {}) {
  const calls: string[] = [];
  const target: KeyTarget = {
    ready: () => state.ready ?? true,
    complete: () => state.complete ?? false,
    submit: () => void calls.push("submit"),
    undoLast: () => {
      calls.push("undo");
      return state.undo ?? false;
    },
    chooseByKey: (index) => {
      calls.push(`choose ${index}`);
      return index < (state.choices ?? 0);
    },
    onItemKey: (event) => void calls.push(`item ${event.key}`),
  };
  return { target, calls };
}

let keyboard: TaskKeyboard | null = null;

beforeEach(() => {
  document.body.replaceChildren();
});

afterEach(() => {
  keyboard?.destroy();
  keyboard = null;
});

describe("the keyboard line", () => {
  it("names the digit range, the kind's keys, then Enter and Escape", () => {
    expect(keyHelp({ count: 3, digitsDo: "choose a label", extraKeys: ["←/→ move between words"] })).toBe(
      "Keys: 1–3 choose a label; ←/→ move between words; Enter submits once the answer is complete; Escape undoes the last change.",
    );
    expect(keyHelp({ count: 1, digitsDo: "choose it", extraKeys: [] })).toBe(
      "Keys: 1 choose it; Enter submits once the answer is complete; Escape undoes the last change.",
    );
    expect(keyHelp({ count: 0, digitsDo: "unused", extraKeys: [] })).toBe(
      "Keys: Enter submits once the answer is complete; Escape undoes the last change.",
    );
    expect(keyHelp({ count: 14, digitsDo: "rate", extraKeys: [] })).toMatch(/^Keys: 1–9 rate;/);
  });

  it("sits in the instructions panel, or just above the answer bar without one", () => {
    const dock = document.createElement("div");
    document.body.append(dock);
    const line = document.createElement("p");
    placeKeyLine(line, "Keys: one.", dock, null);
    expect(line.nextElementSibling).toBe(dock);
    expect(line.textContent).toBe("Keys: one.");
    const panel = document.createElement("details");
    document.body.prepend(panel);
    placeKeyLine(line, "Keys: two.", dock, panel);
    expect(line.parentElement).toBe(panel);
    expect(line.textContent).toBe("Keys: two.");
    placeKeyLine(line, "Keys: three.", dock, panel);
    expect(panel.querySelectorAll("p")).toHaveLength(1);
  });
});

describe("text fields and touch", () => {
  it("tells keys typed into a text field from others", () => {
    for (const tag of ["input", "textarea", "select"] as const) {
      const field = document.createElement(tag);
      document.body.append(field);
      expect(fromTextField(key(field, "a"))).toBe(true);
    }
    const editable = document.createElement("div");
    editable.contentEditable = "true";
    Object.defineProperty(editable, "isContentEditable", { value: true });
    document.body.append(editable);
    expect(fromTextField(key(editable, "a"))).toBe(true);
    const button = document.createElement("button");
    document.body.append(button);
    expect(fromTextField(key(button, "a"))).toBe(false);
    expect(fromTextField(key(document, "a"))).toBe(false);
  });

  it("is touch-only only when the media query says so", () => {
    const win = document.defaultView!;
    const saved = win.matchMedia;
    try {
      Object.defineProperty(win, "matchMedia", {
        configurable: true,
        value: (query: string) => ({ matches: query === "(hover: none) and (pointer: coarse)" }),
      });
      expect(touchOnly(document)).toBe(true);
      Object.defineProperty(win, "matchMedia", { configurable: true, value: () => ({ matches: false }) });
      expect(touchOnly(document)).toBe(false);
      Object.defineProperty(win, "matchMedia", { configurable: true, value: undefined });
      expect(touchOnly(document)).toBe(false);
    } finally {
      Object.defineProperty(win, "matchMedia", { configurable: true, value: saved });
    }
  });
});

describe("the keys", () => {
  it("Enter submits a complete answer from anywhere but a link, summary, undo or retry", () => {
    const { target, calls } = recorder({ complete: true });
    keyboard = new TaskKeyboard(document, target);
    const button = document.createElement("button");
    const link = document.createElement("a");
    const retry = document.createElement("button");
    retry.className = "ht-retry";
    document.body.append(button, link, retry);
    expect(key(document.body, "Enter").defaultPrevented).toBe(true);
    expect(key(button, "Enter").defaultPrevented).toBe(true);
    expect(calls).toEqual(["submit", "submit"]);
    expect(key(link, "Enter").defaultPrevented).toBe(false);
    expect(key(retry, "Enter").defaultPrevented).toBe(false);
    key(document.body, "Enter", { shiftKey: true });
    expect(calls).toEqual(["submit", "submit", "item Enter"]); // Shift+Enter is the kind's
  });

  it("Enter before the answer is complete keeps a button's meaning and elsewhere asks to submit", () => {
    const { target, calls } = recorder({ complete: false });
    keyboard = new TaskKeyboard(document, target);
    const button = document.createElement("button");
    document.body.append(button);
    expect(key(button, "Enter").defaultPrevented).toBe(false);
    expect(calls).toEqual([]);
    expect(key(document.body, "Enter").defaultPrevented).toBe(true);
    expect(calls).toEqual(["submit"]);
  });

  it("digits choose, Escape undoes, and other keys go to the kind", () => {
    const { target, calls } = recorder({ choices: 2, undo: true });
    keyboard = new TaskKeyboard(document, target);
    expect(key(document.body, "2").defaultPrevented).toBe(true);
    expect(key(document.body, "5").defaultPrevented).toBe(false);
    expect(key(document.body, "0").defaultPrevented).toBe(false);
    expect(key(document.body, "Escape").defaultPrevented).toBe(true);
    key(document.body, "ArrowRight");
    key(document.body, "1", { shiftKey: true });
    expect(calls).toEqual(["choose 1", "choose 4", "item 0", "undo", "item ArrowRight", "item 1"]);
  });

  it("Escape with nothing to undo leaves the key alone", () => {
    const { target, calls } = recorder({ undo: false });
    handleTaskKey(key(document.body, "Escape"), document, target);
    expect(calls).toEqual(["undo"]);
    const event = new KeyboardEvent("keydown", { key: "Escape", cancelable: true });
    handleTaskKey(event, document, target);
    expect(event.defaultPrevented).toBe(false);
  });

  it("stays out of the way: modifiers, text fields, open dialogs, not ready, and after destroy", () => {
    const state = { ready: true, complete: true, choices: 3 };
    const { target, calls } = recorder(state);
    keyboard = new TaskKeyboard(document, target);
    key(document.body, "1", { ctrlKey: true });
    key(document.body, "1", { metaKey: true });
    key(document.body, "Enter", { altKey: true });
    const input = document.createElement("input");
    document.body.append(input);
    key(input, "1");
    key(input, "Enter");
    const dialog = document.createElement("dialog");
    dialog.setAttribute("open", "");
    document.body.append(dialog);
    key(document.body, "1");
    dialog.remove();
    state.ready = false;
    key(document.body, "1");
    expect(calls).toEqual([]);
    state.ready = true;
    key(document.body, "1");
    expect(calls).toEqual(["choose 0"]);
    keyboard.destroy();
    key(document.body, "1");
    expect(calls).toEqual(["choose 0"]);
  });
});
