import { randomBytes } from "node:crypto";
import type { Reply } from "../http/api-client.js";
import type { ConformanceCase } from "../runner/conformance-case.js";
import { jsonOfSize } from "../support/bodies.js";
import {
  expectEmpty,
  expectEnvelope,
  expectEqual,
  expectErrorJson,
  expectThat,
  show,
} from "../support/expectations.js";
import { type Fixture, POSTS, type TestUser, USER } from "../support/fixture.js";
import { INVALID_TOKEN } from "../support/token-forge.js";
import { postIdOfLocation } from "../support/wire-shapes.js";

const section = "docs/idempotency.md";
const REPLAYED = "idempotent-replayed";
// Visible ASCII (0x21–0x7E) only; fetch refuses anything above 0xFF, and "é" goes out as one byte 0xE9.
const INVALID_KEYS: readonly { readonly label: string; readonly key: string }[] = [
  { label: "empty", key: "" },
  { label: "256 characters", key: "k".repeat(256) },
  { label: "a space", key: "two words" },
  { label: "non-ASCII", key: "clé" },
  { label: "a tab", key: "tab\there" },
];

/** A fresh key: 1 to 255 visible ASCII characters. */
const newKey = () => `conformance-${randomBytes(12).toString("hex")}`;

/** Fails unless the reply is a 201 that created or replayed a post; answers the post id. */
function expectCreated(reply: Reply, replayed: boolean): number {
  expectEmpty(reply, 201);
  const header = reply.headers.get(REPLAYED);
  expectThat(
    replayed ? header === "true" : header === null || header.toLowerCase() !== "true",
    `${reply.request}: Idempotent-Replayed`,
    replayed ? "true" : "absent (a first request is not a replay)",
    header,
  );
  return postIdOfLocation(reply);
}

async function countOf(fixture: Fixture, user: TestUser): Promise<number> {
  return (await fixture.postsOf(user)).length;
}

