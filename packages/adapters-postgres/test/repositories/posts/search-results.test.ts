import {
  PostgresChangeEventLog,
  PostgresPostRepository,
  type SearchResultsStats,
} from "@posts/adapters-postgres";
import type { Post, SearchPageQuery } from "@posts/domain";
import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { seedPosts } from "../../seeded-posts.js";
import { postgres, useTestDatabase } from "../../use-test-database.js";

const POSTS = 5_000;
const BUDGET = 1000;

// The matches a trigram step counted, kept for a rare term's next pages while no post changes.
describeNeeding(postgres, "a rare term's matches kept for its next pages, on a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");
  let pool: pg.Pool | undefined;
  let events: PostgresChangeEventLog | undefined;

  // A step time no busy machine reaches, so that every page of a rare term is answered in full.
  const repository = (searchResultIds?: number) =>
    new PostgresPostRepository(database().db, {
      searchBudget: BUDGET,
      searchIndexStepMs: 10_000,
      ...(searchResultIds === undefined ? {} : { searchResultIds }),
    });
  /** Every page of `search`, `size` posts each, following the cursors to the last. */
  const allPages = async (posts: PostgresPostRepository, search: string, size: number) => {
    const pages: number[][] = [];
    let beforeId: number | undefined;
    for (;;) {
      const query: SearchPageQuery = {
        limit: size + 1,
        search,
        ...(beforeId === undefined ? {} : { beforeId }),
      };
      const page = (await posts.searchPage(query)).posts.slice(0, size);
      pages.push(page.map((post) => post.id));
      if (page.length < size) return pages;
      beforeId = (page.at(-1) as Post).id;
    }
  };
  const ids = (posts: readonly Pick<Post, "id">[]) => posts.map((post) => post.id);
  const sql = async (text: string, values: unknown[] = []) => {
    if (pool === undefined) throw new Error("no pool");
    return (await pool.query(text, values)).rows;
  };

  beforeAll(async () => {
    const { connectionString } = database();
    if (connectionString === undefined) return;
    pool = new pg.Pool({ connectionString, max: 2 });
    // "Quokka" in one post in 50 (100 of them, spread); "wombat" in every other one (2,500).
    await seedPosts(pool, {
      users: 5,
      posts: POSTS,
      title: `'Post ' || g || CASE WHEN g % 50 = 7 THEN ' Quokka' ELSE '' END`,
      content: `md5(g::text) || CASE WHEN g % 2 = 0 THEN ' wombat' ELSE '' END`,
    });
    events = new PostgresChangeEventLog(database().db);
    // Numbered now: an event without a number whose transaction a later snapshot's xmin does not
    // pass (another test's transaction, in any database of the server, running since) would
    // have a step's count counted again, and these tests count what is kept.
    await events.numberPending();
  });
  afterAll(async () => {
    await events?.close();
    await pool?.end();
  });

  it("answer every page as the step would, and again by id while no post changes", async () => {
    if (pool === undefined || events === undefined) throw new Error("the posts were not seeded");
    const kept = repository();
    const without = repository(0);
    const stats = () => kept.searchResultStats();
    const expected = await allPages(without, "quokka", 7);
    expect(expected.flat()).toHaveLength(100);
    const pages = expected.length;
    expect(await allPages(kept, "quokka", 7)).toEqual(expected);
    // The first page's step counted every match below where its first walk stopped; each page
    // after it was read by id.
    expect(stats()).toMatchObject({ stores: 1, hits: pages - 1, stale: 0 });
    // Asked again: the first page, which that count does not cover, goes straight to the step
    // (the term is known to be rare), which counts every match; then every page by id.
    expect(await allPages(kept, "quokka", 7)).toEqual(expected);
    expect(await allPages(kept, "quokka", 7)).toEqual(expected);
    expect(stats()).toMatchObject({ stores: 2, hits: 3 * pages - 2, stale: 0 });
    // By author: a term of its own, kept apart.
    const authorId = ((await without.searchPage({ limit: 1, search: "quokka" })).posts[0] as Post).author.id;
    const author = { limit: 50, search: "quokka", authorId };
    const byAuthor = ids((await without.searchPage(author)).posts);
    expect(byAuthor.length).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) expect(ids((await kept.searchPage(author)).posts)).toEqual(byAuthor);
    // Counted below its first walk, then whole (now rare), then read by id.
    expect(stats()).toMatchObject({ stores: 4, hits: 3 * pages - 1, terms: 2 });
    // A term with more matches than the budget is never kept.
    for (let i = 0; i < 3; i++) await kept.searchPage({ limit: 21, search: "wombat" });
    expect(stats()).toMatchObject({ stores: 4, terms: 2 });
  }, 60_000);

  it("count again after any change: by another process, numbered or not, by this one, or a TRUNCATE", async () => {
    if (pool === undefined || events === undefined) throw new Error("the posts were not seeded");
    await events.numberPending();
    const kept = repository();
    const without = repository(0);
    const first = { limit: 21, search: "quokka" };
    const firstPage = async () => ids((await kept.searchPage(first)).posts);
    const stats = () => kept.searchResultStats() as SearchResultsStats;
    /** What `kept` did since `from`. */
    const since = (from: SearchResultsStats) => {
      const now = stats();
      return { stale: now.stale - from.stale, stores: now.stores - from.stores, hits: now.hits - from.hits };
    };
    const truth = async () => ids((await without.searchPage(first)).posts);
    // Counted below the first walk, then whole (the term now rare), then read by id.
    await firstPage();
    await firstPage();
    expect(await firstPage()).toEqual(await truth());
    expect(kept.searchResultStats()).toMatchObject({ stores: 2, hits: 1 });

    // Another process adds a match; its event waits for a number.
    const [added] = await sql(
      "INSERT INTO posts (title, content, created_at, updated_at, user_id) VALUES ('A new quokka', 'x', now(), now(), 1) RETURNING id",
    );
    const newest = Number(added.id);
    expect((await firstPage())[0]).toBe(newest);
    expect(kept.searchResultStats()).toMatchObject({ stale: 1, hits: 1, stores: 3 });
    // Counted after that change committed, while its event still waits for a number: read by id
    // when no transaction begun before the insert still ran at the count (its snapshot's xmin,
    // over every database of the server: another test's may), else counted again. Either way
    // the page holds the new post.
    expect((await firstPage())[0]).toBe(newest);
    // Numbered: the number moved, counted afresh once, then read by id.
    await events.numberPending();
    let from = stats();
    expect(await firstPage()).toEqual(await truth());
    expect(await firstPage()).toEqual(await truth());
    expect(since(from)).toEqual({ stale: 1, stores: 1, hits: 1 });

    // Another process's change, already numbered when asked: the number moved.
    const second = (await truth())[1] as number;
    await sql("UPDATE posts SET title = 'no longer', updated_at = now() WHERE id = $1", [second]);
    await events.numberPending();
    from = stats();
    const afterUpdate = await firstPage();
    expect(afterUpdate).not.toContain(second);
    expect(afterUpdate).toEqual(await truth());
    await firstPage();
    expect(since(from)).toEqual({ stale: 1, stores: 1, hits: 1 });

    // This process's own change drops the term without asking the database.
    const mine = (await kept.findById(newest)) as Post;
    const deleted = await kept.delete({ id: newest, authorId: mine.author.id });
    expect(deleted.ok).toBe(true);
    from = stats();
    expect(await firstPage()).not.toContain(newest);
    expect(since(from)).toEqual({ stale: 1, stores: 1, hits: 0 });

    // A page below a cursor, from matches counted from the newest.
    await events.numberPending();
    await firstPage();
    const all = (await allPages(without, "quokka", 1000))[0] as number[];
    const cursor = all[40] as number;
    from = stats();
    const below = await kept.searchPage({ limit: 5, search: "quokka", beforeId: cursor });
    expect(ids(below.posts)).toEqual(all.slice(41, 46));
    expect(since(from)).toEqual({ stale: 0, stores: 0, hits: 1 });

    // A TRUNCATE writes no event; it gives the table another relation, which the position names.
    await sql("TRUNCATE posts CASCADE");
    expect(await firstPage()).toEqual([]);
  }, 60_000);
});
