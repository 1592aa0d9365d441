import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import {
  type NumberedEventSource,
  RELAY_READ_MAX_BYTES,
  relayEventLogOf,
} from "../../src/event-relay/relay-event-log.js";

interface Numbered {
  readonly number: number;
}

/** A log whose numbers the test moves by hand, telling subscribers as the real one does. */
function source(): NumberedEventSource<Numbered> & {
  advance(to: number): void;
  /** Numbers without telling subscribers (as before anyone subscribed). */
  numberQuietly(to: number): void;
  listeners: number;
  /** How many times `lastNumber` was asked. */
  asked: number;
  /** Makes `lastNumber` fail until set back to false. */
  failing: boolean;
  /** The byte bound of each read, in order. */
  readBounds: number[];
} {
  let last = 0;
  const listeners = new Set<(n: number) => void>();
  return {
    asked: 0,
    failing: false,
    readBounds: [],
    async readAfter(after, limit, maxBytes) {
      this.readBounds.push(maxBytes);
      return Array.from({ length: Math.max(0, Math.min(limit, last - after)) }, (_, i) => ({
        number: after + i + 1,
      }));
    },
    async lastNumber() {
      this.asked += 1;
      if (this.failing) throw new Error("the log cannot be read");
      return last;
    },
    numberQuietly(to) {
      last = to;
    },
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    advance(to) {
      last = to;
      for (const listener of listeners) listener(to);
    },
    get listeners() {
      return listeners.size;
    },
  };
}

const toRelayed = (event: Numbered) => ({
  number: event.number,
  type: "post.created" as const,
  body: `#${event.number}`,
});

describe("relayEventLogOf", () => {
  it("bounds every read in bytes, so a batch of large posts cannot hold more than a few MiB", async () => {
    const log = source();
    log.advance(3);
    await relayEventLogOf(log, toRelayed).readAfter(0, 256);
    expect(log.readBounds).toEqual([RELAY_READ_MAX_BYTES]);
  });

  it("reads the events serialized, in order", async () => {
    const log = source();
    log.advance(3);
    expect(await relayEventLogOf(log, toRelayed).readAfter(1, 10)).toEqual([
      { number: 2, type: "post.created", body: "#2" },
      { number: 3, type: "post.created", body: "#3" },
    ]);
  });

  it("waits until a number past `after` is told, and leaves no listener on the signal", async () => {
    const log = source();
    log.advance(5);
    const view = relayEventLogOf(log, toRelayed);
    const signal = new AbortController().signal;
    let woken = false;
    const waiting = view.waitForNew(5, signal).then(() => {
      woken = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    log.advance(5); // a spurious call: nothing new
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(woken).toBe(false);
    log.advance(6);
    await waiting;
    expect(woken).toBe(true);
    // One long-lived signal serves many waits: each wait's listener must go with it.
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("subscribes once and asks lastNumber once, however many waits there are", async () => {
    const log = source();
    log.numberQuietly(3); // numbered before the view existed: only lastNumber can tell
    const view = relayEventLogOf(log, toRelayed);
    expect(log.listeners).toBe(1);
    expect(log.asked).toBe(0); // a service without a relay never asks
    const signal = new AbortController().signal;
    await view.waitForNew(2, signal);
    for (let n = 4; n <= 50; n++) {
      const waiting = view.waitForNew(n - 1, signal);
      log.advance(n);
      await waiting;
      // Told before the wait began: answered without waiting for anything.
      await view.waitForNew(n - 1, signal);
    }
    expect(log.asked).toBe(1);
    expect(log.listeners).toBe(1);
  });

  it("knows of a number told between a read and the wait that follows it", async () => {
    const log = source();
    const view = relayEventLogOf(log, toRelayed);
    const signal = new AbortController().signal;
    log.advance(1);
    await view.waitForNew(0, signal);
    expect(await view.readAfter(0, 10)).toHaveLength(1);
    log.advance(2); // after the read, before the wait
    await view.waitForNew(1, signal);
    expect(log.asked).toBe(1);
  });

  it("resolves at once while lastNumber fails, and asks again at the next wait", async () => {
    const log = source();
    log.numberQuietly(4);
    log.failing = true;
    const view = relayEventLogOf(log, toRelayed);
    const signal = new AbortController().signal;
    await view.waitForNew(4, signal); // resolves early: the relay reads, fails, backs off
    await view.waitForNew(4, signal);
    expect(log.asked).toBe(2);
    log.failing = false;
    let woken = false;
    const waiting = view.waitForNew(4, signal).then(() => {
      woken = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(woken).toBe(false);
    expect(log.asked).toBe(3);
    log.advance(5);
    await waiting;
  });

  it("does not wait once aborted, and removes its waiter", async () => {
    const log = source();
    log.advance(2);
    const view = relayEventLogOf(log, toRelayed);
    await view.waitForNew(1, new AbortController().signal);
    const aborted = new AbortController();
    const waiting = view.waitForNew(2, aborted.signal);
    aborted.abort();
    await waiting;
    expect(getEventListeners(aborted.signal, "abort")).toHaveLength(0);
    await view.waitForNew(2, aborted.signal);
  });
});
