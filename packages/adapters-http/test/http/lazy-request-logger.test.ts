import type { FastifyBaseLogger } from "fastify";
import { describe, expect, it } from "vitest";
import { lazyRequestLogger } from "../../src/http/lazy-request-logger.js";

/** A parent logger at `level` that records the children it makes and what they write. */
function parentAt(level: "info" | "warn") {
  const order = ["trace", "debug", "info", "warn", "error", "fatal"];
  const children: Record<string, unknown>[] = [];
  const written: unknown[][] = [];
  const child = (bindings: Record<string, unknown>) => {
    children.push(bindings);
    const write =
      (at: string) =>
      (...args: unknown[]) =>
        void written.push([at, bindings, ...args]);
    return { level, info: write("info"), warn: write("warn"), error: write("error"), child } as never;
  };
  const parent = {
    level,
    child,
    isLevelEnabled: (at: string) => order.indexOf(at) >= order.indexOf(level),
  } as unknown as FastifyBaseLogger;
  return { parent, children, written };
}

const make = (parent: FastifyBaseLogger, options: object = {}) =>
  lazyRequestLogger.call(undefined as never, parent, { reqId: "req-1" }, options, undefined as never);

describe("lazyRequestLogger", () => {
  it("makes no child while nothing is written at a level the parent writes", () => {
    const { parent, children, written } = parentAt("warn");
    const logger = make(parent);
    logger.info({ req: {} }, "incoming request");
    logger.debug("detail");
    expect(logger.level).toBe("warn");
    expect(children).toEqual([]);
    expect(written).toEqual([]);
  });

  it("makes the child once, with the request's bindings, when a line is written", () => {
    const { parent, children, written } = parentAt("warn");
    const logger = make(parent);
    logger.error({ err: "boom" }, "unexpected error");
    logger.warn("second");
    expect(children).toEqual([{ reqId: "req-1" }]);
    expect(written).toEqual([
      ["error", { reqId: "req-1" }, { err: "boom" }, "unexpected error"],
      ["warn", { reqId: "req-1" }, "second"],
    ]);
  });

  it("makes the child at once for a route's own options, as Fastify does", () => {
    const { parent, children } = parentAt("info");
    make(parent, { level: "debug" });
    expect(children).toEqual([{ reqId: "req-1" }]);
  });
});
