import { HTTP_MESSAGES } from "@posts/adapters-http";
import { aUser } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import { capturingLogger, logText } from "./support/capturing-logger.js";
import { expectEnvelope } from "./support/expectations.js";
import { tokenFor } from "./support/mint-token.js";
import { buildTestApp, useTestApp } from "./support/test-app.js";

describe("generic errors", () => {
  const t = useTestApp({ bodyLimit: 64 * 1024 });

  describe("paths and methods", () => {
    it("answers the 404 envelope for a path that does not exist", async () => {
      for (const url of ["/", "/api", "/api/v1/posts/1/extra", "/api/v2/posts", "/API/V1/POSTS"]) {
        expectEnvelope(await t().app.inject({ method: "GET", url: `${url}?a=b` }), 404, url);
      }
    });

    it("answers the 405 envelope with Allow when the path exists for other methods", async () => {
      const cases = [
        ["PUT", "/api/v1/posts", "GET, HEAD, POST"],
        ["DELETE", "/api/v1/posts", "GET, HEAD, POST"],
        ["PUT", "/api/v1/posts/12", "GET, HEAD, PATCH, DELETE"],
        ["POST", "/api/v1/posts/12", "GET, HEAD, PATCH, DELETE"],
        ["PATCH", "/api/v1/user", "GET, HEAD, POST, DELETE"],
        ["GET", "/api/v1/user/login", "POST"],
        ["POST", "/health", "GET, HEAD"],
      ] as const;
      for (const [method, url, allow] of cases) {
        const response = await t().app.inject({
          method,
          url: `${url}?x=1`,
          payload: method === "GET" ? undefined : {},
        });
        expectEnvelope(response, 405, url);
        expect({ url, allow: response.headers.allow }).toEqual({ url, allow });
      }
    });

    it("decides 404 and 405 before the body: malformed, over the limit or not JSON, it is not read", async () => {
      const bodies = [
        ['{"title": ', "application/json"],
        ["x".repeat(128 * 1024), "application/json"],
        ["<html/>", "text/html"],
      ] as const;
      for (const [payload, type] of bodies) {
        const unknown = await t().app.inject({
          method: "POST",
          url: "/api/v1/does-not-exist",
          headers: { "content-type": type },
          payload,
        });
        expectEnvelope(unknown, 404, "/api/v1/does-not-exist");
        const unhandled = await t().app.inject({
          method: "PUT",
          url: "/api/v1/posts",
          headers: { "content-type": type },
          payload,
        });
        expectEnvelope(unhandled, 405, "/api/v1/posts");
        expect(unhandled.headers.allow).toBe("GET, HEAD, POST");
      }
      // An invalid token is refused first, on every path (docs/authentication.md#invalid-tokens-401-on-every-path).
      const withBadToken = await t().app.inject({
        method: "POST",
        url: "/api/v1/does-not-exist",
        headers: { "content-type": "application/json", "x-auth-token": "not.a.token" },
        payload: '{"title": ',
      });
      expect(withBadToken.statusCode).toBe(401);
    });

    it("answers 400 envelope for a URL that cannot be decoded", async () => {
      expectEnvelope(
        await t().app.inject({ method: "GET", url: "/api/v1/posts/%E0%A4%A" }),
        400,
        "/api/v1/posts/%E0%A4%A",
      );
    });
  });

  describe("bodies", () => {
    const post = async (payload: string | Buffer, type?: string) => {
      const token = tokenFor(await aUser(t().deps.users));
      return t().app.inject({
        method: "POST",
        url: "/api/v1/posts",
        headers: { "x-auth-token": token, ...(type === undefined ? {} : { "content-type": type }) },
        payload,
      });
    };

    it("answers 400 envelope with a message (no errors) for malformed JSON, an empty body, a non-object", async () => {
      for (const payload of [
        "{",
        '{"title": "x",}',
        "",
        "null",
        "[]",
        '"x"',
        "1",
        "true",
        '[{"title":"x"}]',
      ]) {
        expectEnvelope(await post(payload, "application/json"), 400, "/api/v1/posts");
      }
      // No body and no content type at all.
      const token = tokenFor(await aUser(t().deps.users));
      expectEnvelope(
        await t().app.inject({ method: "POST", url: "/api/v1/posts", headers: { "x-auth-token": token } }),
        400,
        "/api/v1/posts",
      );
    });

    it("answers 400 envelope for __proto__ and constructor.prototype keys", async () => {
      for (const payload of [
        '{"title":"t","content":"c","__proto__":{"admin":true}}',
        '{"title":"t","content":"c","constructor":{"prototype":{"admin":true}}}',
        '{"title":{"__proto__":{"x":1}},"content":"c"}',
      ]) {
        expectEnvelope(await post(payload, "application/json"), 400, "/api/v1/posts");
      }
    });

    it("answers 400 envelope for a body that is not valid UTF-8, and stores nothing", async () => {
      const list = async () =>
        (await t().app.inject({ method: "GET", url: "/api/v1/posts?size=100" })).json();
      const before = await list();
      const invalid = [
        [0xff], // never in UTF-8
        [0xc3, 0x28], // a lead byte without its continuation
        [0xc0, 0xaf], // an overlong "/"
        [0xed, 0xa0, 0x80], // a UTF-16 surrogate encoded as UTF-8
        [0xf4, 0x90, 0x80, 0x80], // beyond U+10FFFF
        [0xe4, 0xb8], // cut short at the end of the string
      ];
      for (const bytes of invalid) {
        const payload = Buffer.concat([
          Buffer.from('{"title":"t'),
          Buffer.from(bytes),
          Buffer.from('","content":"c"}'),
        ]);
        const response = await post(payload, "application/json");
        expectEnvelope(response, 400, "/api/v1/posts");
        expect(response.json().message).toBe(HTTP_MESSAGES.malformedJson);
      }
      expect(await list()).toEqual(before);
    });

    it("stores multi-byte UTF-8 byte for byte, with or without a leading BOM", async () => {
      const title = "안녕하세요 😀 \u00e9";
      for (const bom of [Buffer.alloc(0), Buffer.from([0xef, 0xbb, 0xbf])]) {
        const payload = Buffer.concat([bom, Buffer.from(JSON.stringify({ title, content: "본문" }))]);
        const created = await post(payload, "application/json");
        expect(created.statusCode).toBe(201);
        const read = await t().app.inject({
          method: "GET",
          url: new URL(created.headers.location as string).pathname,
        });
        expect(read.json()).toMatchObject({ title, content: "본문" });
      }
    });

    it("accepts application/json with a charset", async () => {
      expect((await post('{"title":"t","content":"c"}', "application/json; charset=utf-8")).statusCode).toBe(
        201,
      );
    });

    it("answers 415 envelope for a body that is not JSON", async () => {
      for (const type of [
        "text/plain",
        "text/html",
        "multipart/form-data; boundary=x",
        "application/octet-stream",
      ]) {
        expectEnvelope(await post("x", type), 415, "/api/v1/posts");
      }
    });

    it("answers 413 envelope for a body over the limit", async () => {
      const big = JSON.stringify({ title: "t", content: "x".repeat(64 * 1024) });
      expectEnvelope(await post(big, "application/json"), 413, "/api/v1/posts");
    });
  });
});

