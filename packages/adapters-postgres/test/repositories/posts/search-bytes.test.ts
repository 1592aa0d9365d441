import { PostgresPostRepository } from "@posts/adapters-postgres";
import { decodeCursor, listPosts, type Post, postTextBytes } from "@posts/domain";
import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { seedPosts } from "../../seeded-posts.js";
import { postgres, useTestDatabase } from "../../use-test-database.js";

const POSTS = 2_000;
const BUDGET = 1000;
/** A page's bytes of text: room for two of the big posts, not three. */
const BYTES = 4_000_000;
/** The posts (by their place g, oldest first) that hold "Quokka" at the end of 1.5 MB of text. */
const BIG = [100, 200, 300, 400, 500, 600];

// The trigram step and the matches it kept answer a rare term's pages within the page's bytes
// too: the walk's contract case is the one-character search of the contract suites.
describeNeeding(
  postgres,
  "search pages of big posts through the trigram step, on a PostgreSQL server",
  () => {
    const database = useTestDatabase("postgres");
    let pool: pg.Pool | undefined;
    /** The big posts' ids, newest first. */
    let big: number[] = [];

    // A step time no busy machine reaches, so that every page of the rare term takes it.
    const repository = (searchResultIds?: number) =>
      new PostgresPostRepository(database().db, {
        searchBudget: BUDGET,
        searchBytes: BYTES,
        searchIndexStepMs: 10_000,
        ...(searchResultIds === undefined ? {} : { searchResultIds }),
      });

    /** Follows `q=quokka` from its first page to `nextCursor: null`: each page's posts and cursor. */
    const follow = async (posts: PostgresPostRepository) => {
      const pages: { readonly posts: readonly Post[]; readonly nextCursor: string | null }[] = [];
      let cursor: string | undefined;
      for (let page = 0; page <= BIG.length; page++) {
        const listed = await listPosts(
          { posts },
          { q: "quokka", size: "20", ...(cursor === undefined ? {} : { cursor }) },
        );
        if (!listed.ok) throw new Error(JSON.stringify(listed.error));
        // A search page's posts are whole (only listPage answers outlines of large posts).
        pages.push(listed.value as (typeof pages)[number]);
        if (listed.value.nextCursor === null) return pages;
        cursor = listed.value.nextCursor;
      }
      throw new Error(`the search has not ended after ${BIG.length + 1} pages`);
    };

    beforeAll(async () => {
      const { connectionString } = database();
      if (connectionString === undefined) return;
      pool = new pg.Pool({ connectionString, max: 2 });
      const ids = await seedPosts(pool, {
        users: 5,
        posts: POSTS,
        title: `'Post ' || g`,
        content: `CASE WHEN g IN (${BIG.join(", ")}) THEN repeat('ab ', 500000) || ' Quokka' ELSE md5(g::text) END`,
      });
      big = BIG.map((g) => ids[g - 1] as number).reverse();
    });
    afterAll(async () => {
      await pool?.end();
    });

    for (const [label, resultIds] of [
      ["each page taking the step", 0],
      ["the next pages answered from the matches the step kept", undefined],
    ] as const) {
      it(`${label}: answer as many matches as fit in the bytes, and continue after them to the last`, async () => {
        if (pool === undefined) throw new Error("the posts were not seeded");
        const posts = repository(resultIds);
        const pages = await follow(posts);
        expect(pages.flatMap((page) => page.posts.map((post) => post.id))).toEqual(big);
        for (const page of pages) {
          const bytes = page.posts.reduce((sum, post) => sum + postTextBytes(post), 0);
          if (page.posts.length > 1) expect(bytes).toBeLessThanOrEqual(BYTES);
          // Every match from where the page stopped up is on it: it stopped at its last post.
          if (page.nextCursor !== null) expect(decodeCursor(page.nextCursor)).toBe(page.posts.at(-1)?.id);
        }
        // Two of the big posts a page: the bytes ended the first pages, not the size.
        expect(pages.map((page) => page.posts.length)).toEqual([2, 2, 2]);
        if (resultIds === undefined) expect(posts.searchResultStats()?.hits).toBe(2);
      });
    }
  },
);
