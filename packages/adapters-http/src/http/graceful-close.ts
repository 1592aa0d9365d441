import type { Socket } from "node:net";
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

// How long a connection may stay silent while the app closes before it is ended.
const SILENT_MS = 100;

const plugin: FastifyPluginCallback<GracefulCloseOptions> = (app, options, done) => {
  const { sendEnvelope, retryAfterSeconds } = options;
  let closing = false;
  // Each open connection and when it was accepted. Written by hand: Node has no list of them, and
  // the libraries that keep one (http-terminator, stoppable) close the server themselves, where
  // Fastify's close must.
  const accepted = new Map<Socket, number>();
  app.server.on("connection", (socket: Socket) => {
    accepted.set(socket, performance.now());
    socket.once("close", () => accepted.delete(socket));
  });
  const endSilent = () => {
    const now = performance.now();
    for (const [socket, at] of accepted) {
      if (socket.bytesRead === 0 && now - at >= SILENT_MS) socket.destroy();
    }
  };
  app.addHook("preClose", (next) => {
    closing = true;
    // Until the server has closed; an app that never listened has no connection to end.
    if (app.server.listening) {
      endSilent();
      const sweep = setInterval(endSilent, SILENT_MS);
      sweep.unref();
      app.server.once("close", () => clearInterval(sweep));
    }
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
 * stay open after its response until the keep-alive timeout (`timeouts.keepAliveMs`), which a
 * server behind a load balancer sets longer than the balancer's idle timeout, past any grace period.
 * So once closing, every response carries `Connection: close`, and Node ends its connection
 * after it. A request that arrives on such a connection in the meantime is not run: it gets the
 * 503 envelope with Retry-After (in place of Fastify's own 503 body, `return503OnClosing`).
 * And a connection that has sent nothing at all (a client's connection opened ahead of a
 * request, as browsers and HTTP clients' pools do) is not idle to Node, which would wait for it
 * as long: once closing, such a connection is ended after 100 ms of silence.
 * Register it before the hooks that should not run for those requests (authentication).
 */
export const gracefulClose = fp(plugin, { name: "posts-graceful-close", fastify: "5.x" });