describe("failures of the ports", () => {
  class DatabaseDown extends Error {
    readonly code = "ECONNREFUSED";
  }

  it("answers 503 envelope with Retry-After when isUnavailable recognizes the error", async () => {
    const { app, deps } = await buildTestApp({ isUnavailable: (error) => error instanceof DatabaseDown });
    deps.posts.findById = async () => {
      throw new DatabaseDown("connect ECONNREFUSED 10.0.0.5:5432 password=hunter2");
    };
    const response = await app.inject({ method: "GET", url: "/api/v1/posts/1" });
    expectEnvelope(response, 503, "/api/v1/posts/1");
    expect(response.headers["retry-after"]).toBe("5");
    expect(response.body).not.toMatch(/ECONNREFUSED|hunter2|5432/);
    await app.close();
  });

  it("answers 500 envelope without any detail for anything else, and logs it", async () => {
    const { logger, entries } = capturingLogger();
    const { app, deps } = await buildTestApp({
      isUnavailable: (error) => error instanceof DatabaseDown,
      logger,
    });
    deps.posts.listPage = async () => {
      throw new TypeError("SELECT * FROM posts WHERE secret = 'x'");
    };
    const response = await app.inject({ method: "GET", url: "/api/v1/posts?size=3" });
    expectEnvelope(response, 500, "/api/v1/posts");
    expect(response.body).not.toMatch(/SELECT|secret|TypeError|stack/);
    expect(logText(entries)).toContain("SELECT * FROM posts");
    await app.close();
  });

  it("answers 500 when isUnavailable itself throws", async () => {
    const { app, deps } = await buildTestApp({
      isUnavailable: () => {
        throw new Error("broken predicate");
      },
    });
    deps.posts.findById = async () => {
      throw new Error("boom");
    };
    expectEnvelope(await app.inject({ method: "GET", url: "/api/v1/posts/1" }), 500, "/api/v1/posts/1");
    await app.close();
  });
});
