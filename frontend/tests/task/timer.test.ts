import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { ItemTimer, TIME_IS_UP, timeLeft } from "../../src/task/timer";

const START = Date.parse("2026-01-05T10:00:00Z");

/** The ISO time `seconds` from now. */
function at(seconds: number): string {
  return new Date(Date.now() + seconds * 1000).toISOString();
}

let element: HTMLElement;

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(START);
  element = document.createElement("span");
});

afterEach(() => {
  vi.useRealTimers();
});

describe("timeLeft", () => {
  it("formats the time left as minutes and two-digit seconds", () => {
    expect(timeLeft(65)).toBe("Time left 1:05");
    expect(timeLeft(9)).toBe("Time left 0:09");
    expect(timeLeft(600)).toBe("Time left 10:00");
    expect(timeLeft(0)).toBe("Time left 0:00");
  });
});

describe("ItemTimer", () => {
  it("counts down once a second, marks the last minute and says when time is up", () => {
    const timer = new ItemTimer(element);
    timer.start(at(62));
    expect(element.textContent).toBe("Time left 1:02");
    expect(element.classList.contains("is-short")).toBe(false);
    expect(timer.running).toBe(true);
    vi.advanceTimersByTime(2000);
    expect(element.textContent).toBe("Time left 1:00");
    expect(element.classList.contains("is-short")).toBe(false);
    vi.advanceTimersByTime(1000);
    expect(element.textContent).toBe("Time left 0:59");
    expect(element.classList.contains("is-short")).toBe(true);
    vi.advanceTimersByTime(59_000);
    expect(element.textContent).toBe(TIME_IS_UP);
    expect(timer.running).toBe(false);
    vi.advanceTimersByTime(5000);
    expect(element.textContent).toBe(TIME_IS_UP);
  });

  it("says time is up at once for a limit already past", () => {
    const timer = new ItemTimer(element);
    timer.start(at(-30));
    expect(element.textContent).toBe(TIME_IS_UP);
    expect(element.classList.contains("is-short")).toBe(true);
    vi.advanceTimersByTime(1000);
    expect(element.textContent).toBe(TIME_IS_UP);
    expect(timer.running).toBe(false);
  });

  it("shows nothing without a limit, or with one it cannot read", () => {
    const timer = new ItemTimer(element);
    timer.start(at(90));
    expect(element.textContent).toBe("Time left 1:30");
    timer.start(undefined);
    expect(element.textContent).toBe("");
    expect(timer.running).toBe(false);
    timer.start("not a date");
    expect(element.textContent).toBe("");
    expect(timer.running).toBe(false);
  });

  it("stops on stop (the text stays) and a new start replaces the old countdown", () => {
    const timer = new ItemTimer(element);
    timer.start(at(120));
    vi.advanceTimersByTime(1000);
    timer.stop();
    expect(timer.running).toBe(false);
    vi.advanceTimersByTime(5000);
    expect(element.textContent).toBe("Time left 1:59");
    timer.start(at(300));
    timer.start(at(10));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(3000);
    expect(element.textContent).toBe("Time left 0:07");
    timer.stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("reads the time from the clock it is given", () => {
    let now = START;
    const timer = new ItemTimer(element, () => now);
    timer.start(at(100));
    expect(element.textContent).toBe("Time left 1:40");
    now += 40_000;
    vi.advanceTimersByTime(1000);
    expect(element.textContent).toBe("Time left 1:00");
    timer.stop();
  });
});
