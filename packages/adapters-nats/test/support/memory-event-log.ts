import type { RelayEventLog, RelayedEvent, RelayedEventType } from "@posts/adapters-nats";

const TYPES: readonly RelayedEventType[] = ["post.created", "post.updated", "post.deleted"];

/** An event log in memory: numbered 1, 2, 3, … as they are appended; old ones may be pruned. */
export class MemoryEventLog implements RelayEventLog {
  readonly #events: RelayedEvent[] = [];
  readonly #waiters = new Set<() => void>();
  /** How many times the relay read the log (a relay that never leads never reads). */
  reads = 0;

  /**
   * Appends `count` events of rotating types, each body padded to at least `bodyBytes` and with a
   * reference (`dataref` `/events/<number>`); returns the last number.
   */
  append(count = 1, bodyBytes = 0): number {
    for (let i = 0; i < count; i++) {
      const number = this.last() + 1;
      const type = TYPES[number % TYPES.length] as RelayedEventType;
      const attributes = { specversion: "1.0", id: String(number), type, subject: String(number) };
      this.#events.push({
        number,
        type,
        body: JSON.stringify(attributes).padEnd(bodyBytes),
        reference: () => JSON.stringify({ ...attributes, dataref: `/events/${number}` }),
      });
    }
    for (const wake of this.#waiters) wake();
    return this.last();
  }

  last(): number {
    return this.#events.at(-1)?.number ?? 0;
  }

  /** Forgets every event numbered below `oldest`, as retention does. */
  prune(oldest: number): void {
    while ((this.#events[0]?.number ?? oldest) < oldest) this.#events.shift();
  }

  async readAfter(after: number, limit: number): Promise<readonly RelayedEvent[]> {
    this.reads++;
    return this.#events.filter((event) => event.number > after).slice(0, limit);
  }

  waitForNew(after: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      if (this.last() > after || signal.aborted) return resolve();
      this.#waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

/**
 * The same log read by a stalled process: each read answers what the log held, but only after
 * `delayMs`, by which time it may be stale.
 */
export function staleView(log: RelayEventLog, delayMs: number): RelayEventLog {
  return {
    readAfter: async (after, limit) => {
      const events = await log.readAfter(after, limit);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return events;
    },
    waitForNew: (after, signal) => log.waitForNew(after, signal),
  };
}
