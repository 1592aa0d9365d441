import { DEFAULT_IDEMPOTENCY_TTL_MS } from "@posts/domain";
import { aUser } from "@posts/domain/testing";
import type { LightMyRequestResponse } from "fastify";
import { describe, expect, it } from "vitest";
import { expectEnvelope, expectErrorJson } from "../support/expectations.js";
import { tokenFor } from "../support/mint-token.js";
import { postRequests } from "../support/route-requests.js";
import { buildTestApp, useTestApp } from "../support/test-app.js";

const PATH = "/api/v1/posts";
const KEY_MESSAGE = "Idempotency-Key는 공백 없는 ASCII 문자 1자 이상 255자 이하여야 합니다.";
const TITLE_REQUIRED = { field: "title", message: "게시글 제목을 입력해주세요." };
const CONTENT_REQUIRED = { field: "content", message: "게시글 내용을 입력해주세요." };

/** Asserts the 400 of an invalid key: the envelope with exactly the key's message, no `errors`. */
function expectInvalidKey(response: LightMyRequestResponse): void {
  expectEnvelope(response, 400, PATH);
  expect(response.json().message).toBe(KEY_MESSAGE);
}

let keys = 0;
/** A key no other test uses. */
const freshKey = () => `key-${++keys}-${Math.random().toString(36).slice(2)}`;

