import { describe, expect, it } from "vitest";
import { type NumberedEventSource, relayEventLogOf } from "../src/relay-event-log.js";

interface Numbered {
  readonly number: number;
}

/** A log whose numbers the test moves by hand, telling subscribers as the real one does. */
function source(): NumberedEventSource<Numbered> & { advance(to: number): void; listeners: number } {
  let last = 0;
  const listeners = new Set<(n: number) => void>();
  return {
    readAfter: async (after, limit) =>
      Array.from({ length: Math.max(0, Math.min(limit, last - after)) }, (_, i) => ({
        number: after + i + 1,
      })),
    lastNumber: async () => last,
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
  it("reads the events serialized, in order", async () => {
    const log = source();
    log.advance(3);
    expect(await relayEventLogOf(log, toRelayed).readAfter(1, 10)).toEqual([
      { number: 2, type: "post.created", body: "#2" },
      { number: 3, type: "post.created", body: "#3" },
    ]);
  });

  it("waits until a number past `after` is told, and then stops listening", async () => {
    const log = source();
    log.advance(5);
    let woken = false;
    const waiting = relayEventLogOf(log, toRelayed)
      .waitForNew(5, new AbortController().signal)
      .then(() => {
        woken = true;
      });
    await new Promise((resolve) => setTimeout(resolve, 20));
    log.advance(5); // a spurious call: nothing new
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(woken).toBe(false);
    log.advance(6);
    await waiting;
    expect(log.listeners).toBe(0);
  });

  it("does not wait when events were numbered before it subscribed, nor once aborted", async () => {
    const log = source();
    log.advance(2);
    await relayEventLogOf(log, toRelayed).waitForNew(1, new AbortController().signal);
    const aborted = new AbortController();
    const waiting = relayEventLogOf(log, toRelayed).waitForNew(2, aborted.signal);
    aborted.abort();
    await waiting;
    expect(log.listeners).toBe(0);
  });
});
