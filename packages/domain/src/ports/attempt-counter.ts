/** How many attempts one key has made in its current window, and when that window ends. */
export interface AttemptCount {
  /** Attempts counted since the window began; at least 1. */
  readonly count: number;
  /** The instant the window ends: from then on the key counts from zero again. */
  readonly resetAt: Date;
}

/**
 * Counts attempts per key in fixed windows, where every instance of the service sees the same
 * counts (a throttle that each instance kept to itself would allow N times the attempts behind a
 * load balancer, and forget them at every restart). A key's window begins with the first attempt
 * counted after the previous window ended, and lasts the `windowMs` that attempt gave; a window
 * ends at its `resetAt`, inclusive of that instant (at `resetAt` the key counts from zero).
 *
 * Keys are opaque to the counter: the caller namespaces them and keeps them short. Time comes from
 * the caller (`now`), never from the store's own clock, so that tests can hold it still.
 */
export interface AttemptCounter {
  /**
   * Counts one attempt of `key` and answers the count with it, atomically: of any number of
   * concurrent increments of one key, on any instance, each answers a different count. Starts a
   * new window of `windowMs` milliseconds at `now` when the key has none that is still running.
   */
  increment(key: string, windowMs: number, now: Date): Promise<AttemptCount>;

  /**
   * The counts of `keys` at `now`, changing nothing: a key with no window running at `now` (never
   * counted, or its window ended) is absent from the answer. Several keys are read in one go
   * because a login checks two (its email and its client address) before every attempt.
   */
  read(keys: readonly string[], now: Date): Promise<ReadonlyMap<string, AttemptCount>>;

  /**
   * Forgets every count whose window has ended at `now`, and answers how many it forgot. Only the
   * storage shrinks: what `read` and `increment` answer is the same before and after.
   */
  deleteExpired(now: Date): Promise<number>;
}
