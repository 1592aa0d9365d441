import { PostgresPostRepository } from "@posts/adapters-postgres";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { expect, it } from "vitest";
import { observedDatabase, seedPosts } from "../seeded-posts.js";
import { postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

const POSTS = 50_000;

// What the planner chooses on a server's statistics is what matters to the service at scale.
describeNeeding(postgres, "search plans on a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");

  it("answers a 3-character search of a rare term from the trigram indexes, not by reading the table", async () => {
    const connectionString = serverUrl(database());
    const observed = observedDatabase(connectionString);
    try {
      // ANALYZE samples 300 rows per unit of a column's statistics target (30,000 by default, fewer
      // than these posts): a sample of every row gives the planner the same estimate each run,
      // which with a random one chose a walk of the primary key now and then (a CI run of
      // 2026-11-28).
      await observed.pool.query(
        "ALTER TABLE posts ALTER COLUMN title SET STATISTICS 1000, ALTER COLUMN content SET STATISTICS 1000",
      );
      // Hexadecimal words never contain "qzx"; three posts, spread over the table, do. Keeping
      // the trigram indexes up to date makes this one statement take seconds.
      await seedPosts(observed.pool, {
        users: 100,
        posts: POSTS,
        title: `'Post ' || g || ' ' || left(md5(g::text), 8)
                  || CASE WHEN g % ${Math.floor(POSTS / 3)} = 7 THEN ' QZX rare' ELSE '' END`,
        content: `md5((g * 31)::text) || ' 본문 ' || g`,
      });

      // The statement the repository runs, exactly as it runs it.
      const found = await new PostgresPostRepository(observed.db).listPage({ limit: 21, search: "qzx" });
      expect(found.map((post) => post.title.endsWith(" QZX rare"))).toEqual([true, true, true]);
      const [statement] = observed.captured;
      if (statement === undefined) throw new Error("no statement was captured");

      const nodes = await observed.plan(statement);
      const scans = nodes.filter(
        (node) => String(node["Relation Name"]).startsWith("posts") || node["Index Name"] !== undefined,
      );
      const summary = scans.map(
        (node) => `${node["Node Type"]} ${node["Index Name"] ?? node["Relation Name"]}`,
      );
      // Each partition's trigram indexes.
      expect(summary).toContain("Bitmap Index Scan posts_p0_title_idx");
      expect(summary).toContain("Bitmap Index Scan posts_p0_content_idx");
      // The posts are in the first partition; those made ahead are empty, and a sequential scan
      // of an empty table reads nothing.
      expect(summary.filter((scan) => scan.startsWith("Seq Scan posts_p0"))).toEqual([]);
      // Nor a walk of the whole primary key, filtering row by row.
      expect(summary.filter((scan) => /posts_p\d+_pkey/.test(scan))).toEqual([]);
    } finally {
      await observed.destroy();
    }
  }, 60_000);
});
