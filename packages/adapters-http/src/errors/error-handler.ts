import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { BODY_LOST } from "../http/json-thread.js";
import { NO_ROOM_FOR_BODY } from "../http/large-bodies.js";
import type { SendEnvelope } from "./error-envelope.js";
import { HTTP_MESSAGES } from "./http-messages.js";

/** Options of {@link errorHandler}. */
export interface ErrorHandlerOptions {
  readonly sendEnvelope: SendEnvelope;
  /** Recognizes "the database is down or timed out": 503 instead of 500. */
  readonly isUnavailable?: (error: unknown) => boolean;
  /** Value of Retry-After on a 503. */
  readonly retryAfterSeconds: number;
  /** Told of each request answered 503 because `isUnavailable` recognized its error. */
  readonly onUnavailable?: (request: FastifyRequest) => void;
}

/** Fastify's own client errors, each with the status and fixed message the client gets. */
const FRAMEWORK_ERRORS: Readonly<Record<string, { readonly status: number; readonly message: string }>> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, message: HTTP_MESSAGES.unsupportedMediaType },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, message: HTTP_MESSAGES.payloadTooLarge },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, message: HTTP_MESSAGES.emptyBody },
  // Malformed JSON, and also `__proto__` or `constructor.prototype` keys (secure-json-parse).
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, message: HTTP_MESSAGES.malformedJson },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, message: HTTP_MESSAGES.badRequest },
  // The only validation this adapter does (see jsonObjectValidatorCompiler).
  FST_ERR_VALIDATION: { status: 400, message: HTTP_MESSAGES.bodyNotObject },
  FST_ERR_BAD_URL: { status: 400, message: HTTP_MESSAGES.badRequest },
};

const SERVICE_UNAVAILABLE = 503;

/**
 * The app's one error handler: every error that escapes a route, a hook or Fastify itself
 * ends here and leaves as the generic envelope (docs/errors.md#the-envelope). Fastify's client errors keep
 * their status with a fixed message; an error `isUnavailable` recognizes is 503 with
 * Retry-After; anything else is logged and answered 500. No response ever carries the
 * error's own message, stack or SQL.
 */
export function errorHandler(options: ErrorHandlerOptions) {
  const { sendEnvelope, isUnavailable, retryAfterSeconds, onUnavailable } = options;
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const known = FRAMEWORK_ERRORS[error.code];
    if (known !== undefined) return sendEnvelope(reply, known.status, { message: known.message });
    // A chunked body that found no room in the budget of large bodies, or a body lost with the
    // JSON thread that was parsing it: refused before the route ran.
    if (error.code === NO_ROOM_FOR_BODY || error.code === BODY_LOST) {
      if (error.code === BODY_LOST) request.log.error({ err: error }, "request body lost");
      reply.header("retry-after", String(retryAfterSeconds));
      return sendEnvelope(reply, SERVICE_UNAVAILABLE, { message: HTTP_MESSAGES.unavailable });
    }

    if (recognizes(isUnavailable, error, request)) {
      request.log.warn({ err: error }, "dependency unavailable");
      onUnavailable?.(request);
      reply.header("retry-after", String(retryAfterSeconds));
      return sendEnvelope(reply, SERVICE_UNAVAILABLE, { message: HTTP_MESSAGES.unavailable });
    }

    // Other errors Fastify or a plugin raised about the request itself (e.g. an unsupported
    // Accept-Version): their status is meaningful, their message is not ours to repeat.
    const status = error.statusCode;
    if (typeof status === "number" && status >= 400 && status < 500 && error.code?.startsWith("FST_")) {
      return sendEnvelope(reply, status, { message: HTTP_MESSAGES.badRequest });
    }

    request.log.error({ err: error }, "unexpected error");
    return sendEnvelope(reply, 500, { message: HTTP_MESSAGES.internal });
  };
}

function recognizes(
  isUnavailable: ((error: unknown) => boolean) | undefined,
  error: unknown,
  request: FastifyRequest,
): boolean {
  if (isUnavailable === undefined) return false;
  try {
    return isUnavailable(error);
  } catch (failure) {
    request.log.error({ err: failure }, "isUnavailable threw");
    return false;
  }
}
