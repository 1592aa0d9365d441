import { inspect } from "node:util";
import type { FastifyBaseLogger } from "fastify";

/** A logger that keeps every entry in memory, so a test can read what would have been logged. */
export function capturingLogger(): { logger: FastifyBaseLogger; entries: unknown[][] } {
  const entries: unknown[][] = [];
  const record =
    (level: string) =>
    (...args: unknown[]) => {
      entries.push([level, ...args]);
    };
  const logger: FastifyBaseLogger = {
    level: "trace",
    fatal: record("fatal"),
    error: record("error"),
    warn: record("warn"),
    info: record("info"),
    debug: record("debug"),
    trace: record("trace"),
    silent: () => {},
    child: () => logger,
  } as unknown as FastifyBaseLogger;
  return { logger, entries };
}

/** Every logged entry as text (errors with message and stack), for `toContain` checks. */
export function logText(entries: unknown[][]): string {
  return entries.map((entry) => entry.map((part) => inspect(part, { depth: 3 })).join(" ")).join("\n");
}
