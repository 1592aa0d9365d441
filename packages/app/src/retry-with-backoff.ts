import { setTimeout as sleep } from "node:timers/promises";

/** How {@link retryWithBackoff} paces and bounds its attempts. */
export interface RetryOptions {
  /** Time after the first attempt beyond which no new attempt starts. 0 means a single attempt. */
  readonly timeoutMs: number;
  /** Whether a failure may go away by itself; any other failure is thrown at once. */
  readonly isRetryable: (error: unknown) => boolean;
  /** Called before each wait, e.g. to log that the database is not answering yet. */
  readonly onRetry?: (info: {
    readonly error: unknown;
    readonly attempt: number;
    readonly delayMs: number;
  }) => void;
  /** Stops the waiting (a shutdown signal during start-up); the abort reason is thrown. */
  readonly signal?: AbortSignal;
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Injected so tests need not wait; defaults to the wall clock. */
  readonly now?: () => number;
}

/**
 * Runs `operation` until it succeeds, waiting longer after each retryable failure (doubling,
 * with jitter so that several instances do not hammer a recovering server in step, capped at
 * `maxDelayMs` and at the deadline). Rejects with the last failure when it is not retryable or
 * when the deadline leaves no room for another attempt.
 */
export async function retryWithBackoff<T>(operation: () => Promise<T>, options: RetryOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  let delayMs = options.initialDelayMs ?? 250;
  const maxDelayMs = options.maxDelayMs ?? 5000;
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await operation();
    } catch (error) {
      const remainingMs = deadline - now();
      if (!options.isRetryable(error) || remainingMs <= 0) throw error;
      const waitMs = Math.min(remainingMs, Math.round(delayMs * (0.5 + Math.random() / 2)));
      options.onRetry?.({ error, attempt, delayMs: waitMs });
      await sleep(waitMs, undefined, options.signal === undefined ? undefined : { signal: options.signal });
      delayMs = Math.min(delayMs * 2, maxDelayMs);
    }
  }
}
