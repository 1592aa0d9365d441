import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from "fastify";
import { pathOf, type SendEnvelope } from "./error-envelope.js";
import { HTTP_MESSAGES } from "./http-messages.js";

// OPTIONS is left out: @fastify/cors answers it on every path, which would turn every 404 into 405.
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;

/**
 * Answers a request no route matched (Fastify would answer 404 for both cases): the 405
 * envelope with `Allow` when the path has routes for other methods, else the 404 envelope.
 */
export function notFoundHandler(app: FastifyInstance, sendEnvelope: SendEnvelope) {
  return (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const url = pathOf(request.url);
    const allowed = METHODS.filter(
      (method) => method !== request.method && app.findRoute({ method, url }) !== null,
    );
    if (allowed.length === 0) return sendEnvelope(reply, 404, { message: HTTP_MESSAGES.notFound });
    reply.header("allow", allowed.join(", "));
    return sendEnvelope(reply, 405, { message: HTTP_MESSAGES.methodNotAllowed });
  };
}

/**
 * An onRequest hook that answers a request no route matched right away, with
 * {@link notFoundHandler}'s 404 or 405, so that the answer does not wait for, or depend on, the
 * body: Fastify would otherwise parse it first, and a malformed JSON body sent to a path that does
 * not exist would be a 400 (docs/errors.md#answers-before-the-body-has-arrived lists 404 and 405 among the answers
 * decided before the body is read). Add it after authentication, whose 401 comes first on every path.
 */
export function notFoundBeforeBody(app: FastifyInstance, sendEnvelope: SendEnvelope): onRequestHookHandler {
  const answer = notFoundHandler(app, sendEnvelope);
  return (request, reply, done) => {
    if (request.is404) {
      answer(request, reply);
      return;
    }
    done();
  };
}
