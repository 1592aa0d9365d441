import { migrateToLatest, POSTS_PARTITION_SPAN, partitionOf } from "@posts/adapters-postgres";
import { openTestDatabase, postgresForTests, type TestDatabase } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { seed, warmPageCache } from "../src/load/database.js";
import { postById } from "../src/servers/reference-api.js";

const POSTS = POSTS_PARTITION_SPAN + 2_000;

// Needs a PostgreSQL server, as `pnpm bench` does: the service's schema, partitioned.
describeNeeding(await postgresForTests(), "seeding the migrated, partitioned schema", () => {
  let database: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    database = await openTestDatabase("postgres", { migrate: false });
    await migrateToLatest(database.db);
    client = new pg.Client({ connectionString: database.connectionString });
    await client.connect();
    await seed(client, { users: 10, posts: POSTS }, "x");
  }, 120_000);
  afterAll(async () => {
    await client?.end();
    await database?.close();
  });

  it("makes the partitions of every seeded id and two ahead, and leaves the task nothing to make", async () => {
    const { rows } = await client.query<{ name: string; count: number }>(
      `select c.relname as name, (select count(*)::int from posts p where p.tableoid = c.oid) as count
         from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'posts'::regclass order by c.relname`,
    );
    expect(rows).toEqual([
      { name: "posts_p0", count: POSTS_PARTITION_SPAN },
      { name: "posts_p1", count: 2_000 },
      { name: "posts_p2", count: 0 },
      { name: "posts_p3", count: 0 },
    ]);
    const made = await client.query<{ made: number }>("select posts_partitions_ahead(2) as made");
    expect(made.rows).toEqual([{ made: 0 }]);
  });

  it("builds the GIN indexes it dropped again on every partition, valid", async () => {
    const { rows } = await client.query<{ parent: string; partitions: number; valid: boolean }>(
      `select p.relname as parent, count(i.inhrelid)::int as partitions,
              bool_and(x.indisvalid) and (select indisvalid from pg_index where indexrelid = p.oid) as valid
         from pg_class p
         join pg_inherits i on i.inhparent = p.oid
         join pg_index x on x.indexrelid = i.inhrelid
        where p.relname in ('posts_title_trgm_idx', 'posts_content_trgm_idx', 'posts_chars_idx')
        group by p.relname, p.oid order by p.relname`,
    );
    expect(rows).toEqual(
      ["posts_chars_idx", "posts_content_trgm_idx", "posts_title_trgm_idx"].map((parent) => ({
        parent,
        partitions: 4,
        valid: true,
      })),
    );
  });

  it("gives the baseline a post by id from its partition, the same row as from posts", async () => {
    const partitions = new Set([0, 1]);
    for (const id of [1, POSTS_PARTITION_SPAN, POSTS_PARTITION_SPAN + 1, POSTS]) {
      const direct = postById(id, partitions);
      expect(direct.text).toContain(`from posts_p${partitionOf(id)} p`);
      const viaPosts = postById(id);
      expect(viaPosts.text).toContain("from posts p");
      const [fromPartition, fromPosts] = await Promise.all([client.query(direct), client.query(viaPosts)]);
      expect(fromPartition.rows).toHaveLength(1);
      expect(fromPartition.rows).toEqual(fromPosts.rows);
    }
    // A partition the set does not name: read through posts.
    expect(postById(3 * POSTS_PARTITION_SPAN + 1, partitions).name).toBe("post_by_id");
  });

  it("warms the partitions and their indexes, which hold the blocks", async () => {
    const { rows } = await client.query<{ bytes: string }>(
      `select sum(pg_relation_size(c.oid))::int8 as bytes from pg_class c
         join (select relid from pg_partition_tree('posts') union select 'users'::regclass) t
           on c.oid = t.relid or c.oid in (select indexrelid from pg_index where indrelid = t.relid)`,
    );
    const expected = Number(rows[0]?.bytes);
    expect(expected).toBeGreaterThan(10_000_000);
    expect(await warmPageCache(client)).toBe(expected);
  });
});
