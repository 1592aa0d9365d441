import { request as httpRequest, STATUS_CODES } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChangeEventLog } from "@posts/domain";
import { InMemoryChangeEventLog } from "@posts/domain/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStream, type StreamMessage } from "../support/event-stream-client.js";
import { JSON_UTF8, TIMESTAMP } from "../support/expectations.js";
import { send } from "../support/send-request.js";
import { buildTestApp, type TestApp } from "../support/test-app.js";

const EVENTS = "/api/v1/posts/events";
const HEARTBEAT_MS = 300;

describe("GET /api/v1/posts/events as Server-Sent Events, on a real socket", () => {
  let testApp: TestApp;
  let port: number;
  let token: string;

  beforeAll(async () => {
    testApp = await buildTestApp({ eventStreamHeartbeatMs: HEARTBEAT_MS });
    await testApp.app.listen({ port: 0, host: "127.0.0.1" });
    port = (testApp.app.server.address() as AddressInfo).port;
    token = (await testApp.aUserWithToken()).token;
  });
  afterAll(async () => {
    await testApp.app.close();
  });

  const create = async (title = "제목") => {
    const response = await testApp.app.inject({
      method: "POST",
      url: "/api/v1/posts",
      headers: { "x-auth-token": token },
      payload: { title, content: "본문" },
    });
    expect(response.statusCode).toBe(201);
    return Number(response.headers.location?.toString().split("/").at(-1));
  };
  const lastNumber = async () =>
    (await testApp.app.inject({ method: "GET", url: `${EVENTS}?after=0&limit=1000` })).json().next as number;
  const ids = (messages: StreamMessage[]) =>
    messages.filter((m) => m.id !== undefined).map((m) => Number(m.id));

  it("starts at the current end without Last-Event-ID, and sends each new change within a second", async () => {
    await create("before");
    const end = await lastNumber();
    const stream = await openStream(port, EVENTS);
    try {
      expect(stream.response.statusCode).toBe(200);
      expect(stream.response.headers["content-type"]).toBe("text/event-stream");
      expect(stream.response.headers["cache-control"]).toBe("no-cache");
      const started = Date.now();
      const id = await create("after");
      await stream.until((messages) => ids(messages).length >= 1, 1000);
      expect(Date.now() - started).toBeLessThan(1000);
      const [message] = stream.events();
      expect(message?.id).toBe(String(end + 1));
      expect(message?.event).toBe("post.created");
      const cloudEvent = JSON.parse(message?.data ?? "");
      expect(cloudEvent).toMatchObject({ id: String(end + 1), type: "post.created", subject: String(id) });
      expect(cloudEvent.data).toEqual(
        (await testApp.app.inject({ method: "GET", url: `/api/v1/posts/${id}` })).json(),
      );
    } finally {
      stream.close();
    }
  });

  it("resumes after Last-Event-ID or ?after=, the header winning, then follows new changes in order", async () => {
    const start = await lastNumber();
    for (let i = 0; i < 3; i++) await create(`r${i}`);
    const byHeader = await openStream(port, `${EVENTS}?after=0`, { "last-event-id": String(start + 1) });
    const byQuery = await openStream(port, `${EVENTS}?after=${start}`);
    try {
      await byHeader.until((messages) => ids(messages).length >= 2);
      await byQuery.until((messages) => ids(messages).length >= 3);
      for (let i = 0; i < 20; i++) await create(`n${i}`);
      await byHeader.until((messages) => ids(messages).length >= 22);
      await byQuery.until((messages) => ids(messages).length >= 23);
      expect(ids(byHeader.messages)).toEqual(Array.from({ length: 22 }, (_, i) => start + 2 + i));
      expect(ids(byQuery.messages)).toEqual(Array.from({ length: 23 }, (_, i) => start + 1 + i));
    } finally {
      byHeader.close();
      byQuery.close();
    }
  });

  it("sends a keep-alive comment while nothing happens", async () => {
    const stream = await openStream(port, EVENTS);
    try {
      await stream.until(
        (messages) => messages.filter((m) => m.comment === "keep-alive").length >= 2,
        HEARTBEAT_MS * 5,
      );
      expect(stream.events()).toEqual([]);
    } finally {
      stream.close();
    }
  });

  it("writes a large event a slice at a time to a client that pauses for several heartbeats, whole and intact", async () => {
    const start = await lastNumber();
    const content = "큰 본문 ".repeat(400_000);
    const created = await testApp.app.inject({
      method: "POST",
      url: "/api/v1/posts",
      headers: { "x-auth-token": token },
      payload: { title: "large", content },
    });
    expect(created.statusCode).toBe(201);
    // A client that takes the first chunk, then reads nothing for several heartbeats.
    const text = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const request = httpRequest(
        {
          port,
          host: "127.0.0.1",
          path: `${EVENTS}?after=${start}`,
          headers: { accept: "text/event-stream" },
        },
        (response) => {
          response.once("data", (chunk: Buffer) => {
            chunks.push(chunk);
            response.pause();
            setTimeout(() => {
              response.on("data", (more: Buffer) => {
                chunks.push(more);
                if (Buffer.concat(chunks).includes(`id: ${start + 1}\n`) && more.includes("\n\n")) {
                  request.destroy();
                  resolve(Buffer.concat(chunks).toString("utf8"));
                }
              });
              response.resume();
            }, HEARTBEAT_MS * 4);
          });
        },
      );
      request.on("error", reject);
      request.end();
    });
    const at = text.indexOf(`id: ${start + 1}\n`);
    const message = text.slice(at, text.indexOf("\n\n", at));
    expect(message).not.toContain("keep-alive");
    const data = message.split("\n").find((line) => line.startsWith("data: ")) ?? "";
    expect(JSON.parse(data.slice("data: ".length)).data.content).toBe(content);
  });

  it("answers 400 for a Last-Event-ID or after that is not a non-negative integer", async () => {
    for (const [path, headers] of [
      [EVENTS, { "last-event-id": "x" }],
      [`${EVENTS}?after=-3`, {}],
    ] as const) {
      const response = await testApp.app.inject({
        method: "GET",
        url: path,
        headers: { accept: "text/event-stream", ...headers },
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ status: 400, error: "Bad Request", path: EVENTS });
    }
  });
});

