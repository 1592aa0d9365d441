import { PartitionsAhead, POSTS_PARTITION_SPAN } from "@posts/adapters-postgres";
import { sql } from "kysely";
import { beforeEach, expect, it } from "vitest";
import { describeOnEachEngine, serverOnly, serverUrl, useTestDatabase } from "../use-test-database.js";

const SPAN = POSTS_PARTITION_SPAN;

describeOnEachEngine("the partitions of posts kept ahead on %s", (engine) => {
  const database = useTestDatabase(engine);
  const db = () => database().db;
  const onServer = serverOnly(engine);
  // Each test starts from the migration's partitions, p0 to p2, empty.
  beforeEach(async () => {
    await database().truncate();
    const { rows } = await sql<{ name: string }>`
      SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'posts'::regclass AND c.relname NOT IN ('posts_p0', 'posts_p1', 'posts_p2')`.execute(
      db(),
    );
    for (const { name } of rows) await sql`DROP TABLE ${sql.id(name)}`.execute(db());
  });

  const partitionCount = async () =>
    (
      await sql<{ count: number }>`
        SELECT count(*)::int AS count FROM pg_inherits WHERE inhparent = 'posts'::regclass`.execute(db())
    ).rows[0]?.count;
  // The sequence as if `last` ids had been given.
  const idsGiven = (last: number) => sql`SELECT setval('posts_id_seq', ${last})`.execute(db());

  it("makes partitions ahead as the ids advance, and says how many ids are left", async () => {
    const made: [number, number][] = [];
    const few: number[] = [];
    const task = new PartitionsAhead(db(), {
      intervalMs: 5,
      onMade: (count, left) => made.push([count, left]),
      onFewIdsLeft: (left) => few.push(left),
    });
    try {
      task.start();
      await task.idle();
      // The migration made p0..p2: nothing to make, 3 partitions' worth of ids left.
      expect(task.idsLeft).toBe(3 * SPAN);
      expect(made).toEqual([]);

      await idsGiven(SPAN + 10);
      await expect.poll(() => task.idsLeft).toBe(4 * SPAN - (SPAN + 10));
      expect(made).toEqual([[1, 4 * SPAN - (SPAN + 10)]]);
      expect(await partitionCount()).toBe(4);
      expect(few).toEqual([]);
    } finally {
      await task.close();
    }
  });

  it("reports fewer ids left than a partition holds when it cannot make partitions", async () => {
    await idsGiven(3 * SPAN - 100);
    const few: number[] = [];
    const errors: unknown[] = [];
    // Partitions ahead of nothing: the run makes none and reads what is left.
    const task = new PartitionsAhead(db(), {
      ahead: 0,
      onFewIdsLeft: (left) => few.push(left),
      onError: (error) => errors.push(error),
    });
    try {
      task.start();
      await task.idle();
    } finally {
      await task.close();
    }
    expect(errors).toEqual([]);
    expect(few).toEqual([100]);
    expect(task.idsLeft).toBe(100);
  });

  it("runs no more once closed, and refuses a bad interval or count", async () => {
    const task = new PartitionsAhead(db(), { intervalMs: 5 });
    task.start();
    await task.close();
    await idsGiven(5 * SPAN);
    await new Promise((resolve) => setTimeout(resolve, 30));
    task.start();
    await task.idle();
    expect(await partitionCount()).toBe(3);
    expect(() => new PartitionsAhead(db(), { intervalMs: -1 })).toThrow(RangeError);
    expect(() => new PartitionsAhead(db(), { ahead: 1.5 })).toThrow(RangeError);
  });

  onServer.it("stops for good when refused the privilege, and reports it", async () => {
    const role = `partitions_reader_${Date.now()}`;
    await sql`CREATE ROLE ${sql.id(role)} LOGIN`.execute(db());
    try {
      await sql`GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO ${sql.id(role)}`.execute(db());
      await sql`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${sql.id(role)}`.execute(db());
      const { createPostgresDatabase } = await import("@posts/adapters-postgres");
      const url = new URL(serverUrl(database()));
      url.username = role;
      const reader = createPostgresDatabase({ connectionString: url.toString(), poolSize: 1 });
      try {
        await idsGiven(5 * SPAN);
        const errors: unknown[] = [];
        const task = new PartitionsAhead(reader.db, {
          intervalMs: 1,
          onError: (error) => errors.push(error),
        });
        task.start();
        await task.idle();
        await new Promise((resolve) => setTimeout(resolve, 30));
        await task.idle();
        expect(errors.map((error) => (error as { code?: string }).code)).toEqual(["42501"]);
        await task.close();
      } finally {
        await reader.close();
      }
    } finally {
      await sql`DROP OWNED BY ${sql.id(role)}`.execute(db());
      await sql`DROP ROLE ${sql.id(role)}`.execute(db());
    }
  });
});
