import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import type { AttemptCount, AttemptCounter } from "@posts/domain";

/** What @fastify/rate-limit's stores answer: the count and the milliseconds left in its window. */
interface StoreAnswer {
  readonly current: number;
  readonly ttl: number;
}

type StoreCallback = (error: Error | null, answer?: StoreAnswer) => void;

/**
 * A @fastify/rate-limit store on an `AttemptCounter` port, so that the counts live where every
 * instance of the service sees them (the database) instead of in this process. Fixed windows:
 * `incr` counts one attempt, `read` (the library's `{ increment: false }`) looks without
 * counting. The time is `now()`, the app's clock, so tests can move it. A failing counter fails
 * the limiter's call with the counter's error, so the request fails as any other database fault
 * does (503) rather than letting attempts through uncounted.
 *
 * Reads asked for in one turn of the event loop are answered by one `read` of the counter, so a
 * login that checks its email and its address in parallel costs one statement, and so does a
 * burst of concurrent logins.
 */
export function attemptCounterStore(counter: AttemptCounter, now: () => Date): FastifyRateLimitStoreCtor {
  const readInBatches = batchedReader(counter, now);

  // The library constructs the store with its settings, and asks each limiter for a child: the
  // limit and the window come with every call, so one stateless store serves them all.
  class AttemptCounterStore implements FastifyRateLimitStore {
    incr(key: string, callback: StoreCallback, timeWindow: number): void {
      const at = now();
      counter.increment(key, timeWindow, at).then(
        (count) => callback(null, answerOf(count, at)),
        (error: Error) => callback(error),
      );
    }

    read(key: string, callback: StoreCallback): void {
      readInBatches(key, callback);
    }

    child(): FastifyRateLimitStore {
      return this;
    }
  }
  return AttemptCounterStore;
}

function batchedReader(
  counter: AttemptCounter,
  now: () => Date,
): (key: string, callback: StoreCallback) => void {
  let pending: Map<string, StoreCallback[]> | undefined;

  const flush = (batch: Map<string, StoreCallback[]>) => {
    const at = now();
    counter.read([...batch.keys()], at).then(
      (counts) => {
        for (const [key, callbacks] of batch) {
          const count = counts.get(key);
          for (const callback of callbacks) {
            callback(null, count === undefined ? { current: 0, ttl: 0 } : answerOf(count, at));
          }
        }
      },
      (error: Error) => {
        for (const callbacks of batch.values()) for (const callback of callbacks) callback(error);
      },
    );
  };

  return (key, callback) => {
    if (pending === undefined) {
      const batch = new Map<string, StoreCallback[]>();
      pending = batch;
      // After the promise jobs of this turn, in which the other limiters of the same request ask too.
      process.nextTick(() => {
        pending = undefined;
        flush(batch);
      });
    }
    const waiting = pending.get(key);
    if (waiting === undefined) pending.set(key, [callback]);
    else waiting.push(callback);
  };
}

function answerOf(count: AttemptCount, at: Date): StoreAnswer {
  return { current: count.count, ttl: Math.max(0, count.resetAt.getTime() - at.getTime()) };
}
