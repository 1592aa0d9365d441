import { PostgresPostRepository } from "@posts/adapters-postgres";
import type { Post } from "@posts/domain";
import { type KyselyPlugin, sql } from "kysely";
import { beforeEach, describe, expect, it } from "vitest";
import { estimatedBytes, PostCache } from "../../src/post-cache/post-cache.js";
import { describeOnEachEngine, serverOnly, useTestDatabase } from "../use-test-database.js";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");

const aPostValue = (id: number, overrides: Partial<Post> = {}): Post => ({
  id,
  title: `title ${id}`,
  content: "content",
  createdAt: CREATED_AT,
  updatedAt: CREATED_AT,
  author: { id: 1, email: "writer@example.com" },
  ...overrides,
});

describe("PostCache", () => {
  it("finds a post only at the version it holds, and counts hits and misses", () => {
    const cache = new PostCache({ maxBytes: 1_000_000 });
    const post = aPostValue(1);
    cache.store(post);
    expect(cache.lookUp(1, CREATED_AT.getTime())).toBe(post);
    expect(cache.lookUp(1, CREATED_AT.getTime() + 1)).toBeUndefined();
    expect(cache.lookUp(2, CREATED_AT.getTime())).toBeUndefined();
    expect(cache.peek(1, CREATED_AT.getTime())).toBe(post);
    expect(cache.holds(post)).toBe(true);
    expect(cache.holds({ ...post })).toBe(false);
    cache.forget(1);
    expect(cache.holds(post)).toBe(false);
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 2, posts: 0, bytes: 0 });
  });

  it("counts a post's text as held (two bytes a character beyond Latin-1) and again as the UTF-8 of its JSON", () => {
    const latin = aPostValue(1, { title: "é", content: "x".repeat(1000) });
    const korean = aPostValue(2, { title: "한", content: "x".repeat(1000) });
    const characters = 1 + 1000 + latin.author.email.length;
    // "é" is two bytes in UTF-8, "한" three; 120 bytes of JSON around the text, 760 of objects.
    expect(estimatedBytes(latin)).toBe(characters + (characters + 1) + 120 + 760);
    expect(estimatedBytes(korean)).toBe(2 * characters + (characters + 2) + 120 + 760);
  });

  it("holds no more bytes than it is given, the least recently used going first, and never a post larger than allowed", () => {
    const cache = new PostCache({ maxBytes: 20_000, maxPostBytes: 5000 });
    const posts = Array.from({ length: 100 }, (_, i) => aPostValue(i + 1, { content: "x".repeat(500) }));
    for (const post of posts) cache.store(post);
    const { posts: held, bytes } = cache.stats();
    expect(bytes).toBeLessThanOrEqual(20_000);
    expect(held).toBe(Math.floor(20_000 / estimatedBytes(posts[0] as Post)));
    expect(cache.holds(posts[99] as Post)).toBe(true);
    expect(cache.holds(posts[0] as Post)).toBe(false);

    const large = aPostValue(1000, { content: "x".repeat(5000) });
    cache.store(large);
    expect(cache.holds(large)).toBe(false);
    expect(() => new PostCache({ maxBytes: 0 })).toThrow(RangeError);
  });

  it("admits a page's posts from its second reading while it has room, and from its fourth once full", () => {
    const cache = new PostCache({ maxBytes: 40_000 });
    expect(cache.admits("first page")).toBe(false);
    expect(cache.admits("first page")).toBe(true);
    expect(cache.admits("first page")).toBe(true);
    // Fill it past seven eighths of its bound.
    for (let id = 1; cache.stats().bytes < 36_000; id++)
      cache.store(aPostValue(id, { content: "x".repeat(300) }));
    expect(cache.admits("another page")).toBe(false);
    expect(cache.admits("another page")).toBe(false);
    expect(cache.admits("another page")).toBe(false);
    expect(cache.admits("another page")).toBe(true);
  });

  it("reads pages through the cache once recent pages were mostly cached, and in full once they mostly were not", () => {
    const cache = new PostCache({ maxBytes: 1_000_000 });
    expect(cache.readsThrough).toBe(false);
    let pages = 0;
    while (!cache.readsThrough && pages < 1000) {
      cache.notePage(true);
      pages++;
    }
    // About thirty pages in a row, not one: a single cached page does not turn a cold workload.
    expect(pages).toBeGreaterThan(20);
    expect(pages).toBeLessThan(60);
    for (let i = 0; i < 10; i++) cache.notePage(false);
    // Apart, so that a workload in between does not flap.
    expect(cache.readsThrough).toBe(true);
    for (let i = 0; i < 60; i++) cache.notePage(false);
    expect(cache.readsThrough).toBe(false);
    expect(cache.stats().pagesThroughCache + cache.stats().pagesInFull).toBe(pages + 70);

    const always = new PostCache({ maxBytes: 1_000_000, alwaysThroughCache: true });
    for (let i = 0; i < 100; i++) always.notePage(false);
    expect(always.readsThrough).toBe(true);
  });
});

