import { backoffDelay, DEFAULT_RETRY, parseRetryAfter, type RetryPolicy } from "./backoff.js";
import type { ClientError, Result } from "./result.js";
import { waitUntil } from "./wait-until.js";

/** How the client reaches the service; every field but `baseUrl` has a default. */
export interface ClientOptions {
  /** Where the service answers, e.g. `http://127.0.0.1:8080`; paths such as `/api/v1/posts` are resolved against it. */
  readonly baseUrl: string | URL;
  /** The JWT from `users.login`, sent as `X-AUTH-TOKEN` on every request. */
  readonly token?: string;
  /** Per attempt: no answer (headers and body) within this many milliseconds is a `timeout`. Default 10 s. */
  readonly timeoutMs?: number;
  /** How failures that may be retried are retried; merged over {@link DEFAULT_RETRY}. */
  readonly retry?: Partial<RetryPolicy>;
  /** The fetch to use; the global one by default (Node ≥ 20). */
  readonly fetch?: typeof fetch;
  /** A draw in [0, 1) for the backoff's jitter; `Math.random` by default. */
  readonly random?: () => number;
}

/** What every call accepts. */
export interface CallOptions {
  /** Aborts the call, its retries and its waits: the result is then an `aborted` failure. */
  readonly signal?: AbortSignal;
  /** Overrides the client's per-attempt timeout for this call. */
  readonly timeoutMs?: number;
}

/** One request as the resources describe it. */
export interface Request {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  readonly path: string;
  readonly query?: Record<string, string | number | undefined>;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  /**
   * Whether sending it twice has the effect of sending it once, so that it may be retried after
   * a lost answer, a 429 or a 503: GET, DELETE, a POST with its Idempotency-Key, a PATCH with If-Match.
   */
  readonly idempotent: boolean;
}

/** A complete answer: status, headers and the whole body, read within the attempt's timeout. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly url: string;
  /** An earlier attempt of this call got no answer: it may have taken effect. */
  readonly maybeApplied: boolean;
}

type Attempt = { readonly answer: Omit<Answer, "maybeApplied"> } | { readonly error: ClientError };

/**
 * Sends requests with the client's retry policy: a network error or a timeout is retried only
 * for an idempotent request; a 429 or 503 likewise, after at least its Retry-After; the attempts
 * and the total time are bounded. Hand-written rather than taken from a library because the
 * package has no runtime dependency, and the decision (which request, which failure) is the
 * service's contract, not a generic one.
 */
export class Transport {
  readonly #options: ClientOptions;
  readonly #policy: RetryPolicy;

  constructor(options: ClientOptions) {
    this.#options = options;
    this.#policy = { ...DEFAULT_RETRY, ...options.retry };
  }

  /** How it was made: the change feed connects with the same options. */
  get options(): ClientOptions {
    return this.#options;
  }

  /** The same service, with `token` sent on every request. */
  withToken(token: string): Transport {
    return new Transport({ ...this.#options, token });
  }

  /** The request's answer (any status, 429 and 503 once retries are spent), or why none came. */
  async send(request: Request, call: CallOptions = {}): Promise<Result<Answer>> {
    const started = Date.now();
    let maybeApplied = false;
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.#attempt(request, call);
      let retryAfterMs: number | undefined;
      if ("error" in outcome) {
        if (outcome.error.kind === "aborted") return { ok: false, error: { ...outcome.error, maybeApplied } };
        // A refused connection carried nothing; any other failure may have lost an answer.
        if (!isRefused(outcome.error)) maybeApplied = true;
      } else {
        const { status, headers } = outcome.answer;
        if (status !== 429 && status !== 503) return { ok: true, value: { ...outcome.answer, maybeApplied } };
        retryAfterMs = parseRetryAfter(headers.get("retry-after"));
      }
      const last = (): Result<Answer> =>
        "error" in outcome
          ? { ok: false, error: { ...outcome.error, maybeApplied } }
          : { ok: true, value: { ...outcome.answer, maybeApplied } };
      if (!request.idempotent || attempt >= this.#policy.maxAttempts) return last();
      const delay = backoffDelay(attempt, this.#policy, retryAfterMs, this.#options.random);
      if (Date.now() - started + delay > this.#policy.maxElapsedMs) return last();
      if (!(await sleep(delay, call.signal))) return { ok: false, error: aborted(maybeApplied) };
    }
  }

  async #attempt(request: Request, call: CallOptions): Promise<Attempt> {
    const url = new URL(request.path, this.#options.baseUrl);
    for (const [name, value] of Object.entries(request.query ?? {}))
      if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { accept: "application/json", ...request.headers };
    if (this.#options.token !== undefined) headers["x-auth-token"] = this.#options.token;
    if (request.body !== undefined) headers["content-type"] = "application/json";
    // One controller per attempt, aborted when the wait for the answer ends by the timer or by
    // the caller's signal (waitUntil: nothing is left in a caller's long-lived signal).
    const attempt = new AbortController();
    const fetchImpl = this.#options.fetch ?? globalThis.fetch;
    const outcome = await waitUntil<Attempt | undefined>(
      (settle) => {
        void (async () => {
          try {
            const response = await fetchImpl(url, {
              method: request.method,
              headers,
              signal: attempt.signal,
              ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
            });
            const text = await response.text();
            settle({
              answer: { status: response.status, headers: response.headers, text, url: url.toString() },
            });
          } catch (cause) {
            settle({
              error: {
                kind: "network",
                status: undefined,
                message: `${request.method} ${url}: ${describe(cause)}`,
                cause,
                maybeApplied: false,
              },
            });
          }
        })();
        return () => attempt.abort(call.signal?.reason);
      },
      {
        signal: call.signal,
        timeoutMs: call.timeoutMs ?? this.#options.timeoutMs ?? 10_000,
        otherwise: undefined,
      },
    );
    if (outcome !== undefined) return outcome;
    if (call.signal?.aborted) return { error: aborted(false) };
    return {
      error: {
        kind: "timeout",
        status: undefined,
        message: `no answer from ${url} in time`,
        maybeApplied: false,
      },
    };
  }
}

function aborted(maybeApplied: boolean): ClientError {
  return { kind: "aborted", status: undefined, message: "aborted by the caller", maybeApplied };
}

/** Whether the connection was refused: the request never left, so nothing can have been applied. */
function isRefused(error: ClientError): boolean {
  if (error.kind !== "network") return false;
  const cause = (error.cause as { cause?: { code?: unknown } } | undefined)?.cause;
  return cause?.code === "ECONNREFUSED";
}

function describe(cause: unknown): string {
  const inner = (cause as { cause?: unknown } | undefined)?.cause;
  const text = cause instanceof Error ? cause.message : String(cause);
  return inner instanceof Error ? `${text} (${inner.message})` : text;
}

/** Waits `ms`; false when `signal` fired first. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return waitUntil(
    (settle) => {
      const timer = setTimeout(() => settle(true), ms);
      return () => clearTimeout(timer);
    },
    { signal, otherwise: false },
  );
}
