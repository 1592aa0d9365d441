import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { aPost, aUser } from "@posts/domain/testing";
import type { LightMyRequestResponse } from "fastify";
import { beforeAll, describe, expect, it } from "vitest";
import { expectEnvelope, expectErrorJson, expectText, JSON_UTF8 } from "../support/expectations.js";
import { tokenFor } from "../support/mint-token.js";
import { postRequests } from "../support/route-requests.js";
import { buildTestApp, useTestApp } from "../support/test-app.js";

const POST_NOT_FOUND = "게시글을 찾을 수 없습니다.";
const NOT_AUTHOR_MODIFY = "게시글 작성자만 수정할 수 있습니다.";
const NOT_AUTHOR_DELETE = "게시글 작성자만 삭제할 수 있습니다.";
const STRONG = /^"[\x21\x23-\x7e]+"$/;
const WEAK = /^W\/"[\x21\x23-\x7e]+"$/;

/** Asserts a 304: no body, no content type, the ETag and Cache-Control of the 200 it stands for. */
function expectNotModified(response: LightMyRequestResponse, etag: string): void {
  expect({
    status: response.statusCode,
    body: response.body,
    type: response.headers["content-type"],
    etag: response.headers.etag,
    cacheControl: response.headers["cache-control"],
  }).toEqual({ status: 304, body: "", type: undefined, etag, cacheControl: "no-cache" });
}

/** The tag inside quotes, as a weak tag. */
const weakened = (etag: string) => `W/${etag}`;

