import type { Database } from "@posts/adapters-postgres";
import { PostgresPostRepository } from "@posts/adapters-postgres";
import { encodeCursor, listPosts } from "@posts/domain";
import { type CompiledQuery, Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "../use-test-database.js";

const POSTS = 20_000;
const BUDGET = 1000;

/** Every node of an EXPLAIN (FORMAT JSON) plan, depth first. */
function nodesOf(plan: { Plans?: unknown[] } & Record<string, unknown>): Record<string, unknown>[] {
  return [plan, ...(plan.Plans ?? []).flatMap((child) => nodesOf(child as typeof plan))];
}

// The case that made searches take seconds: every match among the oldest posts, so that a
// newest-first walk filtering row by row reads almost the whole table before its first match.
describe("search pages on a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");

  it("read at most the budget whatever the term, and walk to the oldest matches page by page", async (context) => {
    const { connectionString } = database();
    if (connectionString === undefined) return context.skip();
    const captured: CompiledQuery[] = [];
    const pool = new pg.Pool({ connectionString, max: 1 });
    const observed = new Kysely<Database>({
      dialect: new PostgresDialect({ pool }),
      log: (event) => {
        if (event.level === "query") captured.push(event.query);
      },
    });
    try {
      await pool.query(`
        INSERT INTO users (email, password_hash, created_at)
        SELECT 'user' || g || '@example.com', 'hash', now() FROM generate_series(1, 10) AS g`);
      await pool.query(`
        INSERT INTO posts (title, content, created_at, updated_at, user_id)
        SELECT 'Post ' || g || CASE WHEN g <= 5 THEN ' Very Old' ELSE '' END
                 || CASE WHEN g <= ${2 * BUDGET} THEN ' Cluster' ELSE '' END,
               md5(g::text) || CASE WHEN g = 3 THEN ' only here: very old' ELSE '' END,
               now(), now(), 1 + g % 10
        FROM generate_series(1, ${POSTS}) AS g`);
      await pool.query("VACUUM ANALYZE posts");
      const { rows } = await pool.query<{ id: string }>("SELECT id FROM posts ORDER BY id");
      const ids = rows.map((row) => Number(row.id));
      const newest = ids.at(-1) as number;
      const oldest = ids.slice(0, 5).reverse();

      // Through a Kysely of its own, which has no direct runner: the walk alone.
      const posts = new PostgresPostRepository(observed, { searchBudget: BUDGET });
      const first = await posts.searchPage({ limit: 21, search: "VERY old" });
      expect(first.posts).toEqual([]);
      // It stopped at the last post it read: the budget's worth below the newest.
      expect(first.resumeBelow).toBe(ids.at(-BUDGET));

      const [statement] = captured;
      if (statement === undefined) throw new Error("no statement was captured");
      const explained = await pool.query<{ "QUERY PLAN": [{ Plan: Record<string, unknown> }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`,
        [...statement.parameters],
      );
      const scans = nodesOf(explained.rows[0]?.["QUERY PLAN"][0].Plan ?? {}).filter(
        (node) => node["Relation Name"] === "posts",
      );
      // The posts read and the boundary's index-only walk, each at most the budget, nothing else.
      expect(scans.map((node) => node["Node Type"]).sort()).toEqual(["Index Only Scan", "Index Scan"]);
      for (const scan of scans) expect(scan["Actual Rows"]).toBeLessThanOrEqual(BUDGET);

      // Through the listing: short pages whose cursors reach the old matches, each once.
      const deps = { posts } as Parameters<typeof listPosts>[0];
      const seen: number[] = [];
      const cursors: (string | null)[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < POSTS / BUDGET + 2; page++) {
        const result = await listPosts(deps, {
          q: "very old",
          size: "2",
          ...(cursor === undefined ? {} : { cursor }),
        });
        if (!result.ok) throw new Error(JSON.stringify(result.error));
        seen.push(...result.value.posts.map((post) => post.id));
        cursors.push(result.value.nextCursor);
        if (result.value.nextCursor === null) break;
        cursor = result.value.nextCursor;
      }
      expect(seen).toEqual(oldest);
      expect(cursors[0]).toBe(encodeCursor(newest - BUDGET + 1));
      expect(cursors.at(-1)).toBeNull();

      // On the adapter's own pool the trigram step follows a walk that found too little: every
      // match of a rare term below where the walk stopped, on the first page.
      // A step time no busy machine reaches here, so that what is checked is what the step finds.
      const withIndex = new PostgresPostRepository(database().db, {
        searchBudget: BUDGET,
        searchIndexStepMs: 10_000,
      });
      expect(await withIndex.searchPage({ limit: 21, search: "VERY old" })).toEqual({
        posts: await Promise.all(oldest.map(async (id) => await withIndex.findById(id))),
      });
      expect(await withIndex.searchPage({ limit: 2, search: "very old" })).toEqual({
        posts: await Promise.all(oldest.slice(0, 2).map(async (id) => await withIndex.findById(id))),
      });
      // More matches below than the budget: the bitmap is not used, the page ends where the walk did.
      expect(await withIndex.searchPage({ limit: 21, search: "cluster" })).toEqual({
        posts: [],
        resumeBelow: ids.at(-BUDGET),
      });
      // Without the step (0 ms) a rare term's page is the walk's.
      const walkOnly = new PostgresPostRepository(database().db, {
        searchBudget: BUDGET,
        searchIndexStepMs: 0,
      });
      expect(await walkOnly.searchPage({ limit: 21, search: "very old" })).toEqual({
        posts: [],
        resumeBelow: ids.at(-BUDGET),
      });
    } finally {
      await observed.destroy();
    }
  }, 60_000);
});
