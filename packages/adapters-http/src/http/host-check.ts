import { isIPv6 } from "node:net";
import type { FastifyPluginCallback } from "fastify";
import fp from "fastify-plugin";
import type { SendEnvelope } from "../errors/error-envelope.js";
import { HTTP_MESSAGES } from "../errors/http-messages.js";

// RFC 3986 §3.2.2–3.2.3: a bracketed IP literal or a reg-name (unreserved, sub-delims and
// percent-encoded octets, which also spells an IPv4 address), then an optional port of digits.
// Written out here because Node checks a Host header's characters only as a header value, where
// quotes, angle brackets and spaces are allowed; the WHATWG URL parser would repair a bad host
// rather than refuse it.
const HOST = /^(?:\[([0-9A-Fa-f:.]+)\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+)(?::([0-9]{1,5}))?$/;

/**
 * Whether `value` is a valid `host[:port]` (RFC 3986 §3.2.2–3.2.3): a registered name or IPv4
 * address, or an IPv6 address in brackets, and a port of 1 to 5 digits up to 65535.
 */
export function isValidHost(value: string): boolean {
  const match = HOST.exec(value);
  if (match === null) return false;
  const [, ipv6, port] = match;
  if (ipv6 !== undefined && !isIPv6(ipv6)) return false;
  return port === undefined || Number(port) <= 65_535;
}

/**
 * Hosts found valid, so that the check of a request is a lookup: the clients of one service send
 * a handful of Host values, and the pattern above is a measurable share of a lone GET's CPU.
 * Bounded by emptying it when full, so that clients sending ever new hosts cost a check each, as
 * without it, and no memory.
 */
class ValidHosts {
  static readonly #MAX = 64;
  readonly #known = new Set<string>();

  /** {@link isValidHost}, remembered when true. */
  has(value: string): boolean {
    if (this.#known.has(value)) return true;
    if (!isValidHost(value)) return false;
    if (this.#known.size >= ValidHosts.#MAX) this.#known.clear();
    this.#known.add(value);
    return true;
  }
}

/** Options of {@link hostCheck}. */
export interface HostCheckOptions {
  readonly sendEnvelope: SendEnvelope;
}

const plugin: FastifyPluginCallback<HostCheckOptions> = (app, { sendEnvelope }, done) => {
  const valid = new ValidHosts();
  app.addHook("onRequest", (request, reply, next) => {
    // The Host header, and the host the app believes (X-Forwarded-Host when trustProxy says so),
    // which is what Location and Link carry. Absent is allowed: HTTP/1.0 has no Host.
    const header = request.headers.host;
    const host = request.host;
    if ((header === undefined || valid.has(header)) && (host === "" || host === header || valid.has(host))) {
      next();
      return;
    }
    sendEnvelope(reply, 400, { message: HTTP_MESSAGES.invalidHost });
  });
  done();
};

/**
 * Answers a 400 envelope, on every path and before anything else reads the request, when the
 * `Host` header or the host the app takes from `X-Forwarded-Host` (with `trustProxy`) is not a
 * valid `host[:port]`, so that the host written into `Location` and `Link` is always a valid one.
 */
export const hostCheck = fp(plugin, { name: "posts-host-check", fastify: "5.x" });
