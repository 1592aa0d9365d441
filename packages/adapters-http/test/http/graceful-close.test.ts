import { Agent, request, STATUS_CODES } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { TIMESTAMP } from "../support/expectations.js";
import { buildTestApp, type TestApp } from "../support/test-app.js";

/** Far longer than any test here waits: a close that waits for it fails the test. */
const KEEP_ALIVE_MS = 60_000;
const CLOSE_WITHIN_MS = 3000;

function get(port: number, path: string, agent: Agent) {
  return new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          connection: res.headers.connection,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

/** Resolves when `promise` does, or fails after `ms`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    sleep(ms).then(() => {
      throw new Error(`${what} took longer than ${ms} ms`);
    }),
  ]);
}

async function untilStoppedListening(testApp: TestApp): Promise<void> {
  // The test's own timeout (20 s) is the deadline.
  await expect.poll(() => testApp.app.server.listening, { timeout: 20_000, interval: 10 }).toBe(false);
}

describe("closing the app while clients keep their connections open", () => {
  let testApp: TestApp | undefined;
  let closing: Promise<void> | undefined;
  afterEach(async () => {
    await (closing ?? testApp?.app.close());
    testApp = undefined;
    closing = undefined;
  });

  /** An app whose GET /ready waits for `release`, and the port it listens on. */
  const start = async () => {
    let release = () => {};
    let entered = () => {};
    const inReadiness = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    testApp = await buildTestApp({
      checkReady: () => {
        entered();
        return gate;
      },
      timeouts: { keepAliveMs: KEEP_ALIVE_MS },
    });
    await testApp.app.listen({ port: 0, host: "127.0.0.1" });
    return { app: testApp, port: (testApp.app.server.address() as AddressInfo).port, release, inReadiness };
  };

  it("answers the requests in flight with Connection: close, and close() does not wait for keep-alive", async () => {
    const { app, port, release, inReadiness } = await start();
    const agent = new Agent({ keepAlive: true });
    try {
      // Before the close: connections stay open for the next request.
      expect((await get(port, "/health", agent)).connection).toBe("keep-alive");
      const inFlight = get(port, "/ready", agent);
      await inReadiness;

      const startedClosing = performance.now();
      closing = app.app.close();
      await untilStoppedListening(app);
      release();

      const answered = await inFlight;
      expect(answered.status).toBe(200);
      expect(answered.connection).toBe("close");
      await within(closing, CLOSE_WITHIN_MS, "close()");
      expect(performance.now() - startedClosing).toBeLessThan(CLOSE_WITHIN_MS);
    } finally {
      agent.destroy();
    }
  });

  it("ends a connection that has sent nothing, which Node's close would wait for, and close() does not wait", async () => {
    const { app, port } = await start();
    const silent = connect(port, "127.0.0.1");
    const closedByServer = new Promise<void>((resolve) => silent.on("close", () => resolve()));
    await new Promise<void>((resolve) => silent.once("connect", () => resolve()));
    await sleep(20);
    const startedClosing = performance.now();
    closing = app.app.close();
    await within(closedByServer, CLOSE_WITHIN_MS, "the server ending the silent connection");
    await within(closing, CLOSE_WITHIN_MS, "close()");
    expect(performance.now() - startedClosing).toBeLessThan(CLOSE_WITHIN_MS);
  });

  it("answers a request that arrives on an open connection while closing with the 503 envelope", async () => {
    const { app, port } = await start();
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    const closedByServer = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    // A request under way when the close starts: its connection is not idle, so it stays open.
    socket.write("GET /api/v1/posts?size=1 HTTP/1.1\r\nHost: x\r\n");
    await sleep(50);
    closing = app.app.close();
    await untilStoppedListening(app);
    // An invalid token would be 401: the request is refused before authentication runs.
    socket.write("X-AUTH-TOKEN: not-a-token\r\n\r\n");
    await within(closedByServer, CLOSE_WITHIN_MS, "the server closing the connection");

    const text = Buffer.concat(chunks).toString();
    const head = text.slice(0, text.indexOf("\r\n\r\n"));
    expect(head).toMatch(/^HTTP\/1\.1 503 /);
    expect(head).toMatch(/^content-type: application\/json; charset=utf-8$/im);
    expect(head).toMatch(/^retry-after: 5$/im);
    expect(head).toMatch(/^connection: close$/im);
    expect(head).toMatch(/^x-content-type-options: nosniff$/im);
    expect(JSON.parse(text.slice(head.length + 4))).toStrictEqual({
      timestamp: expect.stringMatching(TIMESTAMP),
      status: 503,
      error: STATUS_CODES[503],
      path: "/api/v1/posts",
      message: expect.any(String),
    });
    await within(closing, CLOSE_WITHIN_MS, "close()");
  });
});
