import type { ChangeEventLog, PostChangeEvent } from "@posts/domain";
import { afterEach, describe, expect, it } from "vitest";
import { ChangeFeedHub, REPLAY_CACHE_BYTES } from "../../src/events/change-feed-hub.js";

/**
 * A log whose numbering and notifications the test drives apart, as they are apart in
 * PostgreSQL: `number` makes events readable at once, `notify` calls the subscribers when the
 * test says (a notification reaches an instance after its reads may already have seen the rows).
 */
class ScriptedLog implements ChangeEventLog {
  readonly events: PostChangeEvent[] = [];
  readonly #listeners = new Set<(last: number) => void>();
  reads = 0;

  number(count: number): void {
    for (let i = 0; i < count; i++) {
      const number = this.events.length + 1;
      this.events.push({ type: "post.deleted", number, postId: number, occurredAt: new Date(0) });
    }
  }

  notify(last: number): void {
    for (const listener of this.#listeners) listener(last);
  }

  async readAfter(after: number, limit: number): Promise<readonly PostChangeEvent[]> {
    this.reads++;
    return this.events.filter((event) => event.number > after).slice(0, limit);
  }

  async lastNumber(): Promise<number> {
    return this.events.length;
  }

  subscribe(listener: (last: number) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async deleteNumberedBefore(): Promise<number> {
    return 0;
  }
}

// Lets every pending read of the log and every woken reader run.
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Whether `promise` has settled, once everything runnable has run. */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await settle();
  return done;
}

/** The numbers of the messages the hub holds after `after`, as a follower takes them. */
const held = (feed: ChangeFeedHub, after: number) =>
  feed.tailAfter(after, Number.POSITIVE_INFINITY)?.map((message) => message.number) ?? [];

describe("ChangeFeedHub", () => {
  let hub: ChangeFeedHub | undefined;
  const started = (log: ScriptedLog) => {
    hub = new ChangeFeedHub({ log, render: (event) => `{"id":"${event.number}"}` });
    hub.start();
    return hub;
  };
  const never = new AbortController().signal;
  afterEach(() => hub?.stop());

  it("wakes a reader at the end when its events are numbered and notified", async () => {
    const log = new ScriptedLog();
    const feed = started(log);
    const waiting = feed.waitAfter(0, never);
    expect(await settled(waiting)).toBe(false);
    log.number(2);
    log.notify(2);
    expect(await settled(waiting)).toBe(true);
    expect(held(feed, 0)).toEqual([1, 2]);
  });

  // A stall the hub must not have: a fill read rows numbered after the notification that started it;
  // that later notification, arriving once the reader waits again at the hub's end, found
  // nothing to read, and the fill that ended without reading left the hub marked as filling.
  it("goes on waking readers after a notification of numbers it has read already", async () => {
    const log = new ScriptedLog();
    const feed = started(log);
    let waiting = feed.waitAfter(0, never);
    log.number(2);
    log.notify(1);
    expect(await settled(waiting)).toBe(true);
    expect(held(feed, 0)).toEqual([1, 2]);

    waiting = feed.waitAfter(2, never);
    log.notify(2);
    expect(await settled(waiting)).toBe(false);

    log.number(1);
    log.notify(3);
    expect(await settled(waiting)).toBe(true);
    expect(held(feed, 2)).toEqual([3]);
  });

  it("goes on waking readers after a notification that comes while every reader is past it", async () => {
    const log = new ScriptedLog();
    log.number(5);
    const feed = started(log);
    // A stream that started at the end it read from the log, beyond anything the hub has read.
    await feed.lastNumber();
    const waiting = feed.waitAfter(5, never);
    log.notify(4);
    expect(await settled(waiting)).toBe(false);

    log.number(1);
    log.notify(6);
    expect(await settled(waiting)).toBe(true);
    expect(held(feed, 5)).toEqual([6]);
  });

  it("reads the log once per notification for many readers at the end", async () => {
    const log = new ScriptedLog();
    const feed = started(log);
    const readers = Array.from({ length: 50 }, () => feed.waitAfter(0, never));
    log.number(3);
    log.notify(3);
    await settle();
    expect(await Promise.all(readers.map(settled))).toEqual(readers.map(() => true));
    expect(log.reads).toBe(1);
  });

  it("releases a waiting reader whose signal aborts, and every reader when it stops", async () => {
    const log = new ScriptedLog();
    const feed = started(log);
    const gone = new AbortController();
    const aborted = feed.waitAfter(0, gone.signal);
    const stopped = feed.waitAfter(0, never);
    gone.abort();
    expect(await settled(aborted)).toBe(true);
    expect(await settled(stopped)).toBe(false);
    feed.stop();
    expect(await settled(stopped)).toBe(true);
  });

  it("reads a batch once for replays that ask for it at once or lately, and again once evicted", async () => {
    const log = new ScriptedLog();
    log.number(10);
    const feed = started(log);
    const numbers = (messages: readonly { number: number }[]) => messages.map((message) => message.number);
    const together = await Promise.all([1, 2, 3].map(() => feed.readLog(0, 4, 1_000_000)));
    expect(together.map(numbers)).toEqual([
      [1, 2, 3, 4],
      [1, 2, 3, 4],
      [1, 2, 3, 4],
    ]);
    expect(log.reads).toBe(1);
    // The very same bytes: held once, however many streams write them.
    expect(together[1]?.[0]?.chunks).toBe(together[0]?.[0]?.chunks);
    expect(numbers(await feed.readLog(0, 4, 1_000_000))).toEqual([1, 2, 3, 4]);
    expect(numbers(await feed.readLog(4, 4, 1_000_000))).toEqual([5, 6, 7, 8]);
    expect(log.reads).toBe(2);
    // The end, as it was, is never kept: a later read finds what came since.
    expect(await feed.readLog(10, 4, 1_000_000)).toEqual([]);
    log.number(1);
    expect(numbers(await feed.readLog(10, 4, 1_000_000))).toEqual([11]);
    expect(log.reads).toBe(4);
  });

  it("keeps the batches it shares within its bound of bytes, evicting the least lately asked for", async () => {
    const log = new ScriptedLog();
    log.number(3);
    // Each event's message a third of the bound and a little more: two fit, three do not.
    const big = "x".repeat(Math.ceil(REPLAY_CACHE_BYTES / 3));
    hub = new ChangeFeedHub({ log, render: () => big });
    hub.start();
    const feed = hub;
    for (const after of [0, 1, 2]) await feed.readLog(after, 1, 1);
    expect(log.reads).toBe(3);
    await feed.readLog(2, 1, 1);
    await feed.readLog(1, 1, 1);
    expect(log.reads).toBe(3);
    await feed.readLog(0, 1, 1);
    expect(log.reads).toBe(4);
  });
});
