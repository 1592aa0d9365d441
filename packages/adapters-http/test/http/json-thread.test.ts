import { HTTP_MESSAGES } from "@posts/adapters-http";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { envelopeBuilder, envelopeSender } from "../../src/errors/error-envelope.js";
import { errorHandler } from "../../src/errors/error-handler.js";
import { JSON_THREAD_MIN_BYTES, JsonThread } from "../../src/http/json-thread.js";
import { useStrictUtf8JsonParser } from "../../src/http/strict-utf8-json-parser.js";
import { timestampFormatter } from "../../src/http/timestamp-formatter.js";
import { expectEnvelope } from "../support/expectations.js";
import { useTestApp } from "../support/test-app.js";

// Long enough to be parsed and written on the JSON thread, in characters and in bytes.
const LONG = "본문 with some ASCII, ".repeat(Math.ceil(JSON_THREAD_MIN_BYTES / 16));

describe("JsonThread", () => {
  it("parses what JSON.parse parses, refuses invalid UTF-8 and poisoned keys, and writes UTF-8 JSON", async () => {
    const thread = new JsonThread();
    try {
      const value = { title: "안녕 😀", content: LONG, nested: [1, null, { a: "\u00e9" }] };
      const text = JSON.stringify(value);
      expect(await thread.parse(Buffer.from(`\ufeff${text}`))).toEqual({ ok: true, value });
      expect(
        await thread.parse(Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff]), Buffer.from('"}')])),
      ).toEqual({
        ok: false,
      });
      expect(await thread.parse(Buffer.from('{"a":1,"__proto__":{"x":1}}'))).toEqual({ ok: false });
      expect(await thread.parse(Buffer.from('{"a":1,'))).toEqual({ ok: false });
      expect((await thread.stringify(value))?.toString("utf8")).toBe(text);
    } finally {
      await thread.close();
    }
    expect(await thread.parse(Buffer.from("{}"))).toBeUndefined();
  });
});

describe("a large body handed to the JsonThread", () => {
  const body = () => Buffer.concat([Buffer.from(JSON.stringify({ content: LONG }))]);

  it("is transferred when it is the whole of its memory, and copied when it is a part of more", async () => {
    const thread = new JsonThread();
    try {
      const whole = body();
      expect(whole.byteOffset === 0 && whole.byteLength === whole.buffer.byteLength).toBe(true);
      expect(await thread.parse(whole)).toEqual({ ok: true, value: { content: LONG } });
      expect(whole.byteLength).toBe(0);

      const json = body();
      const part = Buffer.concat([json, Buffer.from("  ")]).subarray(0, json.length);
      expect(await thread.parse(part)).toEqual({ ok: true, value: { content: LONG } });
      expect(part.equals(json)).toBe(true);
    } finally {
      await thread.close();
    }
  });

  it("is answered lost when the thread ends holding it, and left to the caller when the thread is gone before", async () => {
    const thread = new JsonThread();
    const whole = body();
    const parsed = thread.parse(whole);
    await thread.close();
    expect(await parsed).toEqual({ ok: false, lost: true });
    const later = body();
    expect(await thread.parse(later)).toBeUndefined();
    expect(later.byteLength).toBeGreaterThan(0);
  });
});

describe("a request whose body the JSON thread lost", () => {
  it("is answered 503 with Retry-After, and its route does not run", async () => {
    const app = Fastify({ bodyLimit: 4 * JSON_THREAD_MIN_BYTES });
    const sendEnvelope = envelopeSender(envelopeBuilder(() => new Date(), timestampFormatter("UTC")));
    app.setErrorHandler(errorHandler({ sendEnvelope, retryAfterSeconds: 3 }));
    const lost = { parse: async () => ({ ok: false, lost: true }) } as unknown as JsonThread;
    useStrictUtf8JsonParser(app, lost);
    let ran = false;
    app.post("/body", async () => {
      ran = true;
      return {};
    });
    try {
      const response = await app.inject({
        method: "POST",
        url: "/body",
        headers: { "content-type": "application/json" },
        payload: JSON.stringify({ content: LONG }),
      });
      expectEnvelope(response, 503, "/body");
      expect(response.headers["retry-after"]).toBe("3");
      expect(ran).toBe(false);
    } finally {
      await app.close();
    }
  });
});

describe("bodies and answers of megabytes, through the JSON thread", () => {
  const t = useTestApp();
  const post = async (payload: string | Buffer, token: string) =>
    t().app.inject({
      method: "POST",
      url: "/api/v1/posts",
      headers: { "content-type": "application/json", "x-auth-token": token },
      payload,
    });

  it("stores a post of megabytes as sent, with a BOM or without, and answers it as a small one is answered", async () => {
    const { token } = await t().aUserWithToken();
    for (const bom of ["", "\ufeff"]) {
      const created = await post(`${bom}${JSON.stringify({ title: "안녕 😀", content: LONG })}`, token);
      expect(created.statusCode).toBe(201);
      const read = await t().app.inject({
        method: "GET",
        url: new URL(created.headers.location as string).pathname,
      });
      expect(read.statusCode).toBe(200);
      expect(read.headers["content-type"]).toBe("application/json; charset=utf-8");
      const json = read.json();
      expect(json).toMatchObject({ title: "안녕 😀", content: LONG });
      // Written as JSON.stringify writes it, properties in PostSchema's order.
      expect(read.body).toBe(
        JSON.stringify({
          id: json.id,
          title: json.title,
          content: json.content,
          createdAt: json.createdAt,
          updatedAt: json.updatedAt,
          user: json.user,
        }),
      );
    }
  });

  it("answers 400 envelope for a body of megabytes that is not UTF-8, not JSON or poisoned, and stores nothing", async () => {
    const { token } = await t().aUserWithToken();
    const list = async () => (await t().app.inject({ method: "GET", url: "/api/v1/posts?size=100" })).json();
    const before = await list();
    for (const payload of [
      Buffer.concat([
        Buffer.from(`{"title":"t","content":"${LONG}`),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}'),
      ]),
      `{"title":"t","content":"${LONG}"`,
      `{"title":"t","content":"${LONG}","__proto__":{"admin":true}}`,
      `{"title":"t","content":"${LONG}","constructor":{"prototype":{"admin":true}}}`,
    ]) {
      const response = await post(payload, token);
      expectEnvelope(response, 400, "/api/v1/posts");
      expect(response.json().message).toBe(HTTP_MESSAGES.malformedJson);
    }
    expect(await list()).toEqual(before);
  });

  it("validates a body of megabytes as the domain does: a content that is not a string is 400 with its field", async () => {
    const { token } = await t().aUserWithToken();
    const response = await post(JSON.stringify({ title: LONG, content: 1 }), token);
    expect(response.statusCode).toBe(400);
    expect(JSON.stringify(response.json())).toContain("content");
  });
});
