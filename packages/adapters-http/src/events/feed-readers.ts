import { waitUntil } from "./wait-until.js";

/** What {@link FeedReaders} is doing at the moment of asking. */
export interface FeedReaderStats {
  /** Readers holding a turn: reading the log, or waiting for a client to take what they read. */
  readonly active: number;
  /** Readers waiting for a turn. */
  readonly waiting: number;
  /**
   * Readers that have had to wait for a turn since the start: a gauge of those waiting misses a
   * wait shorter than the time between two scrapes, this count does not.
   */
  readonly waited: number;
}

/**
 * The turns at reading old events of the change feed, shared by every replaying stream and every
 * JSON page of one app: at most `size` of them read the log and hold what they read at once, and
 * the others wait in line, in the order they asked, at the cost of a promise each (no query, no
 * memory of events). A turn lasts from the read until the clients given what it read have taken
 * it (replays at one position share one read and one turn), so the events held in memory for old
 * reads are at most `size` batches, however many clients replay.
 */
export class FeedReaders {
  readonly #size: number;
  #active = 0;
  #waited = 0;
  readonly #queue: (() => void)[] = [];

  /** `size`: how many turns run at once; at least 1. */
  constructor(size: number) {
    if (!Number.isSafeInteger(size) || size < 1) throw new RangeError("FeedReaders needs at least one turn");
    this.#size = size;
  }

  /**
   * Resolves, once a turn is free, with the function that ends it (call it exactly once); or
   * with `undefined` when `signal` aborts first, having then taken no turn.
   */
  take(signal: AbortSignal): Promise<(() => void) | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    if (this.#active < this.#size) {
      this.#active++;
      return Promise.resolve(this.#release());
    }
    this.#waited++;
    return waitUntil<(() => void) | undefined>(
      (settle) => {
        const turn = () => {
          this.#active++;
          settle(this.#release());
        };
        this.#queue.push(turn);
        // Gone from the line once given its turn (shifted) or aborted (removed here).
        return () => {
          const at = this.#queue.indexOf(turn);
          if (at >= 0) this.#queue.splice(at, 1);
        };
      },
      { signal, otherwise: undefined },
    );
  }

  /** How many turns are taken, how many readers wait, and how many have waited. */
  stats(): FeedReaderStats {
    return { active: this.#active, waiting: this.#queue.length, waited: this.#waited };
  }

  #release(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
      this.#queue.shift()?.();
    };
  }
}
