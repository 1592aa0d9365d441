import type { Clock } from "../ports/clock.js";

/** A clock that moves only when told to, so tests can make two writes land in one millisecond. */
export class ManualClock implements Clock {
  #now: number;

  /** Starts at `start` (default 2026-11-22T10:15:30.123Z). */
  constructor(start: Date | string = "2026-11-22T10:15:30.123Z") {
    this.#now = new Date(start).getTime();
  }

  /** The instant the clock holds; a fresh Date each call. */
  now(): Date {
    return new Date(this.#now);
  }

  /** Moves the clock by `ms` milliseconds (negative moves it back, as real clocks sometimes do). */
  advance(ms: number): void {
    this.#now += ms;
  }

  /** Sets the clock to `instant`. */
  set(instant: Date | string): void {
    this.#now = new Date(instant).getTime();
  }
}