describe("conditional requests (docs/conditional-requests.md)", () => {
  const t = useTestApp();
  const { inject, get, patch, remove } = postRequests(() => t().app);
  const etagOf = async (id: number) => String((await get(`/api/v1/posts/${id}`)).headers.etag);

  describe("ETag and Cache-Control", () => {
    it("GET by id answers a strong ETag and Cache-Control: no-cache, the same on every read of one version", async () => {
      const post = await aPost(t().deps.posts, await aUser(t().deps.users));
      const first = await get(`/api/v1/posts/${post.id}`);
      expect(first.statusCode).toBe(200);
      expect(first.headers.etag).toMatch(STRONG);
      expect(first.headers["cache-control"]).toBe("no-cache");
      expect((await get(`/api/v1/posts/${post.id}`)).headers.etag).toBe(first.headers.etag);
    });

    it("PATCH 200 answers the new version's ETag, which GET then answers too; every PATCH changes it", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      const seen = new Set([await etagOf(post.id)]);
      for (const title of ["a", "b", "b"]) {
        const patched = await patch(user.token, post.id, { title });
        expect(patched.statusCode).toBe(200);
        expect(patched.headers.etag).toMatch(STRONG);
        expect(await etagOf(post.id)).toBe(patched.headers.etag);
        seen.add(String(patched.headers.etag));
      }
      // Even a PATCH that writes the same title again, in the same millisecond, is a new version.
      expect(seen.size).toBe(4);
    });

    it("is the same on another instance with the same time zone, and differs where the wire form would", async () => {
      const post = await aPost(t().deps.posts, await aUser(t().deps.users));
      const here = await get(`/api/v1/posts/${post.id}`);
      const twin = await buildTestApp({ deps: t().deps });
      const seoul = await buildTestApp({ deps: t().deps, timeZone: "Asia/Seoul" });
      try {
        const there = await twin.app.inject({ method: "GET", url: `/api/v1/posts/${post.id}` });
        expect(there.headers.etag).toBe(here.headers.etag);
        expect(there.body).toBe(here.body);
        const elsewhere = await seoul.app.inject({ method: "GET", url: `/api/v1/posts/${post.id}` });
        expect(elsewhere.body).not.toBe(here.body);
        expect(elsewhere.headers.etag).not.toBe(here.headers.etag);
        // So a tag from there neither revalidates nor preconditions here.
        expect(
          (await get(`/api/v1/posts/${post.id}`, { "if-none-match": String(elsewhere.headers.etag) }))
            .statusCode,
        ).toBe(200);
      } finally {
        await twin.app.close();
        await seoul.app.close();
      }
    });

    it("a list page answers a weak ETag and Cache-Control: no-cache that change whenever its body would", async () => {
      const user = await t().aUserWithToken();
      const author = user.id;
      const url = `/api/v1/posts?userId=${author}&size=2`;
      const posts = [await aPost(t().deps.posts, user), await aPost(t().deps.posts, user)];
      const page = await get(url);
      expect(page.statusCode).toBe(200);
      expect(page.headers.etag).toMatch(WEAK);
      expect(page.headers["cache-control"]).toBe("no-cache");
      expect((await get(url)).headers.etag).toBe(page.headers.etag);

      const tags = new Set([page.headers.etag]);
      const bodies = new Set([page.body]);
      const record = async (response: LightMyRequestResponse) => {
        expect(response.statusCode).toBe(200);
        tags.add(response.headers.etag);
        bodies.add(response.body);
        expect(tags.size).toBe(bodies.size);
      };
      // Another size, the page after, the same posts under another query that gives the same body.
      await record(await get(`/api/v1/posts?userId=${author}&size=3`));
      await record(await get(`/api/v1/posts?userId=${author}&size=1`));
      const sameBody = await get(`/api/v1/posts?userId=${author}&size=2&ignored=1`);
      expect(sameBody.headers.etag).toBe(page.headers.etag);
      // A post in it modified, one added, one deleted.
      expect((await patch(user.token, posts[0]?.id ?? 0, { content: "changed" })).statusCode).toBe(200);
      await record(await get(url));
      await aPost(t().deps.posts, user);
      await record(await get(url));
      expect((await remove(user.token, posts[1]?.id ?? 0)).statusCode).toBe(204);
      await record(await get(url));
      expect(tags.size).toBe(6);
    });
  });

  describe("If-None-Match on GET by id", () => {
    it("answers 304 without a body when it names the current tag, weakly or in a list, or is *", async () => {
      const post = await aPost(t().deps.posts, await aUser(t().deps.users));
      const etag = await etagOf(post.id);
      for (const header of [
        etag,
        weakened(etag),
        `"other", ${etag}`,
        ` , W/"x",${weakened(etag)} ,`,
        "*",
        // Sent twice: Node joins the two lines with ", ".
        `"stale", ${etag}`,
      ]) {
        expectNotModified(await get(`/api/v1/posts/${post.id}`, { "if-none-match": header }), etag);
      }
      const head = await inject({
        method: "HEAD",
        url: `/api/v1/posts/${post.id}`,
        headers: { "if-none-match": etag },
      });
      expect(head.statusCode).toBe(304);
    });

    it("answers the usual 200 when it names another tag, is malformed or empty", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      const stale = await etagOf(post.id);
      await patch(user.token, post.id, { title: "new" });
      const current = await etagOf(post.id);
      for (const header of [
        stale,
        weakened(stale),
        current.slice(1, -1),
        `${current} x`,
        "",
        '"x", *',
        "W/*",
      ]) {
        const response = await get(`/api/v1/posts/${post.id}`, { "if-none-match": header });
        expect({ header, status: response.statusCode, etag: response.headers.etag }).toEqual({
          header,
          status: 200,
          etag: current,
        });
        expect(response.json()).toMatchObject({ id: post.id, title: "new" });
      }
    });

    it("comes after the 401 of an invalid token and the 404s of a missing post or a non-numeric id", async () => {
      const post = await aPost(t().deps.posts, await aUser(t().deps.users));
      const etag = await etagOf(post.id);
      expectErrorJson(
        await get(`/api/v1/posts/${post.id}`, { "if-none-match": etag, "x-auth-token": "not.a.token" }),
      );
      expectErrorJson(await get(`/api/v1/posts/${post.id}`, { "if-none-match": "*", "x-auth-token": "bad" }));
      for (const id of ["987654321", "99999999999999999999"]) {
        expectText(await get(`/api/v1/posts/${id}`, { "if-none-match": "*" }), 404, POST_NOT_FOUND);
      }
      expectText(
        await get(`/api/v1/posts/${post.id + 1000}`, { "if-none-match": etag }),
        404,
        POST_NOT_FOUND,
      );
      expectEnvelope(await get("/api/v1/posts/abc", { "if-none-match": "*" }), 404, "/api/v1/posts/abc");
    });
  });

  describe("If-None-Match on a list page", () => {
    it("answers 304 when it names the page's tag (W/ ignored) or is *, and 200 once the page changed", async () => {
      const user = await t().aUserWithToken();
      await aPost(t().deps.posts, user);
      const url = `/api/v1/posts?userId=${user.id}`;
      const etag = String((await get(url)).headers.etag);
      for (const header of [etag, etag.slice(2), `"x", ${etag}`, "*"]) {
        expectNotModified(await get(url, { "if-none-match": header }), etag);
      }
      await aPost(t().deps.posts, user);
      const changed = await get(url, { "if-none-match": etag });
      expect(changed.statusCode).toBe(200);
      expect(changed.headers.etag).not.toBe(etag);
      expect(changed.json().content).toHaveLength(2);
    });

    it("comes after the 401 of an invalid token and the 400 of an invalid query", async () => {
      expectErrorJson(await get("/api/v1/posts", { "if-none-match": "*", "x-auth-token": "bad" }));
      expectEnvelope(await get("/api/v1/posts?size=0", { "if-none-match": "*" }), 400, "/api/v1/posts", [
        { field: "size", message: expect.any(String) },
      ]);
    });
  });

  describe("If-Match on PATCH", () => {
    it("applies the change when it names the current tag (in a list, or sent twice) or is *", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      for (const [index, header] of [
        (etag: string) => etag,
        (etag: string) => `W/"other", "stale" , ${etag},`,
        (etag: string) => `"stale", ${etag}`,
        () => "*",
        () => " * ",
      ].entries()) {
        const etag = await etagOf(post.id);
        const response = await patch(user.token, post.id, { title: `v${index}` }, header(etag));
        expect({ status: response.statusCode, type: response.headers["content-type"] }).toEqual({
          status: 200,
          type: JSON_UTF8,
        });
        expect(response.json().title).toBe(`v${index}`);
        expect(response.headers.etag).not.toBe(etag);
      }
    });

    it("answers 412 Precondition Failed and changes nothing for a stale, weak, foreign or malformed tag", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user, { title: "kept" });
      // Created in the same millisecond: the same version, another post.
      const sibling = await aPost(t().deps.posts, user);
      expect(sibling.updatedAt).toEqual(post.updatedAt);
      const stale = await etagOf(post.id);
      expect((await patch(user.token, post.id, { content: "second" })).statusCode).toBe(200);
      const current = await etagOf(post.id);
      const before = await t().deps.posts.findById(post.id);
      const seoul = await buildTestApp({ deps: t().deps, timeZone: "Asia/Seoul" });
      const foreignZone = String(
        (await seoul.app.inject({ method: "GET", url: `/api/v1/posts/${post.id}` })).headers.etag,
      );
      await seoul.app.close();
      for (const header of [
        stale,
        weakened(current),
        await etagOf(sibling.id),
        foreignZone,
        current.slice(1, -1),
        `${current} junk`,
        `${current}, *`,
        `'${current.slice(1, -1)}'`,
        "",
        ",",
        '""',
      ]) {
        const response = await patch(user.token, post.id, { title: "lost" }, header);
        expectEnvelope(response, 412, `/api/v1/posts/${post.id}`);
        expect(response.json().error).toBe("Precondition Failed");
        expect(response.headers.etag).toBeUndefined();
      }
      expect(await t().deps.posts.findById(post.id)).toEqual(before);
      expect(await etagOf(post.id)).toBe(current);
    });

    it("two editors with the same tag: the first wins, the second gets 412 and its change is not applied", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      const etag = await etagOf(post.id);
      const [first, second] = await Promise.all([
        patch(user.token, post.id, { title: "first" }, etag),
        patch(user.token, post.id, { content: "second" }, etag),
      ]);
      expect([first.statusCode, second.statusCode].sort()).toEqual([200, 412]);
      expect(await t().deps.posts.findById(post.id)).toMatchObject(
        first.statusCode === 200
          ? { title: "first", content: post.content }
          : { title: post.title, content: "second" },
      );
    });

    it("without If-Match behaves as before: no 428, the change applies", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      const response = await patch(user.token, post.id, { title: "no precondition" });
      expect(response.statusCode).toBe(200);
      expect(response.headers.etag).toMatch(STRONG);
    });

    it("comes after every other check: 401 token → 403 id/token/role → 400 empty → 400 invalid → 404 → 401 author", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      const stale = await etagOf(post.id);
      await patch(user.token, post.id, { title: "moved on" });
      const intruder = await t().aUserWithToken();
      const admin = tokenFor(user, { roles: [{ authority: "ROLE_ADMIN" }] });

      expectErrorJson(await patch("bad", post.id, { title: "x" }, stale));
      expectErrorJson(await patch("bad", "abc", { title: "x" }, stale));
      expectEnvelope(await patch(user.token, "abc", { title: "x" }, stale), 403, "/api/v1/posts/abc");
      expectEnvelope(await patch(undefined, post.id, { title: "x" }, stale), 403, `/api/v1/posts/${post.id}`);
      expectEnvelope(await patch(admin, post.id, { title: "x" }, stale), 403, `/api/v1/posts/${post.id}`);
      const empty = await patch(user.token, post.id, {}, stale);
      expect({ status: empty.statusCode, body: empty.body }).toEqual({ status: 400, body: "" });
      expectEnvelope(
        await patch(user.token, post.id, { title: " " }, stale),
        400,
        `/api/v1/posts/${post.id}`,
        [{ field: "title", message: "게시글 제목을 입력해주세요." }],
      );
      expectText(await patch(user.token, 987654321, { title: "x" }, stale), 404, POST_NOT_FOUND);
      expectText(await patch(user.token, 987654321, { title: "x" }, "*"), 404, POST_NOT_FOUND);
      expectText(await patch(intruder.token, post.id, { title: "x" }, stale), 401, NOT_AUTHOR_MODIFY);
      expectText(
        await patch(intruder.token, post.id, { title: "x" }, await etagOf(post.id)),
        401,
        NOT_AUTHOR_MODIFY,
      );
      expectEnvelope(
        await patch(user.token, post.id, { title: "x" }, stale),
        412,
        `/api/v1/posts/${post.id}`,
      );
      expect((await t().deps.posts.findById(post.id))?.title).toBe("moved on");
    });
  });

  describe("If-Match on DELETE", () => {
    it("deletes when it names the current tag or is *; 412 and nothing deleted for a stale or malformed one", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      const stale = await etagOf(post.id);
      await patch(user.token, post.id, { title: "moved on" });
      const current = await etagOf(post.id);
      for (const header of [stale, weakened(current), "garbage", ""]) {
        const response = await remove(user.token, post.id, header);
        expectEnvelope(response, 412, `/api/v1/posts/${post.id}`);
        expect(response.json().error).toBe("Precondition Failed");
      }
      expect(await t().deps.posts.findById(post.id)).toBeDefined();
      const deleted = await remove(user.token, post.id, `"x", ${current}`);
      expect({ status: deleted.statusCode, body: deleted.body }).toEqual({ status: 204, body: "" });
      expect(await t().deps.posts.findById(post.id)).toBeUndefined();

      const other = await aPost(t().deps.posts, user);
      expect((await remove(user.token, other.id, "*")).statusCode).toBe(204);
      const unconditional = await aPost(t().deps.posts, user);
      expect((await remove(user.token, unconditional.id)).statusCode).toBe(204);
    });

    it("comes after every other check: 401 token → 403 id/token/role → 404 → 401 author", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      const intruder = await t().aUserWithToken();
      const admin = tokenFor(user, { roles: [{ authority: "ROLE_ADMIN" }] });
      const stale = '"stale"';
      expectErrorJson(await remove("bad", post.id, stale));
      expectEnvelope(await remove(user.token, "abc", stale), 403, "/api/v1/posts/abc");
      expectEnvelope(await remove(undefined, post.id, stale), 403, `/api/v1/posts/${post.id}`);
      expectEnvelope(await remove(admin, post.id, stale), 403, `/api/v1/posts/${post.id}`);
      expectText(await remove(user.token, 987654321, stale), 404, POST_NOT_FOUND);
      expectText(await remove(user.token, "99999999999999999999", "*"), 404, POST_NOT_FOUND);
      expectText(await remove(intruder.token, post.id, stale), 401, NOT_AUTHOR_DELETE);
      expectText(await remove(intruder.token, post.id, await etagOf(post.id)), 401, NOT_AUTHOR_DELETE);
      expectEnvelope(await remove(user.token, post.id, stale), 412, `/api/v1/posts/${post.id}`);
      expect(await t().deps.posts.findById(post.id)).toBeDefined();
    });
  });

  describe("over a real socket, where Node joins a header sent twice", () => {
    beforeAll(async () => {
      await t().app.listen({ host: "127.0.0.1", port: 0 });
    });

    /** Sends each header value of a list as a line of its own, as Node's client does with arrays. */
    const send = (method: string, path: string, headers: Record<string, string | string[]>, body?: string) =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const { port } = t().app.server.address() as AddressInfo;
        const outgoing = request({ host: "127.0.0.1", port, method, path, headers }, (response) => {
          let text = "";
          response.setEncoding("utf8").on("data", (chunk: string) => {
            text += chunk;
          });
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }),
          );
        });
        outgoing.on("error", reject);
        outgoing.end(body);
      });

    it("reads If-None-Match and If-Match lines as one combined list", async () => {
      const user = await t().aUserWithToken();
      const post = await aPost(t().deps.posts, user);
      const etag = await etagOf(post.id);
      const path = `/api/v1/posts/${post.id}`;

      const revalidated = await send("GET", path, { "if-none-match": ['"stale"', weakened(etag)] });
      expect({ status: revalidated.status, body: revalidated.body }).toEqual({ status: 304, body: "" });

      const json = { "content-type": "application/json", "x-auth-token": user.token };
      const refused = await send(
        "PATCH",
        path,
        { ...json, "if-match": ['"stale"', weakened(etag)] },
        '{"title":"x"}',
      );
      expect(refused.status).toBe(412);
      const applied = await send("PATCH", path, { ...json, "if-match": ['"stale"', etag] }, '{"title":"y"}');
      expect(applied.status).toBe(200);
      expect(applied.headers.etag).toBe(await etagOf(post.id));
    });

    it("reads an Idempotency-Key sent twice as one invalid key: 400, nothing created", async () => {
      const user = await t().aUserWithToken();
      const headers = { "content-type": "application/json", "x-auth-token": user.token };
      const twice = await send(
        "POST",
        "/api/v1/posts",
        { ...headers, "idempotency-key": ["same", "same"] },
        '{"title":"t","content":"c"}',
      );
      expect(twice.status).toBe(400);
      expect(JSON.parse(twice.body)).toMatchObject({
        status: 400,
        message: expect.stringContaining("Idempotency-Key"),
      });
      expect(await t().deps.posts.listPage({ limit: 100, authorId: user.id })).toEqual([]);
    });
  });
});
