import { HTTP_MESSAGES } from "@posts/adapters-http";
import { describe, expect, it } from "vitest";
import { JSON_THREAD_MIN_BYTES, JsonThread } from "../../src/http/json-thread.js";
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
