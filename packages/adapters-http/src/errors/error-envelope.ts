import { STATUS_CODES } from "node:http";
import type { FieldError } from "@posts/domain";
import type { FastifyReply } from "fastify";
import type { TimestampFormatter } from "../http/timestamp-formatter.js";

/** The JSON body of every generic error response (docs/errors.md#the-envelope). */
export interface ErrorEnvelope {
  readonly timestamp: string;
  readonly status: number;
  /** The reason phrase, as `http.STATUS_CODES` gives it. */
  readonly error: string;
  /** The request path without the query string. */
  readonly path: string;
  readonly message?: string;
  readonly errors?: readonly FieldError[];
}

/** What a caller adds to an envelope: a message, or the failing fields of a validation. */
export interface EnvelopeDetails {
  readonly message?: string;
  readonly errors?: readonly FieldError[];
}

/**
 * Sends a generic error envelope with `status` and `application/json; charset=utf-8`.
 * Never carries a stack trace or a library's message: only what the caller passes.
 */
export type SendEnvelope = (reply: FastifyReply, status: number, details?: EnvelopeDetails) => FastifyReply;

/** The content type of every JSON response this adapter writes. */
export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/** The path of a request URL: everything before the query string. */
export function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}

/** Builds the envelope of `status` for a request to `path` (without its query string). */
export type BuildEnvelope = (status: number, path: string, details?: EnvelopeDetails) => ErrorEnvelope;

/** Builds the {@link BuildEnvelope} of one app, stamping envelopes with `now` in its time zone. */
export function envelopeBuilder(now: () => Date, format: TimestampFormatter): BuildEnvelope {
  return (status, path, details = {}) => ({
    timestamp: format(now()),
    status,
    error: STATUS_CODES[status] ?? "Unknown",
    path,
    ...details,
  });
}

/** Builds the {@link SendEnvelope} of one app from its {@link BuildEnvelope}. */
export function envelopeSender(buildEnvelope: BuildEnvelope): SendEnvelope {
  return (reply, status, details) =>
    reply
      .code(status)
      .type(JSON_CONTENT_TYPE)
      .send(buildEnvelope(status, pathOf(reply.request.url), details));
}

/** Sends `{"error": message}` with `status`: the body of 401 for tokens, credentials and gone users. */
export function sendErrorJson(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).type(JSON_CONTENT_TYPE).send({ error: message });
}

/** The content type of the plain text messages the contract prescribes (404 and 401 on posts). */
export const TEXT_CONTENT_TYPE = "text/plain; charset=utf-8";
