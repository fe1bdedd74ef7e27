import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { HighlightWidget } from "../src/highlight_widget";
import { fakeClock, key, pointer } from "./helpers";

const WORDS = ["The", "food", "was", "great", "but", "service", "slow."];

let root: HTMLElement;
let widget: HighlightWidget;
let clock: ReturnType<typeof fakeClock>;

function words(): HTMLElement[] {
  return Array.from(root.querySelectorAll<HTMLElement>(".hl-word"));
}

function make(mode: "read_first" | "free" = "read_first", breaks: number[] = []): HighlightWidget {
  clock = fakeClock();
  root = document.createElement("div");
  document.body.append(root);
  widget = new HighlightWidget(root, { mode, now: clock.now });
  widget.load(WORDS, breaks);
  return widget;
}

function click(i: number, init: MouseEventInit & { pointerType?: string } = {}): void {
  pointer(words()[i], "pointerdown", init);
  pointer(words()[i], "pointerup", init);
}

beforeEach(() => {
  document.body.replaceChildren();
});

afterEach(() => {
  widget?.destroy();
});

describe("rendering", () => {
  it("shows each word as text, never as markup", () => {
    make();
    widget.load(["<b>bold</b>", "&amp;", "x"]);
    expect(words().map((w) => w.textContent)).toEqual(["<b>bold</b>", "&amp;", "x"]);
    expect(root.querySelector("b")).toBeNull();
  });

  it("puts a paragraph break before the words listed in breaks", () => {
    make("free", [3, 5]);
    const text = root.querySelector(".hl-text")!;
    const breaksBefore = words()
      .map((w, i) => ((w.previousSibling as HTMLElement | null)?.className === "hl-break" ? i : -1))
      .filter((i) => i >= 0);
    expect(breaksBefore).toEqual([3, 5]);
    expect(text.textContent).toBe("The food wasgreat butservice slow.");
  });

  it("gives the words one tab stop", () => {
    make("free");
    expect(words().map((w) => w.tabIndex)).toEqual([0, -1, -1, -1, -1, -1, -1]);
  });
});

describe("read-first mode", () => {
  it("blocks highlighting until a label is chosen, with aria-disabled words and a hint", () => {
    make("read_first");
    expect(widget.locked).toBe(true);
    expect(words().every((w) => w.getAttribute("aria-disabled") === "true")).toBe(true);
    expect(root.querySelector(".hl-hint")!.textContent).toMatch(/choose a label first/i);
    click(1);
    key(words()[2], " ");
    expect(widget.map()).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(widget.signals().blocked_attempts).toBe(2);
    expect(root.querySelector(".hl-hint")!.classList.contains("hl-nudge")).toBe(true);

    widget.chooseLabel("positive");
    expect(widget.locked).toBe(false);
    expect(words().some((w) => w.hasAttribute("aria-disabled"))).toBe(false);
    click(1);
    expect(widget.map()).toEqual([0, 1, 0, 0, 0, 0, 0]);
    expect(widget.answer()).toEqual({ label: "positive", map: [0, 1, 0, 0, 0, 0, 0] });
  });

  it("lets free mode highlight at once", () => {
    make("free");
    click(3);
    expect(widget.map()).toEqual([0, 0, 0, 1, 0, 0, 0]);
    expect(widget.label).toBeNull();
  });
});