describe("an event stream resumed before the retention", () => {
  it("opens with event: reset naming the oldest event kept, then sends from it", async () => {
    const testApp = await buildTestApp();
    try {
      await testApp.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = testApp.app.server.address() as AddressInfo;
      const { token } = await testApp.aUserWithToken();
      for (let i = 0; i < 5; i++) {
        await testApp.app.inject({
          method: "POST",
          url: "/api/v1/posts",
          headers: { "x-auth-token": token },
          payload: { title: `t${i}`, content: "c" },
        });
      }
      await testApp.deps.database.events.deleteNumberedBefore(new Date(Date.now() + 60_000));
      const stream = await openStream(port, EVENTS, { "last-event-id": "2" });
      try {
        await stream.until((messages) => messages.some((m) => m.id === "5"));
        const [reset, first] = stream.messages.filter((m) => m.comment === undefined);
        expect(reset).toEqual({ event: "reset", data: '{"oldest":5}' });
        expect(first?.id).toBe("5");
      } finally {
        stream.close();
      }
      // Resuming right before the oldest kept is no reset.
      const fine = await openStream(port, `${EVENTS}?after=4`);
      try {
        await fine.until((messages) => messages.some((m) => m.id === "5"));
        expect(fine.messages.filter((m) => m.comment === undefined).map((m) => m.id)).toEqual(["5"]);
      } finally {
        fine.close();
      }
    } finally {
      await testApp.app.close();
    }
  });

  it("closing the app ends the open streams at once", async () => {
    const testApp = await buildTestApp();
    await testApp.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = testApp.app.server.address() as AddressInfo;
    const streams = await Promise.all([1, 2, 3].map(() => openStream(port, EVENTS)));
    const started = Date.now();
    await testApp.app.close();
    await Promise.all(streams.map((stream) => stream.ended));
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe("an event stream asked for while the app closes", () => {
  it("answers a stream asked for just before the close with the 503 envelope and Retry-After", async () => {
    // A log whose newest number is read only when the test says: the stream's request has passed
    // the close's own check, and reads the log, when the close begins.
    const log = new InMemoryChangeEventLog();
    let entered = () => {};
    let release = () => {};
    const reading = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slowLog: ChangeEventLog = {
      readAfter: (after, limit) => log.readAfter(after, limit),
      lastNumber: async () => {
        entered();
        await gate;
        return log.lastNumber();
      },
      subscribe: (listener) => log.subscribe(listener),
      deleteNumberedBefore: (before) => log.deleteNumberedBefore(before),
    };
    const testApp = await buildTestApp({ changeEvents: slowLog });
    await testApp.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = testApp.app.server.address() as AddressInfo;
    const answer = send(port, { method: "GET", path: EVENTS, headers: { accept: "text/event-stream" } });
    await reading;
    const closing = testApp.app.close();
    await expect.poll(() => testApp.app.server.listening, { timeout: 20_000, interval: 10 }).toBe(false);
    release();

    const { status, headers, body } = await answer;
    expect(status).toBe(503);
    expect(headers["content-type"]).toBe(JSON_UTF8);
    expect(headers["retry-after"]).toBe("5");
    expect(headers.connection).toBe("close");
    expect(JSON.parse(body)).toStrictEqual({
      timestamp: expect.stringMatching(TIMESTAMP),
      status: 503,
      error: STATUS_CODES[503],
      path: EVENTS,
      message: expect.any(String),
    });
    await closing;
  });
});

describe("an event stream resumed far behind", () => {
  it("sends every event after Last-Event-ID, page after page, then follows new ones", async () => {
    const testApp = await buildTestApp();
    try {
      await testApp.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = testApp.app.server.address() as AddressInfo;
      const { token } = await testApp.aUserWithToken();
      const post = () =>
        testApp.app.inject({
          method: "POST",
          url: "/api/v1/posts",
          headers: { "x-auth-token": token },
          payload: { title: "t", content: "c" },
        });
      // More than a stream reads at once (500), made before the stream opens.
      for (let i = 0; i < 1203; i++) await post();
      const stream = await openStream(port, EVENTS, { "last-event-id": "0" });
      try {
        await stream.until((messages) => messages.filter((m) => m.id !== undefined).length >= 1203, 10_000);
        await post();
        await stream.until((messages) => messages.filter((m) => m.id !== undefined).length >= 1204, 2000);
        expect(stream.events().map((m) => Number(m.id))).toEqual(
          Array.from({ length: 1204 }, (_, i) => i + 1),
        );
      } finally {
        stream.close();
      }
    } finally {
      await testApp.app.close();
    }
  });
});