describe("idempotent creation (docs/idempotency.md#the-rules)", () => {
  const t = useTestApp();
  const requests = postRequests(() => t().app);
  const inject = requests.inject;
  const create = (
    token: string | undefined,
    key: string | undefined,
    payload: unknown = { title: "t", content: "c" },
  ) => requests.create(token, payload, key === undefined ? {} : { "idempotency-key": key });
  const postCount = async () => (await t().deps.posts.listPage({ limit: 1_000_000 })).length;

  it("the first request with a key creates the post: 201, Location, no Idempotent-Replayed", async () => {
    const user = await t().aUserWithToken();
    const response = await create(user.token, freshKey(), { title: "제목", content: "본문" });
    expect({ status: response.statusCode, body: response.body }).toEqual({ status: 201, body: "" });
    expect(response.headers.location).toMatch(/^http:\/\/localhost(:\d+)?\/api\/v1\/posts\/\d+$/);
    expect(response.headers["idempotent-replayed"]).toBeUndefined();
    const id = Number(String(response.headers.location).split("/").at(-1));
    expect(await t().deps.posts.findById(id)).toMatchObject({ title: "제목", content: "본문" });
  });

  it("a retry with the same key, title and content answers the same Location, replayed, and creates nothing", async () => {
    const user = await t().aUserWithToken();
    const key = freshKey();
    const payload = { title: "  same ", content: "same\r\n", ignored: 1 };
    const first = await create(user.token, key, payload);
    const count = await postCount();
    for (const retry of [payload, { title: "  same ", content: "same\r\n", other: "ignored too" }]) {
      const replay = await create(user.token, key, retry);
      expect({
        status: replay.statusCode,
        body: replay.body,
        location: replay.headers.location,
        replayed: replay.headers["idempotent-replayed"],
      }).toEqual({ status: 201, body: "", location: first.headers.location, replayed: "true" });
    }
    expect(await postCount()).toBe(count);
  });

  it("replays even after the post has been modified or deleted", async () => {
    const user = await t().aUserWithToken();
    const key = freshKey();
    const first = await create(user.token, key);
    const path = new URL(String(first.headers.location)).pathname;
    const patched = await inject({
      method: "PATCH",
      url: path,
      headers: { "x-auth-token": user.token },
      payload: { title: "changed" },
    });
    expect(patched.statusCode).toBe(200);
    const afterPatch = await create(user.token, key);
    expect([afterPatch.statusCode, afterPatch.headers.location]).toEqual([201, first.headers.location]);
    expect(afterPatch.headers["idempotent-replayed"]).toBe("true");

    expect(
      (await inject({ method: "DELETE", url: path, headers: { "x-auth-token": user.token } })).statusCode,
    ).toBe(204);
    const afterDelete = await create(user.token, key);
    expect([afterDelete.statusCode, afterDelete.headers.location]).toEqual([201, first.headers.location]);
    expect(afterDelete.headers["idempotent-replayed"]).toBe("true");
  });

  it("the same key with another title or content → 422 Unprocessable Entity, nothing created", async () => {
    const user = await t().aUserWithToken();
    const key = freshKey();
    await create(user.token, key, { title: "t", content: "c" });
    const count = await postCount();
    for (const payload of [
      { title: "t2", content: "c" },
      { title: "t", content: "c2" },
      { title: "T", content: "c" },
      { title: "t ", content: "c" },
    ]) {
      const response = await create(user.token, key, payload);
      expectEnvelope(response, 422, PATH);
      expect(response.json().error).toBe("Unprocessable Entity");
      expect(response.headers.location).toBeUndefined();
    }
    expect(await postCount()).toBe(count);
  });

  it("keys belong to their user: two users with one key create two posts", async () => {
    const [alice, bob] = [await t().aUserWithToken(), await t().aUserWithToken()];
    const key = freshKey();
    const a = await create(alice.token, key);
    const b = await create(bob.token, key, { title: "other", content: "other" });
    expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
    expect(b.headers["idempotent-replayed"]).toBeUndefined();
    expect(a.headers.location).not.toBe(b.headers.location);
  });

  it("requests with one key sent at once create one post, and all answer its Location", async () => {
    const user = await t().aUserWithToken();
    const key = freshKey();
    const count = await postCount();
    const responses = await Promise.all(Array.from({ length: 5 }, () => create(user.token, key)));
    expect(responses.map((response) => response.statusCode)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(responses.map((response) => response.headers.location)).size).toBe(1);
    expect(
      responses.filter((response) => response.headers["idempotent-replayed"] === undefined),
    ).toHaveLength(1);
    expect(await postCount()).toBe(count + 1);
  });

  it("accepts 1 to 255 visible ASCII characters", async () => {
    const user = await t().aUserWithToken();
    for (const key of ["a", "!", "~", "k".repeat(255), `${freshKey()}!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`]) {
      const response = await create(user.token, key, { title: key, content: "c" });
      expect({ key, status: response.statusCode }).toEqual({ key, status: 201 });
    }
  });

  it("refuses any other value with the 400 envelope (a message, no errors), storing nothing", async () => {
    const user = await t().aUserWithToken();
    const count = await postCount();
    // "a, b" is how Node hands over a header sent twice.
    for (const key of ["", " ", "k".repeat(256), "a b", "a\tb", "é", "\x80", "a, b", "키"]) {
      expectInvalidKey(await create(user.token, key));
    }
    expect(await postCount()).toBe(count);
  });

  it("remembers only a 201: a request that failed leaves no trace, so the same key may be retried", async () => {
    const user = await t().aUserWithToken();
    const key = freshKey();
    expectEnvelope(await create(user.token, key, { title: " ", content: "c" }), 400, PATH, [TITLE_REQUIRED]);
    const fixed = await create(user.token, key, { title: "fixed", content: "c" });
    expect(fixed.statusCode).toBe(201);
    expect(fixed.headers["idempotent-replayed"]).toBeUndefined();
    expectEnvelope(await create(user.token, key, { title: " ", content: "c" }), 400, PATH, [TITLE_REQUIRED]);
  });

  it("forgets a key IDEMPOTENCY_TTL_MS after it was used: the same key then creates a new post", async () => {
    const user = await t().aUserWithToken();
    const key = freshKey();
    const first = await create(user.token, key);
    t().deps.clock.advance(DEFAULT_IDEMPOTENCY_TTL_MS - 1);
    const stillRemembered = await create(user.token, key);
    expect(stillRemembered.headers["idempotent-replayed"]).toBe("true");
    t().deps.clock.advance(1);
    const forgotten = await create(user.token, key);
    expect(forgotten.statusCode).toBe(201);
    expect(forgotten.headers["idempotent-replayed"]).toBeUndefined();
    expect(forgotten.headers.location).not.toBe(first.headers.location);
  });

  describe("order of outcomes (docs/posts.md#create-post-apiv1posts)", () => {
    const BAD_KEY = "bad key";

    it("1. an invalid token → 401 before an invalid key", async () => {
      expectErrorJson(await create("not-a-token", BAD_KEY));
      expectErrorJson(await create("not-a-token", BAD_KEY, { title: " " }));
    });

    it("2. no token, or no ROLE_USER → 403 before an invalid key", async () => {
      const user = await aUser(t().deps.users);
      const admin = tokenFor(user, { roles: [{ authority: "ROLE_ADMIN" }] });
      expectEnvelope(await create(undefined, BAD_KEY), 403, PATH);
      expectEnvelope(await create("", BAD_KEY), 403, PATH);
      expectEnvelope(await create(admin, BAD_KEY), 403, PATH);
    });

    it("3. a body that is not JSON → 415, one over the limit → 413, both before an invalid key", async () => {
      const user = await t().aUserWithToken();
      const notJson = await inject({
        method: "POST",
        url: PATH,
        headers: { "x-auth-token": user.token, "content-type": "text/plain", "idempotency-key": BAD_KEY },
        payload: "title=x",
      });
      expectEnvelope(notJson, 415, PATH);
      const small = await buildTestApp({ bodyLimit: 1024 });
      try {
        const tooLarge = await small.app.inject({
          method: "POST",
          url: PATH,
          headers: {
            "x-auth-token": user.token,
            "content-type": "application/json",
            "idempotency-key": BAD_KEY,
          },
          payload: JSON.stringify({ title: "t", content: "x".repeat(2048) }),
        });
        expectEnvelope(tooLarge, 413, PATH);
      } finally {
        await small.app.close();
      }
    });

    it("4. an invalid key → 400 with the key's message before the title/content validation", async () => {
      const user = await t().aUserWithToken();
      for (const payload of [{}, { title: " ", content: 1 }, { title: "t" }]) {
        expectInvalidKey(await create(user.token, BAD_KEY, payload));
      }
      expectInvalidKey(await create(user.token, "", {}));
    });

    it("4. a body that is no JSON object is refused while parsing, before the use case judges the key", async () => {
      const user = await t().aUserWithToken();
      for (const payload of ["[]", "null", "{"]) {
        const response = await inject({
          method: "POST",
          url: PATH,
          headers: {
            "x-auth-token": user.token,
            "content-type": "application/json",
            "idempotency-key": BAD_KEY,
          },
          payload,
        });
        expectEnvelope(response, 400, PATH);
        expect(response.json().message).not.toBe(KEY_MESSAGE);
      }
    });

    it("4. a valid key does not hide the validation 400, nor a key used before with other text", async () => {
      const user = await t().aUserWithToken();
      const key = freshKey();
      expectEnvelope(await create(user.token, key, {}), 400, PATH, [TITLE_REQUIRED, CONTENT_REQUIRED]);
      await create(user.token, key, { title: "t", content: "c" });
      expectEnvelope(await create(user.token, key, { title: "", content: "c" }), 400, PATH, [TITLE_REQUIRED]);
    });

    it("5. the token's user no longer exists → 401 after the key and validation 400s, before a replay or a 422", async () => {
      const gone = await aUser(t().deps.users);
      const token = tokenFor(gone);
      const key = freshKey();
      expect((await create(token, key, { title: "t", content: "c" })).statusCode).toBe(201);
      await t().deps.users.delete(gone.id);
      expectInvalidKey(await create(token, BAD_KEY));
      expectEnvelope(await create(token, key, { title: " ", content: "c" }), 400, PATH, [TITLE_REQUIRED]);
      expectErrorJson(await create(token, key, { title: "t", content: "c" }));
      expectErrorJson(await create(token, key, { title: "other", content: "c" }));
    });
  });
});
