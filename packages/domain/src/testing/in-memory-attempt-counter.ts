import type { AttemptCount, AttemptCounter } from "../ports/attempt-counter.js";

/**
 * An `AttemptCounter` held in a map, with the behaviour the contract suite demands of the
 * database's. For tests of one process: nothing is shared or survives it.
 */
export class InMemoryAttemptCounter implements AttemptCounter {
  readonly #counts = new Map<string, AttemptCount>();

  async increment(key: string, windowMs: number, now: Date): Promise<AttemptCount> {
    const current = this.#counts.get(key);
    const next =
      current === undefined || isOver(current, now)
        ? { count: 1, resetAt: new Date(now.getTime() + windowMs) }
        : { count: current.count + 1, resetAt: current.resetAt };
    this.#counts.set(key, next);
    return next;
  }

  async read(keys: readonly string[], now: Date): Promise<ReadonlyMap<string, AttemptCount>> {
    const running = new Map<string, AttemptCount>();
    for (const key of keys) {
      const current = this.#counts.get(key);
      if (current !== undefined && !isOver(current, now)) running.set(key, current);
    }
    return running;
  }

  async deleteExpired(now: Date): Promise<number> {
    let deleted = 0;
    for (const [key, current] of this.#counts) {
      if (isOver(current, now)) {
        this.#counts.delete(key);
        deleted++;
      }
    }
    return deleted;
  }
}

function isOver(count: AttemptCount, now: Date): boolean {
  return count.resetAt.getTime() <= now.getTime();
}
