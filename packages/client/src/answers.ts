import { parseRetryAfter } from "./backoff.js";
import type { ClientError, FieldError, Result } from "./result.js";
import type { Answer } from "./transport.js";

/** The failure an answer that is not the expected success stands for, by the service's contract. */
export function errorOf(answer: Answer): ClientError {
  const { status, maybeApplied } = answer;
  const body = parseJson(answer.text);
  const message = messageOf(body) ?? (answer.text === "" ? `HTTP ${status}` : answer.text);
  const base = { status, message, maybeApplied };
  const plainText = answer.headers.get("content-type")?.startsWith("text/plain") === true;
  switch (status) {
    case 400:
      return { kind: "validation", ...base, errors: fieldErrorsOf(body) };
    case 401:
      // The service answers "not the author" as plain text, an invalid token as JSON.
      return plainText ? { kind: "not-author", ...base } : { kind: "unauthorized", ...base };
    case 403:
      return { kind: "forbidden", ...base };
    case 404:
      return { kind: "not-found", ...base };
    case 409:
      return { kind: "conflict", ...base };
    case 412:
      return { kind: "precondition-failed", ...base };
    case 422:
      return { kind: "idempotency-key-reused", ...base };
    case 429:
      return {
        kind: "too-many-requests",
        ...base,
        retryAfterMs: parseRetryAfter(answer.headers.get("retry-after")),
      };
    case 503:
      return {
        kind: "unavailable",
        ...base,
        retryAfterMs: parseRetryAfter(answer.headers.get("retry-after")),
      };
    default:
      return { kind: "unexpected-status", ...base, body: answer.text };
  }
}

/** The JSON body of a successful answer with `status`, or the failure it stands for. */
export function jsonOf<T>(answer: Result<Answer>, status: number): Result<T> {
  if (!answer.ok) return answer;
  if (answer.value.status !== status) return { ok: false, error: errorOf(answer.value) };
  const body = parseJson(answer.value.text);
  if (body === undefined) return { ok: false, error: invalid(answer.value, "the body is not JSON") };
  return { ok: true, value: body as T };
}

/** A failure for a success that lacks what the contract promises. */
export function invalid(answer: Answer, what: string): ClientError {
  return {
    kind: "invalid-response",
    status: answer.status,
    message: `${answer.url}: ${what}`,
    maybeApplied: answer.maybeApplied,
  };
}

function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function messageOf(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { message, error } = body as { message?: unknown; error?: unknown };
  if (typeof message === "string") return message;
  return typeof error === "string" ? error : undefined;
}

function fieldErrorsOf(body: unknown): FieldError[] {
  const errors = (body as { errors?: unknown } | undefined)?.errors;
  return Array.isArray(errors) ? (errors as FieldError[]) : [];
}