/** docs/idempotency.md: the Idempotency-Key header of POST /api/v1/posts. */
export const idempotencyCases: readonly ConformanceCase[] = [
  // Written out whole, case by case, though alike in shape: see ConformanceCase.
  {
    section,
    name: "an invalid Idempotency-Key (empty, 256 characters, a space, non-ASCII, a tab) → 400 envelope, nothing stored",
    async run({ api, fixture }) {
      const writer = await fixture.register("badkey");
      for (const { key } of INVALID_KEYS) {
        const reply = await api.post(POSTS, {
          token: writer.token,
          headers: { "idempotency-key": key },
          json: { title: "t", content: "c" },
        });
        expectEnvelope(reply, 400, POSTS);
      }
      expectEqual(await countOf(fixture, writer), 0, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "an invalid key is judged after 401, 403, 415 and 413, and before validation and the user check",
    async run({ api, fixture, options }) {
      const writer = await fixture.shared("writer");
      const headers = { "idempotency-key": "two words" };
      expectErrorJson(await api.post(POSTS, { token: INVALID_TOKEN, headers, json: {} }));
      expectEnvelope(await api.post(POSTS, { headers, json: {} }), 403, POSTS);
      expectEnvelope(
        await api.post(POSTS, { token: writer.token, headers, contentType: "text/plain", body: "x" }),
        415,
        POSTS,
      );
      const tooLarge = jsonOfSize(options.bodyLimit + 1);
      expectEnvelope(
        await api.post(POSTS, {
          token: writer.token,
          headers,
          contentType: "application/json",
          body: tooLarge,
        }),
        413,
        POSTS,
      );
      const beforeValidation = expectEnvelope(
        await api.post(POSTS, { token: writer.token, headers, json: {} }),
        400,
        POSTS,
      );
      const fields = Array.isArray(beforeValidation.errors)
        ? beforeValidation.errors.map((entry) => (entry as { field?: unknown }).field)
        : [];
      expectThat(
        !fields.includes("title") && !fields.includes("content"),
        "the 400 of an invalid key with an invalid body",
        "about the key, not title or content",
        show(beforeValidation),
      );
      const gone = await fixture.register("keygone");
      expectEmpty(await api.delete(USER, { token: gone.token }), 204);
      fixture.forget(gone);
      expectEnvelope(
        await api.post(POSTS, { token: gone.token, headers, json: { title: "t", content: "c" } }),
        400,
        POSTS,
      );
    },
  },
  {
    section,
    name: "a key of 255 visible ASCII characters is accepted",
    async run({ api, fixture }) {
      const writer = await fixture.shared("writer");
      const visible = Array.from({ length: 0x7e - 0x21 + 1 }, (_, index) =>
        String.fromCharCode(0x21 + index),
      ).join("");
      const key = `${randomBytes(8).toString("hex")}${visible}`.padEnd(255, "~").slice(0, 255);
      const reply = await api.post(POSTS, {
        token: writer.token,
        headers: { "idempotency-key": key },
        json: { title: "긴 키", content: "c" },
      });
      expectCreated(reply, false);
    },
  },
  {
    section,
    name: "a retry with the same key, title and content → 201, same Location, Idempotent-Replayed: true, nothing created",
    async run({ api, fixture }) {
      const writer = await fixture.register("replay");
      const key = newKey();
      const send = () =>
        api.post(POSTS, {
          token: writer.token,
          headers: { "idempotency-key": key },
          json: { title: "재시도", content: "본문" },
        });
      const first = await send();
      const id = expectCreated(first, false);
      for (let retry = 0; retry < 2; retry += 1) {
        const again = await send();
        expectEqual(expectCreated(again, true), id, "post id of the replay");
        expectEqual(again.headers.get("location"), first.headers.get("location"), "Location of the replay");
      }
      expectEqual(await countOf(fixture, writer), 1, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "the replay holds after the post was modified, and after it was deleted: same Location, nothing created",
    async run({ api, fixture }) {
      const writer = await fixture.register("replaylater");
      const key = newKey();
      const json = { title: "원래", content: "원래 본문" };
      const send = () => api.post(POSTS, { token: writer.token, headers: { "idempotency-key": key }, json });
      const id = expectCreated(await send(), false);
      expectEqual(
        (await api.patch(`${POSTS}/${id}`, { token: writer.token, json: { title: "바뀜" } })).status,
        200,
        "PATCH",
      );
      expectEqual(expectCreated(await send(), true), id, "post id replayed after a PATCH");
      expectEmpty(await api.delete(`${POSTS}/${id}`, { token: writer.token }), 204);
      expectEqual(expectCreated(await send(), true), id, "post id replayed after a DELETE");
      expectEqual(await countOf(fixture, writer), 0, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "the same key with another title or content → 422 envelope Unprocessable Entity, nothing created",
    async run({ api, fixture }) {
      const writer = await fixture.register("conflict");
      const key = newKey();
      const headers = { "idempotency-key": key };
      expectCreated(
        await api.post(POSTS, { token: writer.token, headers, json: { title: "t", content: "c" } }),
        false,
      );
      for (const json of [
        { title: "t2", content: "c" },
        { title: "t", content: "c2" },
        { title: "t ", content: "c" },
      ]) {
        expectEnvelope(await api.post(POSTS, { token: writer.token, headers, json }), 422, POSTS);
      }
      expectEqual(await countOf(fixture, writer), 1, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "keys belong to users: two users may use the same key independently",
    async run({ api, fixture }) {
      const first = await fixture.register("keyowner");
      const second = await fixture.register("keyowner");
      const headers = { "idempotency-key": newKey() };
      const json = { title: "같은 키", content: "같은 본문" };
      const a = expectCreated(await api.post(POSTS, { token: first.token, headers, json }), false);
      const b = expectCreated(await api.post(POSTS, { token: second.token, headers, json }), false);
      expectThat(a !== b, "the posts of two users with one key", "two posts", [a, b]);
      expectEqual(
        [await countOf(fixture, first), await countOf(fixture, second)],
        [1, 1],
        "posts of each user",
      );
    },
  },
  {
    section,
    name: "5 concurrent requests with one key create one post, and all answer 201 with its Location",
    async run({ api, fixture }) {
      const writer = await fixture.register("racekey");
      const headers = { "idempotency-key": newKey() };
      const replies = await Promise.all(
        [1, 2, 3, 4, 5].map(() =>
          api.post(POSTS, { token: writer.token, headers, json: { title: "동시", content: "c" } }),
        ),
      );
      for (const reply of replies) expectEmpty(reply, 201);
      const ids = replies.map((reply) => postIdOfLocation(reply));
      expectEqual(new Set(ids).size, 1, `distinct Locations among ${show(ids)}`);
      expectEqual(await countOf(fixture, writer), 1, `posts of user ${writer.id}`);
    },
  },
  {
    section,
    name: "a request that failed (400, 403, 413, 415) leaves no trace: the same key then creates a post",
    async run({ api, fixture, options }) {
      const writer = await fixture.register("retryfix");
      const failures = [
        (headers: Record<string, string>) =>
          api.post(POSTS, { token: writer.token, headers, json: { title: " ", content: "c" } }),
        (headers: Record<string, string>) => api.post(POSTS, { headers, json: { title: "t", content: "c" } }),
        (headers: Record<string, string>) =>
          api.post(POSTS, {
            token: writer.token,
            headers,
            contentType: "application/json",
            body: jsonOfSize(options.bodyLimit + 1),
          }),
        (headers: Record<string, string>) =>
          api.post(POSTS, {
            token: writer.token,
            headers,
            contentType: "text/plain",
            body: '{"title":"t","content":"c"}',
          }),
      ];
      for (const [index, fail] of failures.entries()) {
        const headers = { "idempotency-key": newKey() };
        const failed = await fail(headers);
        expectThat(
          [400, 403, 413, 415].includes(failed.status),
          `${failed.request}: status`,
          "400, 403, 413 or 415",
          failed.status,
        );
        expectCreated(
          await api.post(POSTS, { token: writer.token, headers, json: { title: "t", content: "c" } }),
          false,
        );
        expectEqual(await countOf(fixture, writer), index + 1, `posts of user ${writer.id}`);
      }
    },
  },
];
