import { MESSAGES } from "@posts/domain";
import { aPost, aUser } from "@posts/domain/testing";
import { describe, expect, it } from "vitest";
import {
  expectEnvelope,
  expectErrorJson,
  expectText,
  JSON_UTF8,
  POST_PROPERTIES,
  TIMESTAMP,
} from "../support/expectations.js";
import { tokenFor } from "../support/mint-token.js";
import { postRequests } from "../support/route-requests.js";
import { useTestApp } from "../support/test-app.js";

const POST_NOT_FOUND = "게시글을 찾을 수 없습니다.";
const NOT_AUTHOR_MODIFY = "게시글 작성자만 수정할 수 있습니다.";
const NOT_AUTHOR_DELETE = "게시글 작성자만 삭제할 수 있습니다.";
const TITLE_REQUIRED = { field: "title", message: "게시글 제목을 입력해주세요." };
const CONTENT_REQUIRED = { field: "content", message: "게시글 내용을 입력해주세요." };

describe("posts", () => {
  const t = useTestApp();
  const { inject, create, patch, remove } = postRequests(() => t().app);
  const newPost = async (author: { id: number }, overrides: { title?: string; content?: string } = {}) =>
    aPost(t().deps.posts, author, overrides);

  describe("POST /api/v1/posts", () => {
    it("creates the post: 201, empty body, absolute Location, stored exactly as sent", async () => {
      const user = await t().aUserWithToken();
      const response = await create(user.token, {
        title: "  제목  ",
        content: "본문\r\n",
        id: 999,
        user: { id: 1 },
      });
      expect(response.statusCode).toBe(201);
      expect(response.body).toBe("");
      const location = String(response.headers.location);
      expect(location).toMatch(/^http:\/\/localhost(:\d+)?\/api\/v1\/posts\/\d+$/);
      const id = Number(location.split("/").at(-1));
      const stored = await t().deps.posts.findById(id);
      expect(stored).toMatchObject({ title: "  제목  ", content: "본문\r\n", author: { id: user.id } });
    });

    it("builds Location from the Host header, and from X-Forwarded-* only when trusted", async () => {
      const user = await t().aUserWithToken();
      const response = await inject({
        method: "POST",
        url: "/api/v1/posts",
        headers: {
          host: "api.example.com:8443",
          "x-forwarded-proto": "https",
          "x-forwarded-host": "evil.example",
          "x-auth-token": user.token,
        },
        payload: { title: "t", content: "c" },
      });
      expect(response.headers.location).toMatch(/^http:\/\/api\.example\.com:8443\/api\/v1\/posts\/\d+$/);
    });

    it("lists every failing field with the contract's messages", async () => {
      const { token } = await t().aUserWithToken();
      expectEnvelope(await create(token, {}), 400, "/api/v1/posts", [TITLE_REQUIRED, CONTENT_REQUIRED]);
      expectEnvelope(await create(token, { title: null, content: " " }), 400, "/api/v1/posts", [
        TITLE_REQUIRED,
        CONTENT_REQUIRED,
      ]);
      expectEnvelope(await create(token, { title: "\u3000", content: "x" }), 400, "/api/v1/posts", [
        TITLE_REQUIRED,
      ]);
      expectEnvelope(await create(token, { title: "x", content: "\t\n" }), 400, "/api/v1/posts", [
        CONTENT_REQUIRED,
      ]);
    });

    it("rejects values that are not strings instead of coercing them", async () => {
      const { token } = await t().aUserWithToken();
      for (const value of [123, true, ["x"], { a: 1 }]) {
        expectEnvelope(await create(token, { title: value, content: value }), 400, "/api/v1/posts", [
          { field: "title", message: MESSAGES.titleNotString },
          { field: "content", message: MESSAGES.contentNotString },
        ]);
      }
      expectEnvelope(await create(token, { title: 123, content: "ok" }), 400, "/api/v1/posts", [
        { field: "title", message: MESSAGES.titleNotString },
      ]);
    });

    it("accepts a title of 255 emoji and rejects 256", async () => {
      const { token } = await t().aUserWithToken();
      expect((await create(token, { title: "😀".repeat(255), content: "c" })).statusCode).toBe(201);
      expectEnvelope(await create(token, { title: "😀".repeat(256), content: "c" }), 400, "/api/v1/posts", [
        { field: "title", message: MESSAGES.titleTooLong },
      ]);
    });

    it("rejects U+0000 and a lone surrogate", async () => {
      const { token } = await t().aUserWithToken();
      expectEnvelope(await create(token, { title: "a\u0000b", content: "c" }), 400, "/api/v1/posts", [
        { field: "title", message: MESSAGES.titleInvalidCharacter },
      ]);
      const loneSurrogate = '{"title":"ok","content":"\\ud800"}';
      const response = await inject({
        method: "POST",
        url: "/api/v1/posts",
        headers: { "x-auth-token": token, "content-type": "application/json" },
        payload: loneSurrogate,
      });
      expectEnvelope(response, 400, "/api/v1/posts", [
        { field: "content", message: MESSAGES.contentInvalidCharacter },
      ]);
    });

    it("stores and returns a 2 MiB content intact", async () => {
      const user = await t().aUserWithToken();
      const content = "Lorem ipsum 가나다라 😀 dolor\r\n".repeat(Math.ceil((2 * 1024 * 1024) / 40));
      const created = await create(user.token, { title: "long", content });
      expect(created.statusCode).toBe(201);
      const read = await inject({ method: "GET", url: new URL(String(created.headers.location)).pathname });
      expect(read.statusCode).toBe(200);
      expect(read.json().content === content).toBe(true);
    });

    describe("order of outcomes", () => {
      it("1. invalid token → 401 before anything else, even with a bad body or content type", async () => {
        for (const options of [
          { payload: "not json", headers: { "content-type": "text/plain" } },
          { payload: "{", headers: { "content-type": "application/json" } },
          { payload: {}, headers: {} },
        ]) {
          const response = await inject({
            method: "POST",
            url: "/api/v1/posts",
            ...options,
            headers: { ...options.headers, "x-auth-token": "garbage" },
          });
          expectErrorJson(response);
        }
      });

      it("2. no token, or a token without ROLE_USER → 403 envelope, before 415 and 400", async () => {
        const user = await aUser(t().deps.users);
        const admin = tokenFor(user, { roles: [{ authority: "ROLE_ADMIN" }] });
        for (const headers of [{}, { "x-auth-token": "" }, { "x-auth-token": admin }]) {
          expectEnvelope(
            await inject({
              method: "POST",
              url: "/api/v1/posts",
              headers: { ...headers, "content-type": "text/plain" },
              payload: "x",
            }),
            403,
            "/api/v1/posts",
          );
          expectEnvelope(
            await inject({ method: "POST", url: "/api/v1/posts?x=1", headers, payload: {} }),
            403,
            "/api/v1/posts",
          );
        }
      });

      it("3. content type not JSON → 415, body over the limit → 413, both before validation", async () => {
        const { token } = await t().aUserWithToken();
        for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
          expectEnvelope(
            await inject({
              method: "POST",
              url: "/api/v1/posts",
              headers: { "x-auth-token": token, "content-type": type },
              payload: "title=x",
            }),
            415,
            "/api/v1/posts",
          );
        }
      });

      it("5. the token's user no longer exists → 401 {error} after validation", async () => {
        const gone = await aUser(t().deps.users);
        const token = tokenFor(gone);
        await t().deps.users.delete(gone.id);
        expectEnvelope(await create(token, { title: " " }), 400, "/api/v1/posts", [
          TITLE_REQUIRED,
          CONTENT_REQUIRED,
        ]);
        expectErrorJson(await create(token, { title: "t", content: "c" }));
      });
    });
  });

  describe("GET /api/v1/posts/<id>", () => {
    it("answers the post in the exact wire format, author with id and email only", async () => {
      const author = await aUser(t().deps.users, { passwordHash: "secret-hash" });
      const post = await newPost(author);
      const response = await inject({ method: "GET", url: `/api/v1/posts/${post.id}` });
      expect(response.statusCode).toBe(200);
      expect(response.headers["content-type"]).toBe(JSON_UTF8);
      expect(response.json()).toStrictEqual({
        id: post.id,
        title: "안녕하세요",
        content: "본문",
        createdAt: "2026-11-22T10:15:30.123",
        updatedAt: "2026-11-22T10:15:30.123",
        user: { id: author.id, email: author.email },
      });
      expect(response.body).not.toContain("secret-hash");
      expect(Object.keys(response.json())).toEqual(POST_PROPERTIES);
    });

    it("answers 404 text for a numeric id with no post, including one beyond 64 bits", async () => {
      for (const id of ["0", "987654321", "99999999999999999999", "1".repeat(500)]) {
        expectText(await inject({ method: "GET", url: `/api/v1/posts/${id}` }), 404, POST_NOT_FOUND);
      }
    });

    it("answers the 404 envelope for a non-numeric id: a path that does not exist", async () => {
      for (const id of ["abc", "-1", "1.5", "%20"]) {
        const response = await inject({ method: "GET", url: `/api/v1/posts/${id}?q=1` });
        expectEnvelope(response, 404, `/api/v1/posts/${id}`);
      }
    });

    it("needs no token, but refuses an invalid one", async () => {
      const post = await newPost(await aUser(t().deps.users));
      expect((await inject({ method: "GET", url: `/api/v1/posts/${post.id}` })).statusCode).toBe(200);
      expectErrorJson(
        await inject({
          method: "GET",
          url: `/api/v1/posts/${post.id}`,
          headers: { "x-auth-token": "x.y.z" },
        }),
      );
    });
  });

  describe("GET /api/v1/posts", () => {
    it("pages newest first with size, nextCursor and a Link that keeps size and userId", async () => {
      const author = await aUser(t().deps.users);
      const other = await aUser(t().deps.users);
      const mine = [];
      for (let i = 0; i < 5; i++) {
        mine.push(await newPost(author, { title: `p${i}` }));
        await newPost(other);
      }
      const seen: number[] = [];
      let url: string | undefined = `/api/v1/posts?size=2&userId=${author.id}&ignored=yes`;
      while (url !== undefined) {
        const response = await inject({ method: "GET", url });
        expect(response.statusCode).toBe(200);
        const page = response.json();
        expect(page.size).toBe(2);
        seen.push(...page.content.map((post: { id: number }) => post.id));
        if (page.nextCursor === null) {
          expect(response.headers.link).toBeUndefined();
          url = undefined;
        } else {
          const link = String(response.headers.link);
          const match = /^<(http:\/\/localhost(?::\d+)?(\/api\/v1\/posts\?[^>]+))>; rel="next"$/.exec(link);
          expect(match).not.toBeNull();
          const next = new URL(match?.[1] ?? "");
          expect(Object.fromEntries(next.searchParams)).toEqual({
            size: "2",
            cursor: page.nextCursor,
            userId: String(author.id),
          });
          url = match?.[2];
        }
      }
      expect(seen).toEqual(mine.map((post) => post.id).reverse());
    });

    it("uses size 20 by default, and keeps size in the Link even when it was not given", async () => {
      const author = await aUser(t().deps.users);
      for (let i = 0; i < 21; i++) await newPost(author);
      const response = await inject({ method: "GET", url: "/api/v1/posts" });
      const page = response.json();
      expect(page.size).toBe(20);
      expect(page.content).toHaveLength(20);
      expect(page.content[0]).toStrictEqual({
        id: expect.any(Number),
        title: expect.any(String),
        content: expect.any(String),
        createdAt: expect.stringMatching(TIMESTAMP),
        updatedAt: expect.stringMatching(TIMESTAMP),
        user: { id: author.id, email: author.email },
      });
      expect(new URL(String(response.headers.link).slice(1, -13)).searchParams.get("size")).toBe("20");
    });

    it("answers an empty page for an unknown userId", async () => {
      const response = await inject({ method: "GET", url: "/api/v1/posts?userId=99999999" });
      expect(response.json()).toStrictEqual({ content: [], size: 20, nextCursor: null });
    });

    it("answers 400 envelope for an invalid size, cursor or userId, listing each", async () => {
      for (const [query, fields] of [
        ["size=0", ["size"]],
        ["size=101", ["size"]],
        ["size=abc", ["size"]],
        ["size=1&size=2", ["size"]],
        ["cursor=nope", ["cursor"]],
        ["userId=-1", ["userId"]],
        ["size=0&cursor=%21&userId=x", ["size", "cursor", "userId"]],
      ] as const) {
        const response = await inject({ method: "GET", url: `/api/v1/posts?${query}` });
        expect(response.statusCode).toBe(400);
        expect(response.json().errors.map((e: { field: string }) => e.field)).toEqual(fields);
        expect(response.json().path).toBe("/api/v1/posts");
      }
    });
  });

  describe("PATCH /api/v1/posts/<id>", () => {
    it("changes only the fields present; null counts as absent; other properties ignored", async () => {
      const user = await t().aUserWithToken();
      const post = await newPost(user, { title: "old title", content: "old content" });
      t().deps.clock.advance(1000);
      const response = await patch(user.token, post.id, {
        title: null,
        content: "new",
        id: 5,
        createdAt: "x",
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toStrictEqual({
        id: post.id,
        title: "old title",
        content: "new",
        createdAt: "2026-11-22T10:15:30.123",
        updatedAt: expect.stringMatching(TIMESTAMP),
        user: { id: user.id, email: user.email },
      });
      expect(response.json().updatedAt > response.json().createdAt).toBe(true);
    });

    it("moves updatedAt forward even when two writes land in the same millisecond", async () => {
      const user = await t().aUserWithToken();
      const post = await newPost(user);
      const first = (await patch(user.token, post.id, { title: "a" })).json();
      const second = (await patch(user.token, post.id, { title: "b" })).json();
      expect(second.updatedAt > first.updatedAt).toBe(true);
      expect(second.createdAt).toBe(first.createdAt);
    });

    it("2. title and content both null or absent → 400 with an EMPTY body", async () => {
      const user = await t().aUserWithToken();
      const post = await newPost(user);
      for (const body of [{}, { title: null, content: null }, { other: 1 }]) {
        const response = await patch(user.token, post.id, body);
        expect({ status: response.statusCode, body: response.body }).toEqual({ status: 400, body: "" });
      }
      // Even for an id that names no post: the both-null check comes first.
      expect((await patch(user.token, 987654321, {})).body).toBe("");
    });

    it("2. a present field that fails → 400 envelope listing it, before the existence check", async () => {
      const { token } = await t().aUserWithToken();
      expectEnvelope(
        await patch(token, 987654321, { title: "", content: 7 }),
        400,
        "/api/v1/posts/987654321",
        [TITLE_REQUIRED, { field: "content", message: MESSAGES.contentNotString }],
      );
      expectEnvelope(await patch(token, 987654321, { title: 123 }), 400, "/api/v1/posts/987654321", [
        { field: "title", message: MESSAGES.titleNotString },
      ]);
    });

    it("3. no such post → 404 text, including an id beyond 64 bits; 4. not the author → 401 text", async () => {
      const author = await aUser(t().deps.users);
      const post = await newPost(author);
      const intruder = await t().aUserWithToken();
      expectText(await patch(intruder.token, 987654321, { title: "x" }), 404, POST_NOT_FOUND);
      expectText(await patch(intruder.token, "99999999999999999999", { title: "x" }), 404, POST_NOT_FOUND);
      expectText(await patch(intruder.token, post.id, { title: "x" }), 401, NOT_AUTHOR_MODIFY);
      expect((await t().deps.posts.findById(post.id))?.title).toBe(post.title);
    });

    it("1. invalid token → 401 JSON first; then a non-digit id → 403; then no token or no role → 403", async () => {
      const user = await t().aUserWithToken();
      const post = await newPost(user);
      expectErrorJson(await patch("bad", "abc", {}));
      expectErrorJson(await patch("bad", post.id, { title: "x" }));
      expectEnvelope(await patch(user.token, "abc", { title: "x" }), 403, "/api/v1/posts/abc");
      expectEnvelope(await patch(undefined, "abc", { title: "x" }), 403, "/api/v1/posts/abc");
      expectEnvelope(await patch(undefined, post.id, { title: "x" }), 403, `/api/v1/posts/${post.id}`);
      const admin = tokenFor(user, { roles: [{ authority: "ROLE_ADMIN" }] });
      expectEnvelope(await patch(admin, post.id, { title: "x" }), 403, `/api/v1/posts/${post.id}`);
      // 403 comes before the body is even parsed.
      const unparsed = await inject({
        method: "PATCH",
        url: "/api/v1/posts/abc",
        headers: { "x-auth-token": user.token, "content-type": "text/plain" },
        payload: "x",
      });
      expectEnvelope(unparsed, 403, "/api/v1/posts/abc");
    });

    it("answers 415 and 400 envelopes for bodies that are not JSON objects", async () => {
      const user = await t().aUserWithToken();
      const post = await newPost(user);
      const send = (payload: string, type = "application/json") =>
        inject({
          method: "PATCH",
          url: `/api/v1/posts/${post.id}`,
          headers: { "x-auth-token": user.token, "content-type": type },
          payload,
        });
      expectEnvelope(await send("title=x", "text/plain"), 415, `/api/v1/posts/${post.id}`);
      for (const payload of ["null", "[]", '"x"', "1", "{", "", '{"__proto__":{"a":1}}']) {
        expectEnvelope(await send(payload), 400, `/api/v1/posts/${post.id}`);
      }
    });
  });

  describe("DELETE /api/v1/posts/<id>", () => {
    it("deletes the author's post: 204 with an empty body, then 404", async () => {
      const user = await t().aUserWithToken();
      const post = await newPost(user);
      const response = await remove(user.token, post.id);
      expect({ status: response.statusCode, body: response.body }).toEqual({ status: 204, body: "" });
      expectText(await inject({ method: "GET", url: `/api/v1/posts/${post.id}` }), 404, POST_NOT_FOUND);
      expectText(await remove(user.token, post.id), 404, POST_NOT_FOUND);
    });

    it("follows the order 401 → 403 → 404 → 401 text", async () => {
      const author = await aUser(t().deps.users);
      const post = await newPost(author);
      const intruder = await t().aUserWithToken();
      expectErrorJson(await remove("bad", "abc"));
      expectEnvelope(await remove(intruder.token, "abc"), 403, "/api/v1/posts/abc");
      expectEnvelope(await remove(undefined, post.id), 403, `/api/v1/posts/${post.id}`);
      expectText(await remove(intruder.token, "99999999999999999999"), 404, POST_NOT_FOUND);
      expectText(await remove(intruder.token, post.id), 401, NOT_AUTHOR_DELETE);
      expect(await t().deps.posts.findById(post.id)).toBeDefined();
    });
  });
});
