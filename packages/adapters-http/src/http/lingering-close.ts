import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";

/**
 * The most of an unread body a connection is kept open for (Go's net/http reads the same
 * 256 KiB): reading more than that to save a reconnection costs more than the reconnection.
 */
const KEEP_ALIVE_REST_BYTES = 256 * 1024;
/** A draining connection from which nothing arrives for this long is closed. */
const QUIET_MS = 2000;
/** How often a draining connection is checked against its bounds. */
const CHECK_EVERY_MS = 100;
/** How long a draining connection still gets once the app starts closing. */
const CLOSING_GRACE_MS = 1000;
/** The time bound of a drain when the server has no request timeout. */
const FALLBACK_DRAIN_MS = 30_000;
/** Room above the contract's twice BODY_LIMIT, for chunk framing. */
const FRAMING_SLACK_BYTES = 1024 * 1024;

/** Options of {@link lingeringClose}. */
export interface LingeringCloseOptions {
  /** The app's body limit, in bytes: a drain discards at most twice as much (plus framing). */
  readonly bodyLimit: number;
}

type RequestListener = (request: IncomingMessage, response: ServerResponse) => void;

/** A connection being drained, as the app's close sees it. */
interface Drain {
  /** Ends the drain within `ms` at the latest. */
  shorten(ms: number): void;
}

/** Whether `request` has a body and not all of it has arrived. */
function hasUnreadBody(request: IncomingMessage): boolean {
  if (request.complete) return false;
  if (request.headers["transfer-encoding"] !== undefined) return true;
  return Number(request.headers["content-length"] ?? 0) > 0;
}

/** Whether what is left of `request`'s body is small enough to read and keep the connection. */
function restIsSmall(request: IncomingMessage): boolean {
  if (request.headers["transfer-encoding"] !== undefined) return false;
  return Number(request.headers["content-length"]) <= KEEP_ALIVE_REST_BYTES;
}

