import { PostgresPostRepository, type RunStatement } from "@posts/adapters-postgres";
import type { PostPageQuery, ReadPost } from "@posts/domain";
import { CompiledQuery } from "kysely";
import { expect, it } from "vitest";
import { describeOnEachEngine, useTestDatabase } from "../../use-test-database.js";

const CREATED_AT = new Date("2026-11-28T10:15:30.123Z");

/** What a page is, as a caller can tell pages apart: its posts' ids, titles and versions, in order. */
const shape = (posts: readonly ReadPost[]) => posts.map((p) => [p.id, p.title, p.updatedAt.getTime()]);

// The two ways a repository reads a page: in full, and through a cache (ids and versions, then
// the posts the cache lacks).
const MODES = [
  ["in full", {}],
  ["through a cache", { cache: { maxBytes: 64 * 1024 * 1024, alwaysThroughCache: true } }],
] as const;

describeOnEachEngine("pages read together on %s", (engine) => {
  const database = useTestDatabase(engine);
  let run = 0;

  /** Three authors (7 posts, 2 posts, none), posts interleaved; a repository recording its reads. */
  async function setUp(options: (typeof MODES)[number][1]) {
    run++;
    const texts: string[] = [];
    const record: RunStatement = async (text, parameters) => {
      texts.push(text);
      return (await database().db.executeQuery(CompiledQuery.raw(text, [...parameters]))).rows;
    };
    const posts = new PostgresPostRepository(database().db, { ...options, readStatements: record });
    const authors: number[] = [];
    for (const name of ["many", "few", "none"]) {
      const author = await database().users.create({
        email: `pages-${engine}-${run}-${name}@example.com`,
        passwordHash: "hash",
        createdAt: CREATED_AT,
      });
      if (!author.ok) throw new Error(author.error);
      authors.push(author.value.id);
    }
    const [many, few, none] = authors as [number, number, number];
    const ids: number[] = [];
    for (let i = 0; i < 9; i++) {
      const authorId = i === 2 || i === 6 ? few : many;
      const post = await posts.create({
        authorId,
        title: `post ${i}`,
        content: `content ${i}`,
        createdAt: CREATED_AT,
      });
      ids.push(post?.id as number);
    }
    return { posts, texts, many, few, none, ids };
  }

  it.each(MODES)(
    "answers pages of several authors and cursors asked at once %s, each as if read alone, in one statement per shape",
    async (_mode, options) => {
      const { posts, texts, many, few, none, ids } = await setUp(options);
      const queries: PostPageQuery[] = [
        { limit: 4, authorId: many },
        { limit: 4, authorId: few },
        { limit: 4, authorId: none },
        { limit: 4, authorId: many, beforeId: ids[5] as number },
        { limit: 4, authorId: many },
        { limit: 4, authorId: few, beforeId: ids[2] as number },
      ];
      const alone: (readonly ReadPost[])[] = [];
      for (const query of queries) alone.push(await posts.listPage(query));
      // Twice, so that a cache admits every page's posts and the pages below read none by id.
      for (const query of queries) await posts.listPage(query);
      texts.length = 0;

      const together = await Promise.all(queries.map((query) => posts.listPage(query)));

      expect(together.map(shape)).toEqual(alone.map(shape));
      expect(together[0]?.map((p) => p.title)).toEqual(["post 8", "post 7", "post 5", "post 4"]);
      expect(together[1]?.map((p) => p.title)).toEqual(["post 6", "post 2"]);
      expect(together[2]).toEqual([]);
      expect(together[3]?.map((p) => p.title)).toEqual(["post 4", "post 3", "post 1", "post 0"]);
      expect(together[5]).toEqual([]);
      // Two shapes (an author; an author and a cursor), one statement each, and nothing else.
      expect(texts).toHaveLength(2);
      for (const text of texts) expect(text).toMatch(/unnest\(/i);
    },
  );

  it("reads the same page asked for at once in full with one statement of its own", async () => {
    const { posts, texts, ids } = await setUp({});
    const pages = await Promise.all([1, 2, 3, 4].map(() => posts.listPage({ limit: 3 })));

    for (const page of pages) expect(page.map((p) => p.id)).toEqual([ids[8], ids[7], ids[6]]);
    expect(texts).toHaveLength(1);
    expect(texts[0]).not.toMatch(/unnest\(|ANY\(/i);
  });

  it("reads the same page asked for at once through a cache with one listing, and the posts it lacks with one statement", async () => {
    const { posts, texts, ids } = await setUp(MODES[1][1]);
    await posts.listPage({ limit: 3 });
    texts.length = 0;

    const pages = await Promise.all([1, 2, 3, 4].map(() => posts.listPage({ limit: 3 })));

    for (const page of pages) expect(page.map((p) => p.id)).toEqual([ids[8], ids[7], ids[6]]);
    expect(texts).toHaveLength(2);
    expect(texts[0]).not.toMatch(/unnest\(|ANY\(/i);
    expect(texts[1]).toMatch(/IN \(SELECT unnest\(/i);
    // The same objects in every page, cached now: the next pages read the listing alone.
    for (const page of pages.slice(1)) expect(page.every((post, i) => post === pages[0]?.[i])).toBe(true);
    texts.length = 0;
    await Promise.all([1, 2].map(() => posts.listPage({ limit: 3 })));
    expect(texts).toHaveLength(1);
  });

  it("reads pages of different sizes asked at once each by the statement of its size", async () => {
    const { posts, texts, ids } = await setUp({});
    const [three, five, byCursor] = await Promise.all([
      posts.listPage({ limit: 3 }),
      posts.listPage({ limit: 5 }),
      posts.listPage({ limit: 2, beforeId: ids[2] as number }),
    ]);
    expect(three.map((p) => p.id)).toEqual([ids[8], ids[7], ids[6]]);
    expect(five.map((p) => p.id)).toEqual([ids[8], ids[7], ids[6], ids[5], ids[4]]);
    expect(byCursor.map((p) => p.id)).toEqual([ids[1], ids[0]]);
    expect(texts).toHaveLength(3);
  });

  it.each(MODES)(
    "sees, in every page of a batch %s, a change committed before the pages were asked for",
    async (_mode, options) => {
      const { posts, many, few, ids } = await setUp(options);
      await Promise.all([
        posts.listPage({ limit: 2, authorId: many }),
        posts.listPage({ limit: 2, authorId: few }),
      ]);
      const updated = await posts.update({
        id: ids[6] as number,
        authorId: few,
        changes: { title: "changed" },
        now: new Date(CREATED_AT.getTime() + 1000),
      });
      expect(updated.ok).toBe(true);
      const created = await posts.create({
        authorId: many,
        title: "newest",
        content: "text",
        createdAt: CREATED_AT,
      });

      const [ofMany, ofFew] = await Promise.all([
        posts.listPage({ limit: 2, authorId: many }),
        posts.listPage({ limit: 2, authorId: few }),
      ]);
      expect(ofMany.map((p) => [p.id, p.title])).toEqual([
        [created?.id, "newest"],
        [ids[8], "post 8"],
      ]);
      expect(ofFew.map((p) => p.title)).toEqual(["changed", "post 2"]);
    },
  );
});
