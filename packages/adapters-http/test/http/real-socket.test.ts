import { Agent, STATUS_CODES } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TIMESTAMP } from "../support/expectations.js";
import { tokenFor } from "../support/mint-token.js";
import { type Answer, send } from "../support/send-request.js";
import { buildTestApp, type TestApp } from "../support/test-app.js";

/** Sends raw bytes and answers everything the server wrote until it closed the connection. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.end(text));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("end", () => resolve(Buffer.concat(chunks).toString()));
    socket.on("error", reject);
  });
}

/** A raw HTTP answer split into status, lower-cased headers and body. */
function parseRaw(text: string): Answer {
  const end = text.indexOf("\r\n\r\n");
  const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(" ")[1]), headers, body: text.slice(end + 4) };
}

/** Writes `text` without ending the connection, and answers what came back once the server closed it. */
function rawUntilClosed(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(text));
    const chunks: Buffer[] = [];
    const giveUp = setTimeout(() => socket.destroy(), 6000);
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(giveUp);
      resolve(Buffer.concat(chunks).toString());
    });
  });
}

describe("over a real socket", () => {
  let testApp: TestApp;
  let port: number;

  beforeAll(async () => {
    testApp = await buildTestApp({ bodyLimit: 64 * 1024 });
    await testApp.app.listen({ port: 0, host: "127.0.0.1" });
    port = (testApp.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await testApp.app.close();
  });

  it("refuses X-AUTH-TOKEN sent twice (Node joins the values)", async () => {
    const user = await testApp.aUserWithToken();
    const answer = await raw(
      port,
      `GET /api/v1/user HTTP/1.1\r\nHost: localhost\r\nX-AUTH-TOKEN: ${user.token}\r\nX-AUTH-TOKEN: ${user.token}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toMatch(/content-type: application\/json; charset=utf-8/i);
    // One header is fine.
    const once = await raw(
      port,
      `GET /api/v1/user HTTP/1.1\r\nHost: localhost\r\nX-AUTH-TOKEN: ${user.token}\r\nConnection: close\r\n\r\n`,
    );
    expect(once).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("answers 413 to a chunked body that grows over the limit", async () => {
    const user = await testApp.aUserWithToken();
    const answer = await send(port, {
      method: "POST",
      path: "/api/v1/posts",
      headers: {
        "x-auth-token": user.token,
        "content-type": "application/json",
        "transfer-encoding": "chunked",
      },
      body: JSON.stringify({ title: "t", content: "x".repeat(100 * 1024) }),
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({
      status: 413,
      error: "Payload Too Large",
      path: "/api/v1/posts",
    });
  });

  it("answers the next request on the same agent after refusing one whose body it never read", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const forbidden = await send(port, {
      method: "POST",
      path: "/api/v1/posts",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ title: "t", content: "x".repeat(60 * 1024) }),
      agent,
    });
    expect(forbidden.status).toBe(403);
    const user = await testApp.aUserWithToken();
    const created = await send(port, {
      method: "POST",
      path: "/api/v1/posts",
      headers: {
        "content-type": "application/json",
        "x-auth-token": tokenFor(user),
        host: "posts.example:8080",
      },
      body: JSON.stringify({ title: "t", content: "c" }),
      agent,
    });
    expect(created.status).toBe(201);
    expect(created.headers.location).toMatch(/^http:\/\/posts\.example:8080\/api\/v1\/posts\/\d+$/);
    agent.destroy();
  });

  it("closes a request that does not arrive within timeouts.requestMs", async () => {
    const slow = await buildTestApp({ timeouts: { requestMs: 1000 } });
    await slow.app.listen({ port: 0, host: "127.0.0.1" });
    const slowPort = (slow.app.server.address() as AddressInfo).port;
    const started = performance.now();
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(slowPort, "127.0.0.1", () =>
        socket.write("POST /api/v1/posts HTTP/1.1\r\nHost: x\r\n"),
      );
      const chunks: Buffer[] = [];
      socket.on("data", (chunk) => chunks.push(chunk));
      socket.on("close", () => resolve(Buffer.concat(chunks).toString()));
      socket.on("error", () => {});
    });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(4000);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    await slow.app.close();
  });

  describe("refusals Node makes before any route runs", () => {
    const expectRefusal = (text: string, status: number, path: string) => {
      const answer = parseRaw(text);
      expect(answer.status, text).toBe(status);
      expect(answer.headers).toMatchObject({
        "content-type": "application/json; charset=utf-8",
        "content-length": String(Buffer.byteLength(answer.body)),
        connection: "close",
        "x-content-type-options": "nosniff",
      });
      expect(JSON.parse(answer.body)).toStrictEqual({
        timestamp: expect.stringMatching(TIMESTAMP),
        status,
        error: STATUS_CODES[status],
        path,
        message: expect.any(String),
      });
    };

    it("answers 431 in the envelope, with the path of the request line", async () => {
      const answer = await rawUntilClosed(
        port,
        `GET /api/v1/posts?size=1 HTTP/1.1\r\nHost: x\r\nX-AUTH-TOKEN: ${"a".repeat(20 * 1024)}\r\n\r\n`,
      );
      expectRefusal(answer, 431, "/api/v1/posts");
    });

    it("answers 400 in the envelope to a request Node cannot parse", async () => {
      expectRefusal(await rawUntilClosed(port, "HELLO\r\n\r\n"), 400, "/");
      expectRefusal(await rawUntilClosed(port, "GET /health HTTP/1.1\r\nHost x\r\n\r\n"), 400, "/health");
    });

    it("answers 408 in the envelope, with the request's path once its headers are in", async () => {
      const slow = await buildTestApp({ timeouts: { requestMs: 500 } });
      await slow.app.listen({ port: 0, host: "127.0.0.1" });
      const slowPort = (slow.app.server.address() as AddressInfo).port;
      try {
        const [headersUnfinished, bodyUnfinished] = await Promise.all([
          rawUntilClosed(slowPort, "GET /api/v1/posts HTTP/1.1\r\n"),
          rawUntilClosed(
            slowPort,
            "POST /api/v1/user?x=1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
          ),
        ]);
        expectRefusal(headersUnfinished, 408, "/");
        expectRefusal(bodyUnfinished, 408, "/api/v1/user");
      } finally {
        await slow.app.close();
      }
    });
  });

  it("closes a request whose body is trickled one byte at a time past timeouts.requestMs", async () => {
    const slow = await buildTestApp({ timeouts: { requestMs: 1000 } });
    await slow.app.listen({ port: 0, host: "127.0.0.1" });
    const slowPort = (slow.app.server.address() as AddressInfo).port;
    const started = performance.now();
    const closedAfter = await new Promise<number | undefined>((resolve) => {
      const socket = connect(slowPort, "127.0.0.1", () =>
        socket.write(
          "POST /api/v1/user HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{",
        ),
      );
      // Never silent for long, so only the request timeout can end it.
      const trickle = setInterval(() => socket.writable && socket.write("a"), 100);
      const giveUp = setTimeout(() => socket.destroy(), 6000);
      let closedAt: number | undefined;
      const closed = () => {
        closedAt ??= performance.now() - started;
      };
      socket.on("end", closed);
      socket.on("error", closed);
      socket.on("close", () => {
        clearInterval(trickle);
        clearTimeout(giveUp);
        resolve(closedAt);
      });
    });
    expect(closedAfter, "the connection is still open").toBeDefined();
    expect(closedAfter).toBeLessThan(4000);
    await slow.app.close();
  });
});
