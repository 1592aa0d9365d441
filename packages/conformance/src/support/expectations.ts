import { STATUS_CODES } from "node:http";
import { inspect, isDeepStrictEqual } from "node:util";
import type { Reply } from "../http/api-client.js";
import { Mismatch } from "../runner/mismatch.js";

/** The timestamp format of docs/posts.md#a-post-on-the-wire: local date-time with milliseconds, no zone. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$/;
/** Content type of every JSON error and of validation envelopes (docs/errors.md#the-envelope). */
export const JSON_UTF8 = "application/json; charset=utf-8";
/** Content type of the 404 and 401 texts of the posts endpoints (docs/errors.md#every-status). */
const TEXT_UTF8 = "text/plain; charset=utf-8";
/** The properties an error envelope may have (docs/errors.md#the-envelope). */
const ENVELOPE_KEYS = new Set(["timestamp", "status", "error", "path", "message", "errors"]);

/** Shows a value in a failure report, shortened. */
export function show(value: unknown): string {
  const text =
    typeof value === "string" ? JSON.stringify(value) : inspect(value, { depth: 4, breakLength: 120 });
  return text.length > 600 ? `${text.slice(0, 600)}… (${text.length} characters)` : text;
}

/** A reply as a failure report shows it: status, content type, body (shortened). */
export function describeReply(reply: Reply): string {
  const type = reply.headers.get("content-type");
  const body =
    reply.text.length > 500 ? `${reply.text.slice(0, 500)}… (${reply.bytes.length} bytes)` : reply.text;
  return `${reply.status}${type === null ? "" : ` (${type})`} ${body === "" ? "<empty body>" : body}`;
}

/** Fails unless `condition` holds. */
export function expectThat(condition: boolean, what: string, expected: string, actual: unknown): void {
  if (!condition) throw new Mismatch(what, expected, typeof actual === "string" ? actual : show(actual));
}

/** Fails unless `actual` deeply and strictly equals `expected`. */
export function expectEqual(actual: unknown, expected: unknown, what: string): void {
  if (!isDeepStrictEqual(actual, expected)) throw new Mismatch(what, show(expected), show(actual));
}

/** Fails unless the reply has `status`; the report shows the whole reply. */
export function expectStatus(reply: Reply, status: number): void {
  if (reply.status !== status)
    throw new Mismatch(`${reply.request}: status`, String(status), describeReply(reply));
}

/** Fails unless the reply has `status` and a header `name` equal to `value` (media types compare case-insensitively). */
export function expectHeader(reply: Reply, name: string, value: string): void {
  const actual = reply.headers.get(name);
  const same =
    name.toLowerCase() === "content-type" ? actual?.toLowerCase() === value.toLowerCase() : actual === value;
  if (!same) {
    throw new Mismatch(
      `${reply.request}: header ${name}`,
      show(value),
      `${show(actual)} in ${describeReply(reply)}`,
    );
  }
}

/** Parses the body as JSON, failing with the reply when it is not JSON. */
export function jsonOf(reply: Reply): unknown {
  try {
    return JSON.parse(reply.text);
  } catch {
    throw new Mismatch(`${reply.request}: body`, "JSON", describeReply(reply));
  }
}

/** A JSON object, or a failure naming `what`. */
export function objectOf(value: unknown, what: string): Record<string, unknown> {
  expectThat(
    typeof value === "object" && value !== null && !Array.isArray(value),
    what,
    "a JSON object",
    value,
  );
  return value as Record<string, unknown>;
}

/** Fails unless the object has exactly these property names. */
export function expectKeys(value: Record<string, unknown>, keys: readonly string[], what: string): void {
  expectEqual(Object.keys(value).sort(), [...keys].sort(), `${what}: property names`);
}

/** Fails unless the reply has `status` and no body at all. */
export function expectEmpty(reply: Reply, status: number): void {
  expectStatus(reply, status);
  expectThat(reply.bytes.length === 0, `${reply.request}: body`, "no body", describeReply(reply));
}

/** Fails unless the reply is `status` with `text/plain; charset=utf-8` and exactly `text`. */
export function expectText(reply: Reply, status: number, text: string): void {
  expectStatus(reply, status);
  expectHeader(reply, "content-type", TEXT_UTF8);
  expectEqual(reply.text, text, `${reply.request}: body`);
}