const plugin: FastifyPluginCallback<LingeringCloseOptions> = (app, options, done) => {
  const server = app.server;
  const maxDiscardedBytes = 2 * options.bodyLimit + FRAMING_SLACK_BYTES;
  const drainMs = server.requestTimeout > 0 ? server.requestTimeout : FALLBACK_DRAIN_MS;
  const drains = new Set<Drain>();
  // Connections that answered "close": RFC 9112 §9.6 forbids processing another request on them.
  const halfClosed = new WeakSet<Socket>();
  let closing = false;

  /**
   * Reads and discards what still arrives on `request`'s connection, within bounds: until the
   * body ends when the connection is kept (`keep`), else until the client closes its side.
   * Destroys the socket when the client goes quiet for QUIET_MS, sends more than twice the body
   * limit, or the request timeout (counted from `startedAt`) passes.
   */
  function drain(request: IncomingMessage, startedAt: number, keep: boolean): void {
    const socket = request.socket;
    if (socket.destroyed) return;
    const bytesAtStart = socket.bytesRead;
    let bytesSeen = bytesAtStart;
    let heardAt = performance.now();
    let endsAt = startedAt + drainMs;
    const entry: Drain = {
      shorten(ms) {
        endsAt = Math.min(endsAt, performance.now() + ms);
      },
    };
    if (closing) entry.shorten(CLOSING_GRACE_MS);
    // Polled: Node's parser drops a dumped body without emitting it, and a 'data' listener on the
    // socket would take the socket off the parser's fast path and stall that discarding.
    const check = setInterval(() => {
      const now = performance.now();
      if (socket.bytesRead !== bytesSeen) {
        bytesSeen = socket.bytesRead;
        heardAt = now;
      }
      if (bytesSeen - bytesAtStart > maxDiscardedBytes || now - heardAt >= QUIET_MS || now >= endsAt) {
        destroy();
      }
    }, CHECK_EVERY_MS);
    function stop() {
      clearInterval(check);
      socket.removeListener("end", destroy);
      socket.removeListener("close", stop);
      request.removeListener("end", bodyEnded);
      drains.delete(entry);
    }
    function destroy() {
      stop();
      socket.destroy();
    }
    // The connection goes on serving requests, unless the app is closing: then it is idle now.
    function bodyEnded() {
      if (closing) destroy();
      else stop();
    }
    drains.add(entry);
    // Once the client has closed its side, everything it sent has been read: closing now sends no reset.
    socket.prependOnceListener("end", destroy);
    socket.once("close", stop);
    // Node resumes a body nobody read; this one may have been read in part, then left paused.
    request.resume();
    if (keep) {
      request.once("end", bodyEnded);
    } else {
      halfClosed.add(socket);
      // FIN after the answer: the client sees the whole answer, then the end of the connection.
      socket.end();
    }
  }

  /**
   * Watches a request with a body until its response has finished. Closing a socket with unread
   * bytes makes the kernel answer them with a reset, and the reset discards the answer at the
   * client before it has read it. Node's own 'finish' listener either leaves the rest of the body
   * to be discarded as it arrives (keep-alive), or calls socket.destroySoon(): destroy the socket
   * as soon as the answer is written. Node has no lingering close (nginx's lingering_close, Go's
   * closeWriteAndWait), hence this one, in place of that destroySoon() for this one response.
   */
  function watch(request: IncomingMessage, response: ServerResponse): void {
    const startedAt = performance.now();
    let unread = false;
    // Runs just before Node's listener, which was added before the 'request' event.
    response.prependOnceListener("finish", () => {
      unread = hasUnreadBody(request) && !request.socket.destroyed;
      if (unread) {
        request.socket.destroySoon = () => {
          Reflect.deleteProperty(request.socket, "destroySoon");
          drain(request, startedAt, false);
        };
      }
    });
    // Runs just after it: the override is still there when Node kept the connection.
    response.once("finish", () => {
      if (unread && Object.hasOwn(request.socket, "destroySoon")) {
        Reflect.deleteProperty(request.socket, "destroySoon");
        drain(request, startedAt, true);
      }
    });
  }

  // Fastify's listener is wrapped rather than preceded: a request on a connection that answered
  // "close" must not reach it at all. Such a request gets no answer; its body is discarded.
  const handlers = server.listeners("request") as RequestListener[];
  server.removeAllListeners("request");
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    if (halfClosed.has(request.socket)) {
      request.resume();
      return;
    }
    if (hasUnreadBody(request)) watch(request, response);
    for (const handler of handlers) handler.call(server, request, response);
  });

  // Decided before the head is written, so that the client is told the connection will close.
  app.addHook("onSend", (request, reply, payload, next) => {
    if (hasUnreadBody(request.raw) && !restIsSmall(request.raw)) reply.header("connection", "close");
    next(null, payload);
  });

  app.addHook("preClose", (next) => {
    closing = true;
    for (const entry of drains) entry.shorten(CLOSING_GRACE_MS);
    next();
  });
  done();
};

/**
 * Makes an answer given before the request's body has been read (401, 403, 404, 405, 413, 415,
 * 503, whatever decided it) reach the client that is still sending that body, instead of being
 * lost to a reset. When a response finishes with part of its request's body still to come:
 * - if that rest is at most 256 KiB (by Content-Length), the connection is kept and the rest is
 *   read and discarded, as Node does, then the connection serves the next request;
 * - otherwise the answer says `Connection: close`, and the connection is closed gracefully: FIN
 *   after the answer, then what still arrives is read and discarded, until the client closes.
 * Either way the draining is bounded: at most twice the body limit (plus framing), no more than
 * QUIET_MS of silence, and no longer than the request timeout (`server.requestTimeout`) counted
 * from the request's arrival; past a bound the socket is destroyed. While the app closes, drains
 * get at most CLOSING_GRACE_MS more. No further request on a closing connection is processed.
 */
export const lingeringClose = fp(plugin, { name: "posts-lingering-close", fastify: "5.x" });
