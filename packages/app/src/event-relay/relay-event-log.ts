import type { RelayEventLog, RelayedEvent } from "@posts/adapters-nats";
import { waitUntil } from "../wait-until.js";

/** What the relay needs of the service's change event log: reading, and being told of new numbers. */
export interface NumberedEventSource<E> {
  /** At most `limit` events above `after`, stopping after the one that reaches `maxBytes`. */
  readAfter(after: number, limit: number, maxBytes: number): Promise<readonly E[]>;
  lastNumber(): Promise<number>;
  /** Calls `listener` with the newest number whenever events were numbered; answers how to stop. */
  subscribe(listener: (lastNumber: number) => void): () => void;
}

/**
 * The most bytes of events one read of the relay holds, past its first event. The relay reads
 * batches of many events; with posts of up to the body limit each, a batch bounded only in count
 * could hold gigabytes. A batch cut short is followed at once by the next read, as more events are
 * known to exist, so the bound costs no delay.
 */
export const RELAY_READ_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The event log as the relay reads it: each event serialized by `toRelayed` (the same CloudEvent
 * the feed serves, so that the stream carries the feed's bytes), and a wait for new numbers built
 * on the log's subscription.
 *
 * The view subscribes once, when made, and keeps the newest number it has heard of, starting from
 * one read of `lastNumber`: so a wait knows at once whether the log has moved past `after`,
 * without a statement. A subscription made per wait would have to ask `lastNumber` each time for
 * what was numbered between the relay's read and the subscription: one more statement per batch
 * for the database, under a steady stream of writes (bench/RESULTS.md#events).
 * The subscription lasts as long as the log; the log drops its listeners when it closes.
 */
export function relayEventLogOf<E>(
  source: NumberedEventSource<E>,
  toRelayed: (event: E) => RelayedEvent,
): RelayEventLog {
  let heard = 0;
  const waiters = new Set<{ readonly after: number; readonly wake: () => void }>();
  const hear = (last: number) => {
    if (last <= heard) return;
    heard = last;
    for (const waiter of waiters) if (last > waiter.after) waiter.wake();
  };
  source.subscribe(hear);
  // Until `lastNumber` has answered once, a wait cannot tell what was numbered before the
  // subscription began. Asked by the first wait (a service without a relay never asks), and
  // again by the next one if it failed.
  let learning: Promise<boolean> | undefined;
  const learn = () =>
    (learning ??= source.lastNumber().then(
      (last) => {
        hear(last);
        return true;
      },
      () => {
        learning = undefined;
        return false;
      },
    ));

  return {
    readAfter: async (after, limit) =>
      (await source.readAfter(after, limit, RELAY_READ_MAX_BYTES)).map(toRelayed),
    waitForNew: async (after, signal) => {
      // Failing, it resolves at once: the relay's next read meets the same failure and reports it.
      if (!(await learn())) return;
      if (heard > after || signal.aborted) return;
      await waitUntil(
        (settle) => {
          const waiter = { after, wake: () => settle(undefined) };
          waiters.add(waiter);
          return () => waiters.delete(waiter);
        },
        { signal, otherwise: undefined },
      );
    },
  };
}
