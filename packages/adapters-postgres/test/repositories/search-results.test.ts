import { PostgresChangeEventLog, PostgresPostRepository } from "@posts/adapters-postgres";
import type { Post, SearchPageQuery } from "@posts/domain";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedPosts } from "../seeded-posts.js";
import { useTestDatabase } from "../use-test-database.js";

const POSTS = 5_000;
const BUDGET = 1000;

// The matches a trigram step counted, kept for a rare term's next pages while no post changes.
describe("a rare term's matches kept for its next pages, on a PostgreSQL server", () => {
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
  const ids = (posts: readonly Post[]) => posts.map((post) => post.id);
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
  });
  afterAll(async () => {
    await events?.close();
    await pool?.end();
  });

  it("answer every page as the step would, storing nothing while a change waits for its number", async (context) => {
    if (pool === undefined || events === undefined) return context.skip();
    const kept = repository();
    const without = repository(0);
    // The seed's events are not numbered yet: the position cannot be told, nothing is kept.
    expect(await allPages(kept, "quokka", 7)).toEqual(await allPages(without, "quokka", 7));
    expect(kept.searchResultStats()).toMatchObject({ stores: 0, hits: 0 });

    await events.numberPending();
    const expected = await allPages(without, "quokka", 7);
    expect(expected.flat()).toHaveLength(100);
    expect(await allPages(kept, "quokka", 7)).toEqual(expected);
    // The first page's step (straight to it: the first pass found the term rare) counted every
    // match; each page after it was read by id, and every page when asked again.
    const pages = expected.length;
    expect(kept.searchResultStats()).toMatchObject({ stores: 1, hits: pages - 1 });
    expect(await allPages(kept, "quokka", 7)).toEqual(expected);
    expect(await allPages(kept, "quokka", 7)).toEqual(expected);
    expect(kept.searchResultStats()).toMatchObject({ stores: 1, hits: 3 * pages - 1 });
    // By author: a term of its own, kept apart.
    const authorId = ((await without.searchPage({ limit: 1, search: "quokka" })).posts[0] as Post).author.id;
    const author = { limit: 50, search: "quokka", authorId };
    const byAuthor = ids((await without.searchPage(author)).posts);
    expect(byAuthor.length).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) expect(ids((await kept.searchPage(author)).posts)).toEqual(byAuthor);
    // Counted below its first walk, then whole (now rare), then read by id.
    expect(kept.searchResultStats()).toMatchObject({ stores: 3, hits: 3 * pages, terms: 2 });
    // A term with more matches than the budget is never kept.
    for (let i = 0; i < 3; i++) await kept.searchPage({ limit: 21, search: "wombat" });
    expect(kept.searchResultStats()).toMatchObject({ stores: 3, terms: 2 });
  }, 60_000);

  it("count again after any change: by another process, numbered or not, by this one, or a TRUNCATE", async (context) => {
    if (pool === undefined || events === undefined) return context.skip();
    await events.numberPending();
    const kept = repository();
    const without = repository(0);
    const first = { limit: 21, search: "quokka" };
    const firstPage = async () => ids((await kept.searchPage(first)).posts);
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
    expect(kept.searchResultStats()).toMatchObject({ stale: 1, hits: 1, stores: 2 });
    // Numbered, then counted afresh and kept again.
    await events.numberPending();
    expect(await firstPage()).toEqual(await truth());
    expect(await firstPage()).toEqual(await truth());
    expect(kept.searchResultStats()).toMatchObject({ stores: 3, hits: 2 });

    // Another process's change, already numbered when asked: the number moved.
    const second = (await truth())[1] as number;
    await sql("UPDATE posts SET title = 'no longer', updated_at = now() WHERE id = $1", [second]);
    await events.numberPending();
    const afterUpdate = await firstPage();
    expect(afterUpdate).not.toContain(second);
    expect(afterUpdate).toEqual(await truth());
    expect(kept.searchResultStats()).toMatchObject({ stale: 2, hits: 2, stores: 4 });
    await firstPage();
    expect(kept.searchResultStats()?.hits).toBe(3);

    // This process's own change drops the term without asking the database.
    const mine = (await kept.findById(newest)) as Post;
    const deleted = await kept.delete({ id: newest, authorId: mine.author.id });
    expect(deleted.ok).toBe(true);
    expect(await firstPage()).not.toContain(newest);
    // Its event waits for a number: nothing kept.
    expect(kept.searchResultStats()).toMatchObject({ stale: 3, hits: 3, stores: 4 });

    // A page below a cursor the kept matches cover, and one they do not.
    await events.numberPending();
    await firstPage();
    const all = (await allPages(without, "quokka", 1000))[0] as number[];
    const cursor = all[40] as number;
    const below = await kept.searchPage({ limit: 5, search: "quokka", beforeId: cursor });
    expect(ids(below.posts)).toEqual(all.slice(41, 46));
    expect(kept.searchResultStats()).toMatchObject({ stores: 5, hits: 4 });

    // A TRUNCATE writes no event; it gives the table another relation, which the position names.
    await sql("TRUNCATE posts CASCADE");
    expect(await firstPage()).toEqual([]);
  }, 60_000);
});
