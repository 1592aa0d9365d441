import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import { LARGE_BODY_ABOVE_BYTES } from "./large-bodies.js";

/** Options of {@link expectContinue}. */
export interface ExpectContinueOptions {
  /** The app's body limit, in bytes: a declared length above it is refused without `100 Continue`. */
  readonly bodyLimit: number;
}

const plugin: FastifyPluginCallback<ExpectContinueOptions> = (app, { bodyLimit }, done) => {
  const server = app.server;
  // Node's 'checkContinue' (Node's docs: http.Server event 'checkContinue'): with a listener,
  // Node no longer writes `100 Continue` by itself nor emits 'request' for such a request.
  server.on("checkContinue", (request: IncomingMessage, response: ServerResponse) => {
    // Past the limit the body is not asked for: the request runs without it, and the app answers
    // before reading a byte (401 or 403 first, then 415 or 413), as for any refused body. A large
    // body is asked for by largeBodies, once it has room (else the answer is 503).
    if (!(Number(request.headers["content-length"]) > Math.min(bodyLimit, LARGE_BODY_ABOVE_BYTES))) {
      response.writeContinue();
    }
    server.emit("request", request, response);
  });
  done();
};

/**
 * Answers `Expect: 100-continue` as Node does, with two exceptions: a request whose
 * `Content-Length` is over `bodyLimit` gets its final answer (413, or whatever the checks
 * before the body decide) instead of `100 Continue`, so the client never sends a body the
 * server will not read; one over `LARGE_BODY_ABOVE_BYTES` gets `100 Continue` from
 * `largeBodies` once its body has room, or its final answer (503) if none comes.
 */
export const expectContinue = fp(plugin, { name: "posts-expect-continue", fastify: "5.x" });
