/** How the client retries what it may retry. Every field has a default (see {@link DEFAULT_RETRY}). */
export interface RetryPolicy {
  /** Attempts in all, the first included; 1 turns retrying off. */
  readonly maxAttempts: number;
  /** The first backoff's upper bound; each later one doubles it. */
  readonly baseDelayMs: number;
  /** No single wait is longer, unless the service's Retry-After asks for more (then no retry exceeds the budget). */
  readonly maxDelayMs: number;
  /** The budget of one call, from its first attempt to the start of its last: no retry starts later. */
  readonly maxElapsedMs: number;
}

/** Four attempts, 200 ms doubling to at most 5 s between them, within 30 s in all. */
export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
  maxElapsedMs: 30_000,
};

/**
 * The wait before retry number `retry` (1 for the first retry): "full jitter" exponential backoff,
 * a uniform draw in [0, min(maxDelay, base·2^(retry−1))], so that clients refused together do not
 * come back together; never less than the service's `retryAfterMs` when it gave one.
 * `random` is a draw in [0, 1).
 */
export function backoffDelay(
  retry: number,
  policy: RetryPolicy,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  const jittered = Math.floor(random() * ceiling);
  return retryAfterMs === undefined ? jittered : Math.max(retryAfterMs, jittered);
}

/**
 * A `Retry-After` value in milliseconds: delay-seconds or an HTTP-date (RFC 9110 §10.2.3), from
 * `now`; undefined when absent or unreadable, 0 for a date already passed.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
