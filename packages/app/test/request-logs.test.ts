import { buildHttpApp, JwtTokenIssuer } from "@posts/adapters-http";
import { InMemoryAttemptCounter, inMemoryDependencies } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import type { LogLevel } from "../src/config.js";
import { createLogger } from "../src/create-logger.js";

// The request loggers of the HTTP app over the service's own logger: made only when a request
// writes a line, each line still carries the request's id.

const SECRET = "request-logs-test-secret-0123456789abcdef";
const ISSUER = "request-logs-test";

type Line = Record<string, unknown>;

/** An app over in-memory ports whose logs, at `level`, are parsed into `lines`. */
async function appLoggingAt(level: LogLevel, logRequests = true) {
  const lines: Line[] = [];
  const logger = createLogger(level, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const deps = { ...inMemoryDependencies(), tokens: new JwtTokenIssuer({ secret: SECRET, issuer: ISSUER }) };
  const app = await buildHttpApp({
    deps,
    jwt: { secret: SECRET, issuer: ISSUER },
    bodyLimit: 1024 * 1024,
    timeZone: "UTC",
    attemptCounter: new InMemoryAttemptCounter(),
    loginThrottle: { max: 10, windowMs: 60_000 },
    timeouts: { requestMs: 30_000, connectionMs: 60_000, keepAliveMs: 72_000 },
    logger,
    logRequests,
  });
  return { app, deps, lines };
}

describe("request logs", () => {
  it("write nothing for a request that logs nothing at the level set", async () => {
    const { app, lines } = await appLoggingAt("warn");
    const response = await app.inject({ method: "GET", url: "/api/v1/posts/1" });
    expect(response.statusCode).toBe(404);
    expect(lines).toEqual([]);
    await app.close();
  });

  it("write an unexpected error with the id of the request it failed, one id per request", async () => {
    const { app, deps, lines } = await appLoggingAt("warn");
    deps.posts.findById = async () => {
      throw new TypeError("the repository broke");
    };
    expect((await app.inject({ method: "GET", url: "/api/v1/posts/1" })).statusCode).toBe(500);
    expect((await app.inject({ method: "GET", url: "/api/v1/posts/2" })).statusCode).toBe(500);

    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        msg: "unexpected error",
        service: "posts",
        reqId: expect.any(String),
      }),
      expect.objectContaining({
        level: 50,
        msg: "unexpected error",
        service: "posts",
        reqId: expect.any(String),
      }),
    ]);
    expect(lines[0]?.err).toMatchObject({ message: "the repository broke" });
    expect(lines[0]?.reqId).not.toBe(lines[1]?.reqId);
    await app.close();
  });

  it("write each request's incoming and completed lines with its id at info", async () => {
    const { app, lines } = await appLoggingAt("info");
    await app.inject({ method: "GET", url: "/api/v1/posts/1" });

    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: "incoming request",
        service: "posts",
        reqId: expect.any(String),
      }),
      expect.objectContaining({
        level: 30,
        msg: "request completed",
        service: "posts",
        reqId: lines[0]?.reqId,
      }),
    ]);
    expect(lines[0]?.req).toMatchObject({ method: "GET", url: "/api/v1/posts/1" });
    expect(lines[1]?.res).toMatchObject({ statusCode: 404 });
    await app.close();
  });

  it("write no request lines when request logging is off, errors still with the request's id", async () => {
    const { app, deps, lines } = await appLoggingAt("info", false);
    await app.inject({ method: "GET", url: "/api/v1/posts/1" });
    expect(lines).toEqual([]);
    deps.posts.findById = async () => {
      throw new TypeError("the repository broke");
    };
    await app.inject({ method: "GET", url: "/api/v1/posts/1" });
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, msg: "unexpected error", reqId: expect.any(String) }),
    ]);
    await app.close();
  });
});
