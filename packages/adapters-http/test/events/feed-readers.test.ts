import { describe, expect, it } from "vitest";
import { FeedReaders } from "../../src/events/feed-readers.js";

const never = new AbortController().signal;
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("FeedReaders", () => {
  it("gives at most its size of turns at once, the others in the order they asked", async () => {
    const readers = new FeedReaders(2);
    const order: number[] = [];
    const releases = await Promise.all([readers.take(never), readers.take(never)]);
    const waiting = [3, 4, 5].map((n) =>
      readers.take(never).then((release) => {
        order.push(n);
        return release;
      }),
    );
    await settle();
    expect(order).toEqual([]);
    expect(readers.stats()).toEqual({ active: 2, waiting: 3, waited: 3 });
    releases[0]?.();
    // A turn ended twice frees one turn, not two.
    releases[0]?.();
    await settle();
    expect(order).toEqual([3]);
    expect(readers.stats()).toEqual({ active: 2, waiting: 2, waited: 3 });
    releases[1]?.();
    (await waiting[0])?.();
    await settle();
    expect(order).toEqual([3, 4, 5]);
    for (const release of await Promise.all(waiting)) release?.();
    expect(readers.stats()).toEqual({ active: 0, waiting: 0, waited: 3 });
  });

  it("lets a reader whose signal aborts leave the line without taking a turn", async () => {
    const readers = new FeedReaders(1);
    const held = await readers.take(never);
    const gone = new AbortController();
    const leaving = readers.take(gone.signal);
    const next = readers.take(never);
    gone.abort();
    expect(await leaving).toBeUndefined();
    expect(readers.stats()).toEqual({ active: 1, waiting: 1, waited: 2 });
    held?.();
    const release = await next;
    expect(readers.stats()).toEqual({ active: 1, waiting: 0, waited: 2 });
    release?.();
    expect(await readers.take(AbortSignal.abort())).toBeUndefined();
  });
});
