import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
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
