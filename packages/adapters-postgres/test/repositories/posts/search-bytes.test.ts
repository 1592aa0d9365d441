import { type Database, PostgresPostRepository } from "@posts/adapters-postgres";
import { decodeCursor, isWhole, listPosts, type ReadPost } from "@posts/domain";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { Kysely, PostgresDialect } from "kysely";
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
/** Their content: 1.5 MB of "ab " and the term, ASCII, a byte a character. */
const BIG_CONTENT_BYTES = 3 * 500_000 + " Quokka".length;

/** The bytes of text a search reads of `post`, whole or an outline: its title's and its content's. */
const textBytes = (post: ReadPost) =>
  Buffer.byteLength(post.title) + (isWhole(post) ? Buffer.byteLength(post.content) : post.contentBytes);

// The partitions answer a rare term's pages within the page's bytes too: the walk's contract case
// is the one-character search of the contract suites. Whichever answers, a post over
// `OUTLINE_ABOVE_BYTES` comes as an outline: the page reads its text to test it, and its answer
// holds only its size.
describeNeeding(postgres, "search pages of big posts through the partitions, on a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");
  let pool: pg.Pool | undefined;
  /** The big posts' ids, newest first. */
  let big: number[] = [];

  /**
   * On the database's own pool, which asks the partitions; or, on a Kysely of its own without
   * the pool's direct runner, the walk alone, as on PGlite.
   */
  const repository = (partitions: boolean) =>
    new PostgresPostRepository(
      partitions || pool === undefined
        ? database().db
        : new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }),
      { searchBudget: BUDGET, searchBytes: BYTES },
    );

  /** Follows `q=quokka` from its first page to `nextCursor: null`: each page's posts and cursor. */
  const follow = async (posts: PostgresPostRepository) => {
    const pages: { readonly posts: readonly ReadPost[]; readonly nextCursor: string | null }[] = [];
    let cursor: string | undefined;
    for (let page = 0; page <= BIG.length; page++) {
      const listed = await listPosts(
        { posts },
        { q: "quokka", size: "20", ...(cursor === undefined ? {} : { cursor }) },
      );
      if (!listed.ok) throw new Error(JSON.stringify(listed.error));
      pages.push(listed.value);
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

  for (const [label, partitions, lengths] of [
    ["each page asking the partitions", true, [2, 2, 2]],
    // The first page walks the budget's newest posts, none of them big.
    ["each page a walk alone", false, [0, 2, 2, 2]],
  ] as const) {
    it(`${label}: answer as many matches as fit in the bytes, as outlines, and continue after them to the last`, async () => {
      if (pool === undefined) throw new Error("the posts were not seeded");
      const posts = repository(partitions);
      const pages = await follow(posts);
      expect(pages.flatMap((page) => page.posts.map((post) => post.id))).toEqual(big);
      for (const page of pages) {
        const bytes = page.posts.reduce((sum, post) => sum + textBytes(post), 0);
        if (page.posts.length > 1) expect(bytes).toBeLessThanOrEqual(BYTES);
        // The next page starts below this page's last post: where the walk stopped (which may
        // be no match), or the last match that fit when a partition answered.
        const last = page.posts.at(-1)?.id;
        if (page.nextCursor !== null && last !== undefined) {
          expect(decodeCursor(page.nextCursor)).toBeLessThanOrEqual(last);
        }
        for (const post of page.posts) {
          const whole = await posts.findWhole(post.id);
          if (whole === undefined) throw new Error(`post ${post.id} is gone`);
          const { content: _, ...rest } = whole;
          expect(post).toStrictEqual({ ...rest, contentBytes: BIG_CONTENT_BYTES });
        }
      }
      // Two of the big posts a page: the bytes ended the pages, not the size.
      expect(pages.map((page) => page.posts.length)).toEqual(lengths);
    });
  }
});
