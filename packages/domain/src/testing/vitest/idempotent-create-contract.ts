import { describe, expect } from "vitest";
import type { IdempotencyKey } from "../../ports/post-repository.js";
import type { NewPost } from "../../post.js";
import { createPost } from "../../use-cases/create-post.js";
import { principalOf } from "../builders.js";
import { ManualClock } from "../manual-clock.js";
import type { PostContractContext } from "./post-contract-context.js";

const NOW = new Date("2026-11-22T10:15:30.123Z");
const HOUR = 3_600_000;
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);

// Keys unique to this run, so that a store kept from an earlier run cannot answer for them.
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
let sequence = 0;
const aKey = (label = "key") => `${label}-${run}-${++sequence}`;

/**
 * The post repository's idempotent creation and its key store: replays, reused keys, keys per
 * author, concurrency, expiry, the sweep, and keys forgotten with their user. Part of
 * `postRepositoryContract`.
 */
export function idempotentCreateContract({ fixture, spec, newAuthor }: PostContractContext): void {
  const createOnce = (
    author: { readonly id: number },
    key: string,
    text: { title?: string; content?: string } = {},
    options: { createdAt?: Date; expiresAt?: Date } = {},
  ) => {
    const post: NewPost = {
      authorId: author.id,
      title: text.title ?? "제목",
      content: text.content ?? "본문",
      createdAt: options.createdAt ?? NOW,
    };
    const claim: IdempotencyKey = { key, expiresAt: options.expiresAt ?? at(24 * HOUR) };
    return fixture().posts.createIdempotently(post, claim);
  };
  const idOf = (result: Awaited<ReturnType<typeof createOnce>>) => (result.ok ? result.value.id : undefined);
  const postsOf = async (author: { readonly id: number }) =>
    (await fixture().posts.listPage({ limit: 100, authorId: author.id })).map((post) => post.id);

  describe("idempotent create", () => {
    spec("stores the post under a new key and answers its id, not replayed", async () => {
      const author = await newAuthor();
      const created = await createOnce(author, aKey(), { title: "제목 😀", content: "본문\r\n" });
      expect(created).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
      expect(await fixture().posts.findById(idOf(created) ?? 0)).toStrictEqual({
        id: idOf(created),
        title: "제목 😀",
        content: "본문\r\n",
        createdAt: NOW,
        updatedAt: NOW,
        author: { id: author.id, email: author.email },
      });
    });

    spec("replays the same key with the same text: the first post's id, and nothing stored", async () => {
      const author = await newAuthor();
      const key = aKey();
      const first = await createOnce(author, key, { title: "t", content: "c" });
      const again = await createOnce(author, key, { title: "t", content: "c" }, { createdAt: at(HOUR) });
      expect(again).toStrictEqual({ ok: true, value: { id: idOf(first), replayed: true } });
      expect(await postsOf(author)).toEqual([idOf(first)]);
    });

    spec("replays even after the post was modified and then deleted", async () => {
      const author = await newAuthor();
      const key = aKey();
      const first = await createOnce(author, key, { title: "t", content: "c" });
      const id = idOf(first) ?? 0;
      await fixture().posts.update({ id, authorId: author.id, changes: { title: "changed" }, now: at(1) });
      expect(await createOnce(author, key, { title: "t", content: "c" })).toStrictEqual({
        ok: true,
        value: { id, replayed: true },
      });
      await fixture().posts.delete({ id, authorId: author.id });
      expect(await createOnce(author, key, { title: "t", content: "c" })).toStrictEqual({
        ok: true,
        value: { id, replayed: true },
      });
      expect(await postsOf(author)).toEqual([]);
    });

    spec(
      "fails with key-reused for another title or content, creating nothing and keeping the first text",
      async () => {
        const author = await newAuthor();
        const key = aKey();
        const long = "긴 본문 😀 ".repeat(50_000);
        const first = await createOnce(author, key, { title: "ab", content: long });
        for (const other of [
          { title: "ab ", content: long },
          { title: "AB", content: long },
          { title: "ab", content: `${long}.` },
          { title: "ab", content: `${long.slice(0, -2)}X ` },
          // The same characters split differently between title and content.
          { title: "a", content: `b${long}` },
          { title: "ab", content: "cafe\u0301" },
        ]) {
          expect(await createOnce(author, key, other)).toStrictEqual({ ok: false, error: "key-reused" });
        }
        expect(await postsOf(author)).toEqual([idOf(first)]);
        expect(await createOnce(author, key, { title: "ab", content: long })).toStrictEqual({
          ok: true,
          value: { id: idOf(first), replayed: true },
        });
      },
    );

    spec("keeps keys per author: another author's same key creates their own post", async () => {
      const one = await newAuthor();
      const other = await newAuthor();
      const key = aKey();
      const first = await createOnce(one, key, { title: "t", content: "c" });
      const second = await createOnce(other, key, { title: "t", content: "c" });
      expect(second).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
      expect(idOf(second)).not.toBe(idOf(first));
      expect(await postsOf(other)).toEqual([idOf(second)]);
      // And each author's key still stands for their own post.
      expect(await createOnce(one, key, { title: "t", content: "c" })).toStrictEqual({
        ok: true,
        value: { id: idOf(first), replayed: true },
      });
    });

    spec("tells keys apart exactly: case and every visible ASCII character count", async () => {
      const author = await newAuthor();
      const key = `${aKey("Key")}!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`;
      const keys = [key, key.toLowerCase(), key.toUpperCase(), `${key}x`];
      const ids = [];
      for (const each of keys) ids.push(idOf(await createOnce(author, each)));
      expect(new Set(ids).size).toBe(keys.length);
      expect(await createOnce(author, keys[0] as string)).toStrictEqual({
        ok: true,
        value: { id: ids[0], replayed: true },
      });
    });

    spec("accepts a key of 255 characters", async () => {
      const author = await newAuthor();
      const key = aKey().padEnd(255, "~");
      const first = await createOnce(author, key);
      expect(await createOnce(author, key)).toStrictEqual({
        ok: true,
        value: { id: idOf(first), replayed: true },
      });
    });

    spec("fails with author-gone, storing nothing, when the author no longer exists", async () => {
      const author = await newAuthor();
      await fixture().users.delete(author.id);
      expect(await createOnce(author, aKey())).toStrictEqual({ ok: false, error: "author-gone" });
      expect(await postsOf(author)).toEqual([]);
    });

    spec("twenty creations with one key at the same time store one post, and all answer it", async () => {
      const author = await newAuthor();
      const key = aKey();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => createOnce(author, key, { title: "at once", content: "c" })),
      );
      const stored = await postsOf(author);
      expect(stored).toHaveLength(1);
      expect(results.filter((result) => result.ok && !result.value.replayed)).toHaveLength(1);
      expect(results).toEqual(
        Array.from({ length: 20 }, () => ({
          ok: true,
          value: { id: stored[0], replayed: expect.any(Boolean) },
        })),
      );
    });

    spec(
      "of creations with one key and different texts at the same time, one stores; the others are key-reused",
      async () => {
        const author = await newAuthor();
        const key = aKey();
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => createOnce(author, key, { title: "t", content: `c${i}` })),
        );
        const stored = await postsOf(author);
        expect(stored).toHaveLength(1);
        expect(results.filter((result) => result.ok)).toEqual([
          { ok: true, value: { id: stored[0], replayed: false } },
        ]);
        expect(results.filter((result) => !result.ok)).toHaveLength(9);
        expect(results.every((result) => result.ok || result.error === "key-reused")).toBe(true);
      },
    );

    spec("creations with different keys at the same time each store a post", async () => {
      const author = await newAuthor();
      const results = await Promise.all(Array.from({ length: 10 }, () => createOnce(author, aKey())));
      expect(results.every((result) => result.ok && !result.value.replayed)).toBe(true);
      expect((await postsOf(author)).sort()).toEqual(results.map(idOf).sort());
    });
  });

  describe("idempotency key expiry", () => {
    spec(
      "remembers a key until expiresAt, then stores a new post under it, which it remembers in turn",
      async () => {
        const author = await newAuthor();
        const key = aKey();
        const first = await createOnce(author, key, { title: "t", content: "c" }, { expiresAt: at(HOUR) });
        expect(
          await createOnce(author, key, { title: "t", content: "c" }, { createdAt: at(HOUR - 1) }),
        ).toStrictEqual({
          ok: true,
          value: { id: idOf(first), replayed: true },
        });
        expect(
          await createOnce(author, key, { title: "x", content: "c" }, { createdAt: at(HOUR - 1) }),
        ).toStrictEqual({
          ok: false,
          error: "key-reused",
        });
        // Expired: even another text is a new post.
        const second = await createOnce(
          author,
          key,
          { title: "x", content: "y" },
          { createdAt: at(HOUR), expiresAt: at(2 * HOUR) },
        );
        expect(second).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
        expect(idOf(second)).not.toBe(idOf(first));
        expect(
          await createOnce(author, key, { title: "x", content: "y" }, { createdAt: at(2 * HOUR - 1) }),
        ).toStrictEqual({ ok: true, value: { id: idOf(second), replayed: true } });
        expect(
          await createOnce(author, key, { title: "t", content: "c" }, { createdAt: at(2 * HOUR - 1) }),
        ).toStrictEqual({ ok: false, error: "key-reused" });
        expect(await postsOf(author)).toEqual([idOf(second), idOf(first)]);
      },
    );

    spec(
      "through createPost and a ManualClock: remembered for the configured time, then forgotten",
      async () => {
        const author = await newAuthor();
        const clock = new ManualClock(NOW);
        const deps = { posts: fixture().posts, clock, idempotencyTtlMs: 60_000 };
        const command = { principal: principalOf(author), title: "t", content: "c", idempotencyKey: aKey() };
        const first = await createPost(deps, command);
        expect(first).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
        clock.advance(59_999);
        expect(await createPost(deps, command)).toStrictEqual({
          ok: true,
          value: { id: first.ok ? first.value.id : 0, replayed: true },
        });
        clock.advance(1);
        const second = await createPost(deps, command);
        expect(second).toStrictEqual({ ok: true, value: { id: expect.any(Number), replayed: false } });
        expect(second.ok && first.ok && second.value.id > first.value.id).toBe(true);
      },
    );

    // These keys expire in 1971, long before any other test's, so the sweeps below count only them.
    const OLD = new Date("1971-03-01T00:00:00.000Z");
    const old = (offsetMs: number) => new Date(OLD.getTime() + offsetMs);
    const sweepOld = () => fixture().posts.deleteExpiredIdempotencyKeys(old(24 * HOUR));

    spec(
      "deleteExpiredIdempotencyKeys forgets exactly the keys expired at the instant, and answers how many",
      async () => {
        await sweepOld();
        const author = await newAuthor();
        const [k1, k2, k3] = [aKey(), aKey(), aKey()];
        const first = await createOnce(author, k1, {}, { createdAt: OLD, expiresAt: old(HOUR) });
        await createOnce(author, k2, {}, { createdAt: OLD, expiresAt: old(HOUR) });
        const third = await createOnce(author, k3, {}, { createdAt: OLD, expiresAt: old(2 * HOUR) });

        expect(await fixture().posts.deleteExpiredIdempotencyKeys(old(HOUR - 1))).toBe(0);
        expect(await fixture().posts.deleteExpiredIdempotencyKeys(old(HOUR))).toBe(2);
        expect(await fixture().posts.deleteExpiredIdempotencyKeys(old(HOUR))).toBe(0);
        // What was left is still remembered; the posts of the forgotten keys stay.
        expect(await createOnce(author, k3, {}, { createdAt: old(HOUR) })).toStrictEqual({
          ok: true,
          value: { id: idOf(third), replayed: true },
        });
        expect(await fixture().posts.findById(idOf(first) ?? 0)).toBeDefined();
        expect(await fixture().posts.deleteExpiredIdempotencyKeys(old(2 * HOUR))).toBe(1);
      },
    );

    spec("deleting a user forgets their keys and nobody else's", async () => {
      await sweepOld();
      const leaving = await newAuthor();
      const staying = await newAuthor();
      const key = aKey();
      await createOnce(leaving, key, {}, { createdAt: OLD, expiresAt: old(HOUR) });
      await createOnce(leaving, aKey(), {}, { createdAt: OLD, expiresAt: old(HOUR) });
      const kept = await createOnce(staying, key, {}, { createdAt: OLD, expiresAt: old(HOUR) });
      await fixture().users.delete(leaving.id);
      expect(await createOnce(staying, key, {}, { createdAt: old(1) })).toStrictEqual({
        ok: true,
        value: { id: idOf(kept), replayed: true },
      });
      expect(await fixture().posts.deleteExpiredIdempotencyKeys(old(HOUR))).toBe(1);
    });
  });
}
