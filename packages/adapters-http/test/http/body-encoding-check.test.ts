import { gzipSync } from "node:zlib";
import { anEmail } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import { expectEnvelope, expectErrorJson } from "../support/expectations.js";
import { useTestApp } from "../support/test-app.js";

const POSTS = "/api/v1/posts";
const BODY = JSON.stringify({ title: "제목", content: "본문" });

describe("a body in another charset than UTF-8, or in a Content-Encoding", () => {
  const t = useTestApp();
  const create = async (headers: Record<string, string>, payload: string | Buffer = BODY) => {
    const { token } = await t().aUserWithToken();
    return t().app.inject({
      method: "POST",
      url: POSTS,
      headers: { "x-auth-token": token, ...headers },
      payload,
    });
  };
  const stored = async () =>
    (await t().app.inject({ method: "GET", url: `${POSTS}?size=100` })).json().content.length;

  it("is a 415 envelope for charset=latin1, utf-16 or any other than UTF-8, and nothing is stored", async () => {
    const before = await stored();
    for (const charset of ["latin1", "ISO-8859-1", "utf-16", "UTF-16LE", '"utf-16"', "us-ascii"]) {
      expectEnvelope(await create({ "content-type": `application/json; charset=${charset}` }), 415, POSTS);
    }
    expect(await stored()).toBe(before);
  });

  it("is a 415 envelope for a Content-Encoding the service does not decode, and nothing is stored", async () => {
    const before = await stored();
    const gzipped = gzipSync(BODY);
    for (const encoding of ["gzip", "br", "deflate", "identity, gzip", "bogus"]) {
      expectEnvelope(
        await create({ "content-type": "application/json", "content-encoding": encoding }, gzipped),
        415,
        POSTS,
      );
    }
    expect(await stored()).toBe(before);
  });

  it("accepts UTF-8 named in any case, no charset, and Content-Encoding identity", async () => {
    const accepted: Record<string, string>[] = [
      { "content-type": "application/json; charset=utf-8" },
      { "content-type": "application/json; charset=UTF-8" },
      { "content-type": 'application/json;charset="Utf-8"' },
      { "content-type": "application/json" },
      { "content-type": "application/json", "content-encoding": "identity" },
    ];
    for (const headers of accepted) {
      expect((await create(headers)).statusCode).toBe(201);
    }
  });

  it("comes after 401 and 403, as the other body refusals do", async () => {
    const latin1 = { "content-type": "application/json; charset=latin1", "content-encoding": "gzip" };
    expectEnvelope(
      await t().app.inject({ method: "POST", url: POSTS, headers: latin1, payload: BODY }),
      403,
      POSTS,
    );
    expectErrorJson(
      await t().app.inject({
        method: "POST",
        url: POSTS,
        headers: { ...latin1, "x-auth-token": "nope" },
        payload: BODY,
      }),
      401,
    );
  });

  it("is a 415 on registration and login too", async () => {
    const payload = JSON.stringify({ email: anEmail(), password: "password123" });
    for (const url of ["/api/v1/user", "/api/v1/user/login"]) {
      const headers = { "content-type": "application/json; charset=utf-16" };
      expectEnvelope(await t().app.inject({ method: "POST", url, headers, payload }), 415, url);
    }
  });

  it("leaves a GET alone: Fastify never reads its body, so neither its charset nor its coding matters", async () => {
    const created = await create({ "content-type": "application/json" });
    const headers = { "content-type": "application/json; charset=latin1", "content-encoding": "gzip" };
    const read = await t().app.inject({
      method: "GET",
      url: String(created.headers.location),
      headers,
      payload: gzipSync(BODY),
    });
    expect(read.statusCode).toBe(200);
    expect(read.json().title).toBe("제목");
  });
});
