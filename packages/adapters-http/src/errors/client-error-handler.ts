import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { ConnectionError, FastifyInstance } from "fastify";
import { type BuildEnvelope, JSON_CONTENT_TYPE, pathOf } from "./error-envelope.js";
import { HTTP_MESSAGES } from "./http-messages.js";

/** Options of {@link clientErrorHandler}. */
export interface ClientErrorHandlerOptions {
  readonly buildEnvelope: BuildEnvelope;
  /** Headers every response carries (the security headers). */
  readonly headers: Readonly<Record<string, string>>;
}

// The statuses Node itself picks for these errors (lib/_http_server.js); anything else is 400.
const REFUSALS: Readonly<Record<string, { readonly status: number; readonly message: string }>> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: HTTP_MESSAGES.requestTimeout },
  HPE_HEADER_OVERFLOW: { status: 431, message: HTTP_MESSAGES.headersTooLarge },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, message: HTTP_MESSAGES.payloadTooLarge },
};
const BAD_REQUEST = { status: 400, message: HTTP_MESSAGES.badRequest };

// An origin-form request line, up to the query string.
const REQUEST_LINE = /^[A-Z]+ (\/[^\s?]*)/;

/** The parts of Node's socket state this handler reads; Node keeps them on the socket. */
interface HttpSocket extends Socket {
  readonly _httpMessage?: { readonly headersSent?: boolean; readonly req?: { readonly url?: string } } | null;
}

/**
 * Fastify's `clientErrorHandler`: answers the refusals Node makes before any route runs (408
 * request timeout, 431 headers too large, 400 unparsable request) with the contract's envelope
 * instead of Fastify's own body, then closes the connection, as Node does. The path is the
 * request's when Node knows it (headers already read) or the request line shows it, else "/".
 * Writes nothing once a response has started on the connection: that would corrupt it.
 */
export function clientErrorHandler(options: ClientErrorHandlerOptions) {
  const { buildEnvelope } = options;
  const extraHeaders = Object.entries(options.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");

  return function handleClientError(this: FastifyInstance, error: ConnectionError, socket: Socket): void {
    // A reset connection has been destroyed already: nobody is left to answer.
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const { status, message } = REFUSALS[error.code] ?? BAD_REQUEST;
    // Mostly network noise or scanners: Fastify's own handler logs these at trace too.
    this.log.trace({ err: error }, `client error, answered ${status}`);

    const inFlight = (socket as HttpSocket)._httpMessage;
    if (socket.writable && inFlight?.headersSent !== true) {
      const body = JSON.stringify(
        buildEnvelope(status, pathOfRefused(error, inFlight?.req?.url), { message }),
      );
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
          `Content-Type: ${JSON_CONTENT_TYPE}\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          "Connection: close\r\n" +
          `${extraHeaders}\r\n${body}`,
      );
    }
    socket.destroy(error);
  };
}

function pathOfRefused(error: ConnectionError, url: string | undefined): string {
  if (url !== undefined) return pathOf(url);
  // Fastify's type says otherwise, but Node gives the bytes it was parsing as a Buffer.
  const packet: unknown = error.rawPacket;
  if (!Buffer.isBuffer(packet)) return "/";
  const requestLine = REQUEST_LINE.exec(packet.toString("latin1"));
  return requestLine?.[1] ?? "/";
}
