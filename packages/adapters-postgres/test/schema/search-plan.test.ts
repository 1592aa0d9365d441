import type { Database } from "@posts/adapters-postgres";
import { PostgresPostRepository } from "@posts/adapters-postgres";
import { type CompiledQuery, Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "../use-test-database.js";

const POSTS = 50_000;

/** Every node of an EXPLAIN (FORMAT JSON) plan, depth first. */
function nodesOf(plan: { Plans?: unknown[] } & Record<string, unknown>): Record<string, unknown>[] {
  return [plan, ...(plan.Plans ?? []).flatMap((child) => nodesOf(child as typeof plan))];
}

// What the planner chooses on a server's statistics is what matters to the service at scale.
describe("search plans on a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");

  it("answers a 3-character search of a rare term from the trigram indexes, not by reading the table", async (context) => {
    const { connectionString } = database();
    if (connectionString === undefined) return context.skip();
    // A pool of its own: no statement or read timeout, and a Kysely that shows what it runs.
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
        SELECT 'user' || g || '@example.com', 'hash', now() FROM generate_series(1, 100) AS g`);
      // Hexadecimal words never contain "qzx"; three posts, spread over the table, do. Keeping
      // the trigram indexes up to date makes this one statement take seconds.
      await pool.query(`
        INSERT INTO posts (title, content, created_at, updated_at, user_id)
        SELECT 'Post ' || g || ' ' || left(md5(g::text), 8)
                 || CASE WHEN g % ${Math.floor(POSTS / 3)} = 7 THEN ' QZX rare' ELSE '' END,
               md5((g * 31)::text) || ' 본문 ' || g,
               now(), now(), 1 + g % 100
        FROM generate_series(1, ${POSTS}) AS g`);
      // As autovacuum would: statistics, and the GIN pending lists merged into the indexes (the
      // planner prices a long pending list, which every index scan reads, above a table scan).
      await pool.query("VACUUM ANALYZE posts");

      // The statement the repository runs, exactly as it runs it.
      const found = await new PostgresPostRepository(observed).listPage({ limit: 21, search: "qzx" });
      expect(found.map((post) => post.title.endsWith(" QZX rare"))).toEqual([true, true, true]);
      const [statement] = captured;
      if (statement === undefined) throw new Error("no statement was captured");

      const explained = await pool.query<{ "QUERY PLAN": [{ Plan: Record<string, unknown> }] }>(
        `EXPLAIN (FORMAT JSON) ${statement.sql}`,
        [...statement.parameters],
      );
      const nodes = nodesOf(explained.rows[0]?.["QUERY PLAN"][0].Plan ?? {});
      const scans = nodes.filter(
        (node) => node["Relation Name"] === "posts" || node["Index Name"] !== undefined,
      );
      const summary = scans.map(
        (node) => `${node["Node Type"]} ${node["Index Name"] ?? node["Relation Name"]}`,
      );
      expect(summary).toContain("Bitmap Index Scan posts_title_trgm_idx");
      expect(summary).toContain("Bitmap Index Scan posts_content_trgm_idx");
      expect(summary.filter((scan) => scan.startsWith("Seq Scan"))).toEqual([]);
      // Nor a walk of the whole primary key, filtering row by row.
      expect(summary.filter((scan) => scan.includes("posts_pkey"))).toEqual([]);
    } finally {
      await observed.destroy();
    }
  }, 60_000);
});
