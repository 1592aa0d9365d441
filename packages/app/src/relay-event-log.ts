import type { RelayEventLog, RelayedEvent } from "@posts/adapters-nats";

/** What the relay needs of the service's change event log: reading, and being told of new numbers. */
export interface NumberedEventSource<E> {
  readAfter(after: number, limit: number): Promise<readonly E[]>;
  lastNumber(): Promise<number>;
  /** Calls `listener` with the newest number whenever events were numbered; answers how to stop. */
  subscribe(listener: (lastNumber: number) => void): () => void;
}

/**
 * The event log as the relay reads it: each event serialized by `toRelayed` (the same CloudEvent
 * the feed serves, so that the stream carries the feed's bytes), and a wait for new numbers built
 * on the log's subscription.
 */
export function relayEventLogOf<E>(
  source: NumberedEventSource<E>,
  toRelayed: (event: E) => RelayedEvent,
): RelayEventLog {
  return {
    readAfter: async (after, limit) => (await source.readAfter(after, limit)).map(toRelayed),
    waitForNew: (after, signal) =>
      new Promise<void>((resolve) => {
        let stop = () => {};
        const done = () => {
          stop();
          signal.removeEventListener("abort", done);
          resolve();
        };
        if (signal.aborted) return resolve();
        signal.addEventListener("abort", done, { once: true });
        stop = source.subscribe((last) => {
          if (last > after) done();
        });
        // Events numbered between the relay's last read and the subscription made no call.
        source.lastNumber().then(
          (last) => {
            if (last > after) done();
          },
          // The relay's next read meets the same failure and reports it.
          () => done(),
        );
      }),
  };
}
