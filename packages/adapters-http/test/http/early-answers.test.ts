import { STATUS_CODES } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JSON_UTF8, TIMESTAMP } from "../support/expectations.js";
import {
  completeAnswer,
  type ImpatientClient,
  jsonBody,
  type RawAnswer,
  startImpatientClient,
} from "../support/impatient-client.js";
import { buildTestApp, type TestApp, type TestAppOverrides } from "../support/test-app.js";

/** Small, so the bodies stay small; every body of the first suite is over it. */
const BODY_LIMIT = 768 * 1024;
const BODY_SIZES = [1024 * 1024, BODY_LIMIT + 1024, 2 * BODY_LIMIT];
/** Enough runs of each case that a race between the answer and a reset shows. */
const REPEATS = 20;

const envelope = (status: number, path: string) => ({
  timestamp: expect.stringMatching(TIMESTAMP),
  status,
  error: STATUS_CODES[status],
  path,
  message: expect.any(String),
});

function expectAnswer(answer: RawAnswer | undefined, status: number, body: unknown): void {
  expect({ status: answer?.status, type: answer?.headers["content-type"] }).toEqual({
    status,
    type: JSON_UTF8,
  });
  expect(JSON.parse(answer?.body ?? "")).toStrictEqual(body);
}

async function listening(overrides: TestAppOverrides): Promise<{ testApp: TestApp; port: number }> {
  const testApp = await buildTestApp(overrides);
  await testApp.app.listen({ port: 0, host: "127.0.0.1" });
  return { testApp, port: (testApp.app.server.address() as AddressInfo).port };
}

describe("an answer decided before the body has been read reaches the client", () => {
  let testApp: TestApp;
  let port: number;
  let token: string;
  let client: ImpatientClient;

  beforeAll(async () => {
    client = startImpatientClient();
    ({ testApp, port } = await listening({ bodyLimit: BODY_LIMIT }));
    token = (await testApp.aUserWithToken()).token;
  });
  afterAll(async () => {
    await client.close();
    await testApp.app.close();
  });

  const json = { "Content-Type": "application/json" };
  const cases = [
    {
      name: "413, Content-Length over the limit",
      status: 413,
      headers: () => ({ ...json, "X-AUTH-TOKEN": token }),
      body: envelope(413, "/api/v1/posts"),
    },
    {
      name: "413, chunked body growing over the limit",
      status: 413,
      headers: () => ({ ...json, "X-AUTH-TOKEN": token }),
      chunked: true,
      body: envelope(413, "/api/v1/posts"),
    },
    {
      name: "401, invalid token",
      status: 401,
      headers: () => ({ ...json, "X-AUTH-TOKEN": "not-a-token" }),
      body: { error: expect.any(String) },
    },
    {
      name: "401, invalid token, Connection: close asked",
      status: 401,
      headers: () => ({ ...json, "X-AUTH-TOKEN": "not-a-token", Connection: "close" }),
      body: { error: expect.any(String) },
    },
    {
      name: "403, no token",
      status: 403,
      headers: () => json,
      body: envelope(403, "/api/v1/posts"),
    },
    {
      name: "403, no token, chunked",
      status: 403,
      headers: () => json,
      chunked: true,
      body: envelope(403, "/api/v1/posts"),
    },
    {
      name: "415, not JSON",
      status: 415,
      headers: () => ({ "Content-Type": "text/plain", "X-AUTH-TOKEN": token }),
      body: envelope(415, "/api/v1/posts"),
    },
    {
      name: "404, unknown path",
      status: 404,
      path: "/api/v1/nowhere",
      // Not JSON: Fastify would read a JSON body (or refuse it as too large) before answering 404.
      headers: () => ({ "Content-Type": "application/octet-stream" }),
      body: envelope(404, "/api/v1/nowhere"),
    },
    {
      name: "405, method without a handler",
      status: 405,
      method: "PUT",
      headers: () => ({ "Content-Type": "application/octet-stream" }),
      body: envelope(405, "/api/v1/posts"),
    },
  ];

  for (const testCase of cases) {
    for (const writes of ["whole", "chunks"] as const) {
      it(`${testCase.name}, body written ${writes === "whole" ? "in one call" : "in 256 KiB chunks"}`, async () => {
        for (const bodyBytes of BODY_SIZES) {
          for (let run = 0; run < REPEATS; run++) {
            const answer = await client
              .send(port, {
                method: testCase.method ?? "POST",
                path: testCase.path ?? "/api/v1/posts",
                headers: testCase.headers(),
                bodyBytes,
                chunked: testCase.chunked ?? false,
                writes,
              })
              .catch((error: Error) => {
                throw new Error(`${bodyBytes} bytes, run ${run}: ${error.message}`);
              });
            expectAnswer(answer, testCase.status, testCase.body);
          }
        }
      });
    }
  }

  it("answers the 503 of a closing app to a request that arrives with a large body", async () => {
    for (let run = 0; run < 10; run++) {
      const closing = await listening({ bodyLimit: BODY_LIMIT });
      try {
        const answering = client.send(closing.port, {
          method: "POST",
          path: "/api/v1/posts",
          headers: { ...json, "X-AUTH-TOKEN": token },
          bodyBytes: 2 * BODY_LIMIT,
          chunked: false,
          writes: run % 2 === 0 ? "whole" : "chunks",
          holdHeadMs: 100,
        });
        // The connection is busy with the head, so the close leaves it open for the request.
        await sleep(50);
        const closed = closing.testApp.app.close();
        const answer = await answering;
        expectAnswer(answer, 503, envelope(503, "/api/v1/posts"));
        expect(answer.headers["retry-after"]).toBe("5");
        await closed;
      } finally {
        await closing.testApp.app.close();
      }
    }
  });
});

