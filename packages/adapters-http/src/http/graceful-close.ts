import type { FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import type { SendEnvelope } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";

/** Options of {@link gracefulClose}. */
export interface GracefulCloseOptions {
  readonly sendEnvelope: SendEnvelope;
  /** Retry-After, in seconds, of the 503 answered while closing. */
  readonly retryAfterSeconds: number;
}

const plugin: FastifyPluginCallback<GracefulCloseOptions> = (app, options, done) => {
  const { sendEnvelope, retryAfterSeconds } = options;
  let closing = false;
  app.addHook("preClose", (next) => {
    closing = true;
    next();
  });
  app.addHook("onRequest", (_request, reply, next) => {
    if (!closing) {
      next();
      return;
    }
    reply.header("retry-after", String(retryAfterSeconds));
    sendEnvelope(reply, 503, { message: HTTP_MESSAGES.unavailable });
  });
  app.addHook("onSend", (_request, reply, payload, next) => {
    if (closing) reply.header("connection", "close");
    next(null, payload);
  });
  done();
};

/**
 * What `app.close()` needs to finish while clients keep their connections open. Node's
 * `server.close()` ends the connections idle at that moment only; one busy with a request would
 * stay open after its response until the keep-alive timeout (72 s), far past any grace period.
 * So once closing, every response carries `Connection: close`, and Node ends its connection
 * after it. A request that arrives on such a connection in the meantime is not run: it gets the
 * 503 envelope with Retry-After (in place of Fastify's own 503 body, `return503OnClosing`).
 * Register it before the hooks that should not run for those requests (authentication).
 */
export const gracefulClose = fp(plugin, { name: "posts-graceful-close", fastify: "5.x" });
