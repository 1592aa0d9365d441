import type { DestinationStream, Logger } from "pino";
import { pino } from "pino";
import type { LogLevel } from "./config.js";

/**
 * Log paths whose values are replaced before a line is written: credentials in request headers
 * and any password, hash or secret a log call might carry (docs/operations.md#logs: no log line
 * carries a password or a hash). Fastify's default request serializer logs no headers; this is the
 * net under it, for a serializer or a log call that does.
 */
export const REDACTED_PATHS: readonly string[] = [
  'req.headers["x-auth-token"]',
  "req.headers.authorization",
  "req.headers.cookie",
  "password",
  "passwordHash",
  "secret",
  "*.password",
  "*.passwordHash",
  "*.secret",
];

/**
 * The service's one logger: JSON lines at `level`, on stdout unless a destination is given.
 * The HTTP adapter makes request-scoped children of it that carry the request id.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: "posts" },
    redact: { paths: [...REDACTED_PATHS], censor: "[redacted]" },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