describe("mouse and touch", () => {
  beforeEach(() => {
    make("free");
  });

  it("toggles a word on and off by clicking", () => {
    click(2);
    expect(words()[2].classList.contains("is-on")).toBe(true);
    expect(words()[2].getAttribute("aria-checked")).toBe("true");
    click(2);
    expect(widget.map()).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(words()[2].getAttribute("aria-checked")).toBe("false");
  });

  it("shift-click sets the run from the last clicked word", () => {
    click(1);
    click(4, { shiftKey: true });
    expect(widget.map()).toEqual([0, 1, 1, 1, 1, 0, 0]);
    click(0, { shiftKey: true });
    expect(widget.map()).toEqual([1, 1, 1, 1, 1, 0, 0]);
  });

  it("drag sets a run, previewed while dragging and committed on release", () => {
    pointer(words()[5], "pointerdown");
    pointer(words()[4], "pointermove");
    pointer(words()[2], "pointermove");
    expect(words().map((w) => w.classList.contains("is-on"))).toEqual([
      false,
      false,
      true,
      true,
      true,
      true,
      false,
    ]);
    expect(widget.map()).toEqual([0, 0, 0, 0, 0, 0, 0]);
    pointer(document, "pointerup");
    expect(widget.map()).toEqual([0, 0, 1, 1, 1, 1, 0]);
    // One drag is one undo step.
    widget.undo();
    expect(widget.map()).toEqual([0, 0, 0, 0, 0, 0, 0]);
  });

  it("a drag that starts on a highlighted word clears the run", () => {
    widget.setRange(0, 6, 1);
    pointer(words()[1], "pointerdown");
    pointer(words()[3], "pointermove");
    pointer(document, "pointerup");
    expect(widget.map()).toEqual([1, 0, 0, 0, 1, 1, 1]);
  });

  it("a cancelled touch (the page scrolled) changes nothing", () => {
    pointer(words()[1], "pointerdown", { pointerType: "touch" });
    pointer(document, "pointercancel", { pointerType: "touch" });
    expect(widget.map()).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(words()[1].classList.contains("is-on")).toBe(false);
  });

  it("counts actions per input kind", () => {
    click(1);
    click(2, { pointerType: "touch" });
    key(words()[2], " ");
    expect(widget.signals().actions).toEqual({ mouse: 1, touch: 1, pen: 0, keyboard: 1 });
  });

  it("ignores the secondary mouse button", () => {
    pointer(words()[1], "pointerdown", { button: 2 });
    pointer(document, "pointerup");
    expect(widget.map()).toEqual([0, 0, 0, 0, 0, 0, 0]);
  });
});

describe("keyboard", () => {
  beforeEach(() => {
    make("free");
  });

  it("moves the single tab stop with the arrow keys, Home and End", () => {
    words()[0].focus();
    key(words()[0], "ArrowRight");
    key(words()[1], "ArrowRight");
    expect(document.activeElement).toBe(words()[2]);
    expect(words().map((w) => w.tabIndex)).toEqual([-1, -1, 0, -1, -1, -1, -1]);
    key(words()[2], "ArrowLeft");
    expect(document.activeElement).toBe(words()[1]);
    key(words()[1], "End");
    expect(document.activeElement).toBe(words()[6]);
    key(words()[6], "ArrowRight");
    expect(document.activeElement).toBe(words()[6]);
    key(words()[6], "Home");
    expect(document.activeElement).toBe(words()[0]);
  });

  it("toggles with space; Enter is left to the page (it submits)", () => {
    key(words()[3], " ");
    key(words()[4], " ");
    expect(widget.map()).toEqual([0, 0, 0, 1, 1, 0, 0]);
    key(words()[3], " ");
    key(words()[5], "Enter");
    expect(widget.map()).toEqual([0, 0, 0, 0, 1, 0, 0]);
  });

  it("shift+arrow carries the highlight onto the next words", () => {
    words()[1].focus();
    key(words()[1], " ");
    key(words()[1], "ArrowRight", { shiftKey: true });
    key(words()[2], "ArrowRight", { shiftKey: true });
    expect(widget.map()).toEqual([0, 1, 1, 1, 0, 0, 0]);
    expect(document.activeElement).toBe(words()[3]);
  });

  it("shift+space highlights the run from the anchor", () => {
    key(words()[1], " ");
    key(words()[5], " ", { shiftKey: true });
    expect(widget.map()).toEqual([0, 1, 1, 1, 1, 1, 0]);
  });
});

