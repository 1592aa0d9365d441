import type { PostChangeEvent } from "../post-change-event.js";

/**
 * The log of every change of every post, in one order for the whole service (whatever
 * instance made the change), read by the feeds that tell other services about changes.
 *
 * The store writes an event with the change itself, in the change's own transaction, and only
 * then gives it its number; so what a reader sees is always the events 1..n with no gap (less
 * those older than the retention, which go from the front), and a later read sees the same
 * events under the same numbers, plus newer ones after them.
 */
export interface ChangeEventLog {
  /**
   * The events numbered after `after`, in order, at most `limit` (≥ 1) of them. Since the
   * newest event is always kept and numbers have no gap, the answer is empty exactly when
   * `after` is at or past the last number; when its first event is not `after + 1`, the events
   * between were dropped by the retention.
   *
   * With `maxBytes` (≥ 1), the answer also stops after the first event that brings the text of
   * the events listed (as `changeEventTextBytes` counts it) to `maxBytes` or more: it holds at least one
   * event while there is one, and never more than `maxBytes` plus one event's text, so that a
   * reader's memory is bounded whatever the size of the posts. The store measures the events
   * before it reads them: the events past the bound are never fetched.
   */
  readAfter(after: number, limit: number, maxBytes?: number): Promise<readonly PostChangeEvent[]>;

  /** The number of the newest event, or 0 when no change has been numbered yet. */
  lastNumber(): Promise<number>;

  /**
   * Calls `listener` with the newest number each time events have been numbered (in this
   * process or another): at most a moment after their changes committed. Calls may be coalesced
   * or spurious (a number already seen), never missing: after the last call, `readAfter` of
   * what the listener has seen answers everything there is. Answers the function that stops the
   * calls.
   */
  subscribe(listener: (lastNumber: number) => void): () => void;

  /**
   * Forgets the events numbered before `before`, the oldest first and never the newest (so that
   * numbers keep growing from it), and answers how many it forgot.
   */
  deleteNumberedBefore(before: Date): Promise<number>;
}