/** A connection from this thread, recording what arrives, and when the server ends it. */
class Connection {
  readonly socket: Socket;
  /** Milliseconds from opening to the socket's close. */
  readonly closed: Promise<number>;
  /** Milliseconds from opening to the server's FIN. */
  readonly ended: Promise<number>;
  #received = Buffer.alloc(0);
  #read = 0;
  #arrived: () => void = () => {};

  constructor(port: number, options: { allowHalfOpen?: boolean } = {}) {
    const openedAt = performance.now();
    this.socket = connect({ port, host: "127.0.0.1", allowHalfOpen: options.allowHalfOpen ?? false });
    this.socket.on("data", (chunk: Buffer) => {
      this.#received = Buffer.concat([this.#received, chunk]);
      this.#arrived();
    });
    this.socket.on("error", () => {});
    // Not events.once: it would reject on the reset that ends a connection sending into a closed one.
    this.closed = new Promise((resolve) =>
      this.socket.once("close", () => resolve(performance.now() - openedAt)),
    );
    this.ended = new Promise((resolve) =>
      this.socket.once("end", () => resolve(performance.now() - openedAt)),
    );
  }

  /** Everything received so far. */
  get received(): Buffer {
    return this.#received;
  }

  /** The next complete answer, or undefined when the connection ends first. */
  async nextAnswer(): Promise<RawAnswer | undefined> {
    for (;;) {
      const answer = completeAnswer(this.#received.subarray(this.#read));
      if (answer !== undefined) {
        this.#read += answer.size;
        return answer;
      }
      if (this.socket.destroyed) return undefined;
      const arrived = new Promise<void>((resolve) => {
        this.#arrived = resolve;
      });
      await Promise.race([arrived, this.closed]);
    }
  }

  /** Writes 1 KiB chunks of a chunked body every `everyMs` until the connection ends. */
  trickle(everyMs: number): void {
    const chunk = `400\r\n${"x".repeat(1024)}\r\n`;
    const timer = setInterval(() => {
      if (this.socket.writable) this.socket.write(chunk);
    }, everyMs);
    void this.closed.then(() => clearInterval(timer));
  }

  /** Writes 64 KiB chunks of a chunked body as fast as they leave, until the connection ends. */
  async flood(): Promise<void> {
    const chunk = Buffer.from(`10000\r\n${"x".repeat(65536)}\r\n`);
    while (this.socket.writable) {
      if (!this.socket.write(chunk)) {
        await Promise.race([new Promise((resolve) => this.socket.once("drain", resolve)), this.closed]);
      }
    }
  }
}

const head = (lines: readonly string[]) => `${lines.join("\r\n")}\r\n\r\n`;

describe("draining after an early answer", () => {
  let testApp: TestApp | undefined;
  afterEach(async () => {
    await testApp?.app.close();
    testApp = undefined;
  });
  const start = async (overrides: TestAppOverrides = {}) => {
    const started = await listening({ bodyLimit: 64 * 1024, ...overrides });
    testApp = started.testApp;
    return started.port;
  };
  const refusedChunked = head([
    "POST /api/v1/posts HTTP/1.1",
    "Host: x",
    "Content-Type: application/json",
    "X-AUTH-TOKEN: not-a-token",
    "Transfer-Encoding: chunked",
  ]);

  it("keeps the connection of a request refused early, once its small body has arrived", async () => {
    const port = await start();
    const connection = new Connection(port);
    for (const bodyBytes of [100, 60 * 1024]) {
      const body = jsonBody(bodyBytes);
      connection.socket.write(
        head([
          "POST /api/v1/posts HTTP/1.1",
          "Host: x",
          "Content-Type: application/json",
          "X-AUTH-TOKEN: not-a-token",
          `Content-Length: ${body.length}`,
        ]) + body.toString(),
      );
      const refused = await connection.nextAnswer();
      expectAnswer(refused, 401, { error: expect.any(String) });
      expect(refused?.headers.connection).toBe("keep-alive");
      connection.socket.write(head(["GET /health HTTP/1.1", "Host: x"]));
      expect((await connection.nextAnswer())?.status).toBe(200);
    }
    connection.socket.destroy();
  });

  it("keeps the connection of a request whose body was read", async () => {
    const port = await start();
    const { token } = await (testApp as TestApp).aUserWithToken();
    const connection = new Connection(port);
    const body = JSON.stringify({ title: "t", content: "c" });
    connection.socket.write(
      head([
        "POST /api/v1/posts HTTP/1.1",
        "Host: x",
        "Content-Type: application/json",
        `X-AUTH-TOKEN: ${token}`,
        `Content-Length: ${body.length}`,
      ]) + body,
    );
    const created = await connection.nextAnswer();
    expect(created?.status).toBe(201);
    expect(created?.headers.connection).toBe("keep-alive");
    connection.socket.write(head(["GET /health HTTP/1.1", "Host: x"]));
    expect((await connection.nextAnswer())?.status).toBe(200);
    connection.socket.destroy();
  });

  it("closes, once the request timeout has passed, a connection that keeps sending after the answer", async () => {
    const port = await start({ timeouts: { requestMs: 1000 } });
    // Half-open, so that it goes on sending once the server has ended its side.
    const connection = new Connection(port, { allowHalfOpen: true });
    connection.socket.write(refusedChunked);
    connection.trickle(50);
    const answer = await connection.nextAnswer();
    expectAnswer(answer, 401, { error: expect.any(String) });
    expect(answer?.headers.connection).toBe("close");
    const closedAfter = await connection.closed;
    expect(closedAfter).toBeGreaterThanOrEqual(900);
    expect(closedAfter).toBeLessThan(2500);
    // The answer, then nothing: no second answer (such as a 408) after it.
    expect(connection.received.length).toBe(answer?.size);
  });

  it("closes a connection that sends more than twice the body limit after the answer", async () => {
    const port = await start();
    const connection = new Connection(port, { allowHalfOpen: true });
    connection.socket.write(refusedChunked);
    const flooding = connection.flood();
    expectAnswer(await connection.nextAnswer(), 401, { error: expect.any(String) });
    expect(await connection.closed).toBeLessThan(2000);
    await flooding;
  });

  it("closes a connection that goes quiet in the middle of a body it will not finish", async () => {
    const port = await start();
    const connection = new Connection(port, { allowHalfOpen: true });
    connection.socket.write(
      head([
        "POST /api/v1/posts HTTP/1.1",
        "Host: x",
        "Content-Type: application/json",
        "X-AUTH-TOKEN: not-a-token",
        `Content-Length: ${100 * 1024}`,
      ]) + "x".repeat(10 * 1024),
    );
    expectAnswer(await connection.nextAnswer(), 401, { error: expect.any(String) });
    // The connection was kept for the rest of the body: the server's FIN is its close.
    const closedAfter = await connection.ended;
    expect(closedAfter).toBeGreaterThanOrEqual(1500);
    expect(closedAfter).toBeLessThan(4000);
  });

  it("processes no request that follows an answer with Connection: close", async () => {
    const port = await start();
    const { token } = await (testApp as TestApp).aUserWithToken();
    const connection = new Connection(port);
    const tooLarge = jsonBody(100 * 1024);
    const small = JSON.stringify({ title: "t", content: "c" });
    const post = (length: number) =>
      head([
        "POST /api/v1/posts HTTP/1.1",
        "Host: x",
        "Content-Type: application/json",
        `X-AUTH-TOKEN: ${token}`,
        `Content-Length: ${length}`,
      ]);
    connection.socket.write(post(tooLarge.length) + tooLarge.toString() + post(small.length) + small);
    const answer = await connection.nextAnswer();
    expectAnswer(answer, 413, envelope(413, "/api/v1/posts"));
    expect(answer?.headers.connection).toBe("close");
    await connection.closed;
    expect(connection.received.length).toBe(answer?.size);
    const page = await (testApp as TestApp).app.inject({ method: "GET", url: "/api/v1/posts" });
    expect(page.json()).toMatchObject({ content: [] });
  });

  it("gives a draining connection little time once the app closes", async () => {
    const port = await start({ timeouts: { requestMs: 30_000 } });
    const closing = new Connection(port, { allowHalfOpen: true });
    closing.socket.write(refusedChunked);
    closing.trickle(50);
    const kept = new Connection(port);
    kept.socket.write(
      head([
        "POST /api/v1/posts HTTP/1.1",
        "Host: x",
        "Content-Type: application/json",
        "X-AUTH-TOKEN: not-a-token",
        `Content-Length: ${200 * 1024}`,
      ]),
    );
    kept.trickle(50);
    expect((await closing.nextAnswer())?.headers.connection).toBe("close");
    expect((await kept.nextAnswer())?.headers.connection).toBe("keep-alive");

    const startedClosing = performance.now();
    await (testApp as TestApp).app.close();
    testApp = undefined;
    expect(performance.now() - startedClosing).toBeLessThan(2500);
  });
});
