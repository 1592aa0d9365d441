/** The outcome of every call: a value, or a failure as a typed value. The client never throws for an HTTP answer. */
export type Result<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: ClientError };

/** One refused field of a 400, as the service lists them. */
export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/**
 * Why a call failed. `kind` is what a caller switches on; `status` is the HTTP status when there
 * was an answer. `maybeApplied` is true when an earlier attempt's answer was lost (network error
 * or timeout), so the request may have taken effect before this failure was seen.
 */
export type ClientError =
  /** 400: the request was refused as it stands; `errors` lists the refused fields (empty for a body-level refusal). */
  | Failure<"validation", { readonly errors: readonly FieldError[] }>
  /** 401 with a JSON body: the token is invalid, expired or its user is gone; or a login with wrong credentials. */
  | Failure<"unauthorized">
  /** 403: no token, or a token without the user role. */
  | Failure<"forbidden">
  /** 404: no such post (or path). */
  | Failure<"not-found">
  /** 401 as plain text on PATCH/DELETE: the token's user is not the post's author. */
  | Failure<"not-author">
  /**
   * 412: the post changed since the version the update or delete was based on; nothing changed.
   * Read it again and decide. With `maybeApplied`, the change it found may be this call's own
   * earlier attempt, whose answer was lost.
   */
  | Failure<"precondition-failed">
  /** 409: the email is already registered. */
  | Failure<"conflict">
  /** 422: the Idempotency-Key was used before with another title or content; nothing created. */
  | Failure<"idempotency-key-reused">
  /** 429, still refused after the retries the budget allowed; `retryAfterMs` is the service's advice. */
  | Failure<"too-many-requests", { readonly retryAfterMs: number | undefined }>
  /** 503, still refused after the retries the budget allowed; `retryAfterMs` is the service's advice. */
  | Failure<"unavailable", { readonly retryAfterMs: number | undefined }>
  /** 413, 415 or another status this client does not expect from the service (500 included). */
  | Failure<"unexpected-status", { readonly body: string }>
  /** A success whose answer lacks what the contract promises (e.g. a 201 without Location). */
  | Failure<"invalid-response">
  /** The change feed cannot resume where it was asked to: those events are no longer kept. */
  | Failure<"gone">
  /** No answer: connection refused or reset, DNS, TLS… (after the retries allowed, if any). */
  | Failure<"network", { readonly cause: unknown }>
  /** No answer within the per-attempt timeout (after the retries allowed, if any). */
  | Failure<"timeout">
  /** The caller's AbortSignal fired; no retry follows. */
  | Failure<"aborted">;

/** The fields every failure has, plus those of its kind. */
export type Failure<K extends string, Extra = unknown> = {
  readonly kind: K;
  readonly status: number | undefined;
  readonly message: string;
  readonly maybeApplied: boolean;
} & Extra;

/** The kinds of {@link ClientError}. */
export type ClientErrorKind = ClientError["kind"];