describe("undo and count", () => {
  beforeEach(() => {
    make("free");
  });

  it("undoes step by step with the button and Ctrl+Z, and shows the count", () => {
    const count = root.querySelector(".hl-count")!;
    const undo = root.querySelector<HTMLButtonElement>(".hl-undo")!;
    expect(count.textContent).toBe("0 words highlighted");
    expect(undo.disabled).toBe(true);
    click(1);
    expect(count.textContent).toBe("1 word highlighted");
    click(2);
    click(1);
    expect(count.textContent).toBe("1 word highlighted");
    expect(undo.disabled).toBe(false);
    undo.click();
    expect(widget.map()).toEqual([0, 1, 1, 0, 0, 0, 0]);
    expect(count.textContent).toBe("2 words highlighted");
    key(document.body, "z", { ctrlKey: true });
    expect(widget.map()).toEqual([0, 1, 0, 0, 0, 0, 0]);
    key(document.body, "z", { metaKey: true });
    expect(widget.map()).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(undo.disabled).toBe(true);
    expect(widget.undo()).toBe(false);
    expect(widget.signals().undos).toBe(3);
  });

  it("leaves Ctrl+Z inside a text field alone", () => {
    click(1);
    const input = document.createElement("input");
    document.body.append(input);
    key(input, "z", { ctrlKey: true });
    expect(widget.map()).toEqual([0, 1, 0, 0, 0, 0, 0]);
  });

  it("starts afresh on load", () => {
    click(1);
    widget.load(["a", "b"]);
    expect(widget.map()).toEqual([0, 0]);
    expect(widget.canUndo).toBe(false);
    expect(root.querySelector(".hl-count")!.textContent).toBe("0 words highlighted");
  });
});

describe("timings and signals", () => {
  it("read-first: reading ends when the label is chosen", () => {
    make("read_first");
    clock.advance(12_000);
    widget.chooseLabel("negative");
    clock.advance(3_000);
    click(5);
    clock.advance(4_500);
    widget.chooseLabel("positive");
    clock.advance(500);
    expect(widget.timings()).toEqual({
      read_ms: 12_000,
      answer_ms: 8_000,
      label_at_ms: 12_000,
      first_highlight_at_ms: 15_000,
    });
  });

  it("first_highlight_at_ms stays null when nothing was highlighted", () => {
    make("read_first");
    clock.advance(2_000);
    widget.chooseLabel("cannot decide");
    expect(widget.timings(clock.now() + 1_000)).toEqual({
      read_ms: 2_000,
      answer_ms: 1_000,
      label_at_ms: 2_000,
      first_highlight_at_ms: null,
    });
  });

  it("free mode: reading ends at the first highlight or label, whichever is first", () => {
    make("free");
    clock.advance(7_000);
    click(0);
    clock.advance(2_000);
    widget.chooseLabel("positive");
    clock.advance(1_000);
    expect(widget.timings()).toEqual({
      read_ms: 7_000,
      answer_ms: 3_000,
      label_at_ms: 9_000,
      first_highlight_at_ms: 7_000,
    });
  });

  it("counts blurs, hidden time and pastes", () => {
    make("free");
    let state: DocumentVisibilityState = "visible";
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
    window.dispatchEvent(new Event("blur"));
    state = "hidden";
    document.dispatchEvent(new Event("visibilitychange"));
    clock.advance(4_000);
    state = "visible";
    document.dispatchEvent(new Event("visibilitychange"));
    state = "hidden";
    document.dispatchEvent(new Event("visibilitychange"));
    clock.advance(1_000);
    document.dispatchEvent(new Event("paste", { bubbles: true }));
    const signals = widget.signals();
    expect(signals).toMatchObject({ blurs: 1, hides: 2, hidden_ms: 5_000, pastes: 1 });
    delete (document as unknown as Record<string, unknown>).visibilityState;
  });

  it("stops listening after destroy", () => {
    make("free");
    widget.destroy();
    document.dispatchEvent(new Event("paste", { bubbles: true }));
    expect(widget.signals().pastes).toBe(0);
  });
});
