import type { DomainError, DomainErrorOf, FieldError } from "@posts/domain";
import type { FastifyReply } from "fastify";
import { type SendEnvelope, sendErrorJson, TEXT_CONTENT_TYPE } from "./error-envelope.js";
import { HTTP_MESSAGES } from "./http-messages.js";

/** How one domain error travels over HTTP: a status and one of the contract's four body shapes. */
export type DomainErrorResponse =
  /** The generic error envelope, with a message or the failing fields. */
  | {
      readonly status: number;
      readonly body: "envelope";
      readonly message?: string;
      readonly errors?: readonly FieldError[];
    }
  /** `{"error": message}`, as for an invalid token. */
  | { readonly status: number; readonly body: "error-json"; readonly message: string }
  /** A plain UTF-8 text message. */
  | { readonly status: number; readonly body: "text"; readonly message: string }
  /** No body at all. */
  | { readonly status: number; readonly body: "empty" };

/**
 * The one mapping from domain errors to HTTP (docs/posts.md, docs/authentication.md, docs/conditional-requests.md, docs/idempotency.md). Typed over every `kind`, so a
 * new kind without a row here fails to compile.
 */
export const DOMAIN_ERROR_RESPONSES = {
  validation: (error) => ({ status: 400, body: "envelope", errors: error.errors }),
  // The specification shows an empty body for a modification that names no field.
  "empty-patch": () => ({ status: 400, body: "empty" }),
  "post-not-found": () => ({ status: 404, body: "text", message: HTTP_MESSAGES.postNotFound }),
  // The specification answers 401, not 403, to someone who is not the author.
  "not-post-author": (error) => ({
    status: 401,
    body: "text",
    message: error.action === "modify" ? HTTP_MESSAGES.notAuthorToModify : HTTP_MESSAGES.notAuthorToDelete,
  }),
  // docs/conditional-requests.md#change-safely-if-match--412: the If-Match named none of the post's current versions.
  "version-mismatch": () => ({ status: 412, body: "envelope", message: HTTP_MESSAGES.preconditionFailed }),
  "invalid-idempotency-key": () => ({
    status: 400,
    body: "envelope",
    message: HTTP_MESSAGES.invalidIdempotencyKey,
  }),
  // docs/idempotency.md#the-rules: the key already stands for a post with another title or content.
  "idempotency-key-reused": () => ({
    status: 422,
    body: "envelope",
    message: HTTP_MESSAGES.idempotencyKeyReused,
  }),
  "user-gone": () => ({ status: 401, body: "error-json", message: HTTP_MESSAGES.userGone }),
  "email-taken": () => ({ status: 409, body: "envelope", message: HTTP_MESSAGES.emailTaken }),
  "invalid-credentials": () => ({
    status: 401,
    body: "error-json",
    message: HTTP_MESSAGES.invalidCredentials,
  }),
} as const satisfies {
  readonly [K in DomainError["kind"]]: (error: DomainErrorOf<K>) => DomainErrorResponse;
};

/** Answers `error` as {@link DOMAIN_ERROR_RESPONSES} says. */
export function sendDomainError(
  reply: FastifyReply,
  error: DomainError,
  sendEnvelope: SendEnvelope,
): FastifyReply {
  // TypeScript cannot correlate the kind with its row's parameter; the table's type guarantees it.
  const respond = DOMAIN_ERROR_RESPONSES[error.kind] as (error: DomainError) => DomainErrorResponse;
  const response = respond(error);
  switch (response.body) {
    case "envelope": {
      const { message, errors } = response;
      return sendEnvelope(reply, response.status, {
        ...(message === undefined ? {} : { message }),
        ...(errors === undefined ? {} : { errors }),
      });
    }
    case "error-json":
      return sendErrorJson(reply, response.status, response.message);
    case "text":
      return reply.code(response.status).type(TEXT_CONTENT_TYPE).send(response.message);
    case "empty":
      return reply.code(response.status).send();
  }
}