describeOnEachEngine("PostgresPostRepository with a post cache on %s", (engine) => {
  const database = useTestDatabase(engine);
  const onServer = serverOnly(engine);
  beforeEach(async () => database().truncate());

  const author = async (email = `writer-${Math.random()}@example.com`) => {
    const created = await database().users.create({ email, passwordHash: "hash", createdAt: CREATED_AT });
    if (!created.ok) throw new Error(created.error);
    return created.value;
  };
  const posts = async (authorId: number, count: number) => {
    const made: Post[] = [];
    for (let i = 0; i < count; i++) {
      const post = await database().posts.create({
        authorId,
        title: `title ${i}`,
        content: `content ${i}`,
        createdAt: new Date(CREATED_AT.getTime() + i),
      });
      if (post === undefined) throw new Error("author gone");
      made.push(post);
    }
    return made;
  };
  const cached = (alwaysThroughCache = true) =>
    new PostgresPostRepository(database().db, { cache: { maxBytes: 1_000_000, alwaysThroughCache } });

  it("answers a page read again with the very posts it cached, equal to what the database holds", async () => {
    const writer = await author();
    await posts(writer.id, 5);
    const repository = cached();
    const plain = await database().posts.listPage({ limit: 3 });
    const first = await repository.listPage({ limit: 3 });
    const second = await repository.listPage({ limit: 3 });
    const third = await repository.listPage({ limit: 3 });
    expect(first).toEqual(plain);
    expect(second).toEqual(plain);
    // Admitted at the second reading, served from the cache at the third.
    third.forEach((post, i) => {
      expect(post).toBe(second[i]);
      expect(repository.holdsCached(post)).toBe(true);
    });
    expect(repository.cacheStats()).toMatchObject({ hits: 3, misses: 6, pagesThroughCache: 3, posts: 3 });
    expect(await repository.findById(third[0]?.id ?? 0)).toBe(third[0]);
  });

  it("lists the version another instance wrote, and not a post another instance deleted", async () => {
    const writer = await author();
    const [oldest, middle, newest] = await posts(writer.id, 3);
    const repository = cached();
    for (let i = 0; i < 3; i++) await repository.listPage({ limit: 10 });
    const other = database().posts;
    const updated = await other.update({
      id: (middle as Post).id,
      authorId: writer.id,
      changes: { content: "changed elsewhere" },
      now: new Date(CREATED_AT.getTime() + 60_000),
    });
    expect(updated.ok).toBe(true);
    expect(await other.delete({ id: (newest as Post).id, authorId: writer.id })).toEqual({
      ok: true,
      value: undefined,
    });
    const page = await repository.listPage({ limit: 10 });
    expect(page).toEqual(await other.listPage({ limit: 10 }));
    expect(page.map((post) => post.content)).toEqual(["changed elsewhere", (oldest as Post).content]);
    expect(await repository.findById((middle as Post).id)).toEqual(updated.ok ? updated.value : undefined);
  });

  it("keeps what it changed itself of the posts it holds, and forgets what it deleted", async () => {
    const writer = await author();
    const [other, held] = await posts(writer.id, 2);
    const repository = cached();
    // Admitted at the second reading: the newest post is held, the other one not.
    for (let i = 0; i < 2; i++) await repository.listPage({ limit: 1 });
    const change = (post: Post | undefined, title: string) =>
      repository.update({
        id: (post as Post).id,
        authorId: writer.id,
        changes: { title },
        now: new Date(CREATED_AT.getTime() + 1000),
      });
    const updated = await change(held, "mine");
    const passing = await change(other, "not read by pages");
    if (!updated.ok || !passing.ok) throw new Error("not updated");
    expect(repository.holdsCached(updated.value)).toBe(true);
    expect(repository.holdsCached(passing.value)).toBe(false);
    expect(await repository.listPage({ limit: 1 })).toEqual([updated.value]);
    expect((await repository.listPage({ limit: 1 }))[0]).toBe(updated.value);
    await repository.delete({ id: updated.value.id, authorId: writer.id });
    expect(repository.holdsCached(updated.value)).toBe(false);
    expect(await repository.listPage({ limit: 1 })).toEqual([passing.value]);
  });

  onServer.it(
    "reads a page whole again when one of its posts is deleted between its two statements",
    async () => {
      // The deletion runs on a second connection while the first statement's result comes back.
      const writer = await author();
      const made = await posts(writer.id, 4);
      const doomed = made[2] as Post;
      let armed = true;
      const deleteAfterListing: KyselyPlugin = {
        transformQuery: (args) => args.node,
        transformResult: async (args) => {
          const columns = Object.keys(args.result.rows[0] ?? {});
          if (armed && columns.length === 2 && columns.includes("updated_at")) {
            armed = false;
            await sql`DELETE FROM posts WHERE id = ${doomed.id}`.execute(database().db);
          }
          return args.result;
        },
      };
      const repository = new PostgresPostRepository(database().db.withPlugin(deleteAfterListing), {
        cache: { maxBytes: 1_000_000, alwaysThroughCache: true },
      });
      const page = await repository.listPage({ limit: 3 });
      expect(armed).toBe(false);
      expect(page.map((post) => post.id)).toEqual([made[3], made[1], made[0]].map((post) => post?.id));
    },
  );

  it("reads ever new pages in full without filling the cache, and a page read again through it", async () => {
    const writer = await author();
    const made = await posts(writer.id, 40);
    const repository = new PostgresPostRepository(database().db, { cache: { maxBytes: 1_000_000 } });
    // Forty different pages, each read once: nothing is admitted, every page read in full.
    for (const post of made) await repository.listPage({ limit: 2, beforeId: post.id });
    expect(repository.cacheStats()).toMatchObject({ pagesThroughCache: 0, pagesInFull: 40, posts: 0 });
    // One page, again and again: cached from its second reading, then read through the cache.
    for (let i = 0; i < 60; i++) await repository.listPage({ limit: 2 });
    const stats = repository.cacheStats();
    expect(stats?.posts).toBe(2);
    expect(stats?.pagesThroughCache).toBeGreaterThan(0);
  });
});
