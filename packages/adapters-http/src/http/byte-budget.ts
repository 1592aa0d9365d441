import { waitUntil } from "../events/wait-until.js";

/** What a {@link ByteBudget} holds and how many wait for it, at the moment of asking. */
export interface ByteBudgetStats {
  /** Bytes taken and not yet given back. */
  readonly heldBytes: number;
  /** Takers waiting in line. */
  readonly waiting: number;
}

interface Waiter {
  readonly bytes: number;
  readonly grant: () => void;
}

/**
 * A process-wide budget of bytes (a weighted semaphore): a taker asks for as many bytes as it is
 * about to hold, gets them at once while they fit, else waits in line in the order it asked, at
 * the cost of a promise (no query, nothing read). Strict order: a small taker never passes a large
 * one that waits, so the large one is never starved. A taker of more than the whole budget is let
 * in alone, once nothing else is held: what it holds is then bounded by the largest post, not by
 * the budget, and it still never runs beside others.
 *
 * Written here rather than taken from a library: the counting semaphores in use (the change
 * feed's `FeedReaders` among them) give turns, not bytes, and the few lines of a weighted one
 * with a deadline and an abort are less to review than a dependency.
 */
export class ByteBudget {
  readonly #capacity: number;
  #held = 0;
  readonly #line: Waiter[] = [];

  /** `capacity`: bytes that may be held at once; a positive integer. */
  constructor(capacity: number) {
    if (!(Number.isSafeInteger(capacity) && capacity >= 1)) {
      throw new RangeError(`a byte budget needs a positive integer capacity, got ${capacity}`);
    }
    this.#capacity = capacity;
  }

  /**
   * Resolves, once `bytes` fit, with the function that gives them back (call it once; later
   * calls do nothing); or with `undefined`, having taken nothing, when `timeoutMs` passes or
   * `signal` aborts first.
   */
  take(
    bytes: number,
    options: { readonly timeoutMs?: number; readonly signal?: AbortSignal },
  ): Promise<(() => void) | undefined> {
    if (this.#line.length === 0 && this.#fits(bytes)) return Promise.resolve(this.#hold(bytes));
    return waitUntil<(() => void) | undefined>(
      (settle) => {
        const waiter: Waiter = { bytes, grant: () => settle(this.#hold(bytes)) };
        this.#line.push(waiter);
        // Gone from the line once granted (shifted) or given up (removed here).
        return () => {
          const at = this.#line.indexOf(waiter);
          if (at >= 0) {
            this.#line.splice(at, 1);
            // The first in line may have been all that held back the ones behind it.
            if (at === 0) this.#admit();
          }
        };
      },
      { signal: options.signal, timeoutMs: options.timeoutMs, otherwise: undefined },
    );
  }

  /** What is held and how many wait. */
  stats(): ByteBudgetStats {
    return { heldBytes: this.#held, waiting: this.#line.length };
  }

  #fits(bytes: number): boolean {
    return this.#held === 0 || this.#held + bytes <= this.#capacity;
  }

  #hold(bytes: number): () => void {
    this.#held += bytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#held -= bytes;
      this.#admit();
    };
  }

  #admit(): void {
    for (let first = this.#line[0]; first !== undefined && this.#fits(first.bytes); first = this.#line[0]) {
      this.#line.shift();
      first.grant();
    }
  }
}
