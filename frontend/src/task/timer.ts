/**
 * The time limit of the item on show: the assignment's `expires_at` counted down once a second as
 * "Time left 1:05", marked short in its last minute, and "Time is up: submit now" at zero (the server
 * still takes a late answer unless the item went to someone else, then 409).
 */

/** "Time left 1:05" for the seconds left. */
export function timeLeft(seconds: number): string {
  return `Time left ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

export const TIME_IS_UP = "Time is up: submit now";

/** The countdown of one item in `element` (the progress line's timer). */
export class ItemTimer {
  readonly element: HTMLElement;
  private readonly clock: () => number;
  private handle: ReturnType<typeof setInterval> | null = null;

  /** `clock`: wall-clock milliseconds, as `expires_at` is (Date.now by default). */
  constructor(element: HTMLElement, clock: () => number = () => Date.now()) {
    this.element = element;
    this.clock = clock;
  }

  /** Count down to `expiresAt` (an ISO date-time); without one, or an unreadable one, show nothing. */
  start(expiresAt?: string): void {
    this.stop();
    const end = expiresAt ? Date.parse(expiresAt) : Number.NaN;
    if (Number.isNaN(end)) {
      this.element.textContent = "";
      return;
    }
    const tick = () => {
      const left = Math.max(0, Math.round((end - this.clock()) / 1000));
      this.element.classList.toggle("is-short", left < 60);
      if (left === 0) {
        this.element.textContent = TIME_IS_UP;
        this.stop();
        return;
      }
      this.element.textContent = timeLeft(left);
    };
    tick();
    this.handle = setInterval(tick, 1000);
  }

  /** Stop counting (the text stays as it is). */
  stop(): void {
    if (this.handle !== null) clearInterval(this.handle);
    this.handle = null;
  }

  /** Whether the countdown is running. */
  get running(): boolean {
    return this.handle !== null;
  }
}