/**
 * Fails unless the reply is `status` with `application/json; charset=utf-8` and a body of
 * exactly one property, `error`, a non-empty string
 * (docs/authentication.md#invalid-tokens-401-on-every-path). Answers the message.
 */
export function expectErrorJson(reply: Reply, status = 401): string {
  expectStatus(reply, status);
  expectHeader(reply, "content-type", JSON_UTF8);
  const body = objectOf(jsonOf(reply), `${reply.request}: body`);
  expectKeys(body, ["error"], `${reply.request}: body`);
  expectThat(
    typeof body.error === "string" && body.error !== "",
    `${reply.request}: body.error`,
    "a message",
    body.error,
  );
  return body.error as string;
}

/** An error envelope as docs/errors.md#the-envelope defines it. */
export interface Envelope {
  readonly timestamp: string;
  readonly status: number;
  readonly error: string;
  readonly path: string;
  readonly message?: unknown;
  readonly errors?: unknown;
}

/**
 * Fails unless the reply is the envelope of `status`: JSON with charset, `timestamp` in the
 * contract's format, `status`, `error` the reason phrase of `http.STATUS_CODES`, `path` the
 * request path without its query, and nothing but `message` and `errors` besides (no stack,
 * no SQL). Answers the envelope.
 */
export function expectEnvelope(reply: Reply, status: number, path: string): Envelope {
  expectStatus(reply, status);
  expectHeader(reply, "content-type", JSON_UTF8);
  const what = `${reply.request}: envelope`;
  const body = objectOf(jsonOf(reply), what);
  const extra = Object.keys(body).filter((key) => !ENVELOPE_KEYS.has(key));
  expectThat(
    extra.length === 0,
    `${what} properties`,
    "only timestamp, status, error, path, message, errors",
    extra,
  );
  expectEqual(body.status, status, `${what}.status`);
  expectEqual(body.error, STATUS_CODES[status], `${what}.error`);
  expectEqual(body.path, path, `${what}.path`);
  expectThat(
    typeof body.timestamp === "string" && TIMESTAMP.test(body.timestamp),
    `${what}.timestamp`,
    "yyyy-MM-ddTHH:mm:ss.SSS",
    body.timestamp,
  );
  expectThat(
    !/\n\s+at |\bselect\b.*\bfrom\b|\binsert into\b/i.test(reply.text),
    `${what}`,
    "no stack trace or SQL",
    reply.text,
  );
  return body as unknown as Envelope;
}

/**
 * Fails unless the reply is a 400 envelope for a body the service could not take as an object
 * (malformed, empty, not an object, prototype keys): a `message` and no `errors`
 * (docs/errors.md#the-envelope).
 */
export function expectBodyRefused(reply: Reply, path: string): void {
  const envelope = expectEnvelope(reply, 400, path);
  expectThat(
    typeof envelope.message === "string" && envelope.message !== "",
    `${reply.request}: envelope.message`,
    "a message",
    envelope.message,
  );
  expectThat(!("errors" in envelope), `${reply.request}: envelope`, "no errors property", envelope);
}

/** One expected entry of a validation envelope's `errors`; no `message` means any message. */
export interface ExpectedFieldError {
  readonly field: string;
  readonly message?: string;
}

/**
 * Fails unless the reply is a 400 validation envelope whose `errors` name exactly these fields
 * (in any order), each `{field, message}` with the given message when one is given.
 */
export function expectFieldErrors(reply: Reply, path: string, fields: readonly ExpectedFieldError[]): void {
  const envelope = expectEnvelope(reply, 400, path);
  const what = `${reply.request}: envelope.errors`;
  expectThat(Array.isArray(envelope.errors), what, "an array", envelope.errors);
  const errors = (envelope.errors as unknown[]).map((entry) => objectOf(entry, `${what}[]`));
  expectEqual(
    errors.map((entry) => entry.field).sort(),
    fields.map((entry) => entry.field).sort(),
    `${what}: fields`,
  );
  for (const entry of errors) {
    expectKeys(entry, ["field", "message"], `${what}[${String(entry.field)}]`);
    const wanted = fields.find((field) => field.field === entry.field);
    if (wanted?.message !== undefined)
      expectEqual(entry.message, wanted.message, `${what}[${wanted.field}].message`);
    else
      expectThat(
        typeof entry.message === "string",
        `${what}[${String(entry.field)}].message`,
        "a string",
        entry.message,
      );
  }
}
