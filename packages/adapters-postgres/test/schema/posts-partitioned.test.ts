import { createPostgresDatabase, migrateToLatest } from "@posts/adapters-postgres";
import { migrateTo, openTestDatabase, schemaSnapshot } from "@posts/adapters-postgres/testing";
import { sql } from "kysely";
import { expect, it } from "vitest";
import { describeOnEachEngine, serverOnly, serverUrl, useTestDatabase } from "../use-test-database.js";

const SPAN = 131072;
const BEFORE = "0010_post_events_record_their_transactions_start";

// Ids in four ranges, two at a range's ends, and one far ahead (a gap of a whole range, p2).
const IDS = [1, 2, 3, SPAN, SPAN + 1, 3 * SPAN + 5];
// The sequence's last value, past every id: the next post takes the id after it.
const LAST_VALUE = 3 * SPAN + 100;

describeOnEachEngine("posts partitioned by ranges of ids on %s", (engine) => {
  const database = useTestDatabase(engine, { migrate: false });
  const db = () => database().db;
  const onServer = serverOnly(engine);

  const partitions = async () =>
    (
      await sql<{ name: string; bound: string }>`
        SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'posts'::regclass ORDER BY c.relname`.execute(db())
    ).rows;
  const rangesOf = (count: number) =>
    Array.from({ length: count }, (_, k) => ({
      name: `posts_p${k}`,
      bound: `FOR VALUES FROM ('${k * SPAN + 1}') TO ('${(k + 1) * SPAN + 1}')`,
    })).sort((a, b) => a.name.localeCompare(b.name));
  const postsRows = async () =>
    (
      await sql<Record<string, unknown>>`
        SELECT id::text, title, content, created_at, updated_at, user_id::text FROM posts ORDER BY id`.execute(
        db(),
      )
    ).rows;
  const eventCount = async () =>
    (await sql<{ count: number }>`SELECT count(*)::int AS count FROM post_events`.execute(db())).rows[0]
      ?.count;
  const insertPost = async (userId: number) =>
    Number(
      (
        await sql<{ id: string }>`
          INSERT INTO posts (title, content, created_at, updated_at, user_id)
          VALUES ('new', 'after', now(), now(), ${userId}) RETURNING id`.execute(db())
      ).rows[0]?.id,
    );
  const relkind = async () =>
    (await sql<{ relkind: string }>`SELECT relkind FROM pg_class WHERE oid = 'posts'::regclass`.execute(db()))
      .rows[0]?.relkind;

  it("moves every post into its range's partition, without events, and the ids go on after the old sequence's", async () => {
    await migrateTo(db(), BEFORE);
    await sql`
      INSERT INTO users (id, email, password_hash, created_at) OVERRIDING SYSTEM VALUE
      VALUES (1, 'one@example.com', 'h', now()), (2, 'two@example.com', 'h', now())`.execute(db());
    await sql`
      INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
      SELECT id, 'Title ' || id || ' 안녕', 'Body ' || id || ' 😀 100%', '2025-02-01T00:00:00.123Z',
             '2025-02-02T00:00:00.456Z', 1 + id % 2
      FROM unnest(${IDS}::bigint[]) AS id`.execute(db());
    await sql`SELECT setval('posts_id_seq', ${LAST_VALUE})`.execute(db());
    await sql`DELETE FROM post_events`.execute(db());
    const before = await postsRows();

    expect((await migrateToLatest(db())).applied).toEqual([
      "0011_posts_partitioned_by_id_ranges",
      "0012_post_chars_each_once",
      "0013_post_word_pairs",
      "0014_post_char_pairs",
    ]);

    expect(await relkind()).toBe("p");
    expect(await postsRows()).toEqual(before);
    // The partition of the sequence's last value (p3) and two more ahead; p2 too, empty.
    expect(await partitions()).toEqual(rangesOf(6));
    const inP0 = await sql<{ count: number }>`SELECT count(*)::int AS count FROM posts_p0`.execute(db());
    expect(inP0.rows).toEqual([{ count: 4 }]);
    expect(await eventCount()).toBe(0);

    expect(await insertPost(1)).toBe(LAST_VALUE + 1);
    // The change-event triggers are back: the new post's creation is recorded.
    const events = await sql<{
      type: string;
      post_id: number;
    }>`SELECT type, post_id FROM post_events`.execute(db());
    expect(events.rows).toEqual([{ type: "post.created", post_id: LAST_VALUE + 1 }]);
  });

  it("deletes a user's posts in every partition with the user (on delete cascade), and records their deletion", async () => {
    await sql`DELETE FROM post_events`.execute(db());
    await sql`DELETE FROM users WHERE id = 2`.execute(db());
    const left = await sql<{
      id: number;
      user_id: number;
    }>`SELECT id, user_id FROM posts ORDER BY id`.execute(db());
    expect(left.rows).toEqual([2, SPAN, LAST_VALUE + 1].map((id) => ({ id, user_id: 1 })));
    const deleted = await sql<{ post_id: number }>`
      SELECT post_id FROM post_events WHERE type = 'post.deleted' ORDER BY post_id`.execute(db());
    expect(deleted.rows.map((row) => row.post_id)).toEqual([1, 3, SPAN + 1, 3 * SPAN + 5]);
  });

  it("refuses a post past the last partition (23514), until posts_partitions_ahead makes room", async () => {
    await sql`SELECT setval('posts_id_seq', ${6 * SPAN - 1})`.execute(db());
    expect(await insertPost(1)).toBe(6 * SPAN);
    const refused = await insertPost(1).then(
      () => undefined,
      (error: { code?: string; message?: string }) => error,
    );
    expect(refused?.code).toBe("23514");
    expect(refused?.message).toMatch(/no partition of relation "posts" found for row/);
    // The refused insert used up the id 6 * SPAN + 1: the next id is past it, in p6.
    const room = await sql<{ made: number; left: number }>`
      SELECT made, posts_partition_ids_left() AS left FROM posts_partitions_ahead(2) AS made`.execute(db());
    // p6 holds the next id; p7 and p8 are ahead.
    expect(room.rows).toEqual([{ made: 3, left: 9 * SPAN - (6 * SPAN + 1) }]);
    expect(await insertPost(1)).toBe(6 * SPAN + 2);
    expect(await partitions()).toEqual(rangesOf(9));
  });

  it("makes nothing when called again (idempotent), and as many as the ids ask when they advance", async () => {
    const call = async (ahead: number) =>
      (await sql<{ made: number }>`SELECT posts_partitions_ahead(${ahead}) AS made`.execute(db())).rows[0]
        ?.made;
    expect(await call(2)).toBe(0);
    expect(await call(0)).toBe(0);
    expect(await call(4)).toBe(2);
    expect(await call(4)).toBe(0);
    expect(await partitions()).toEqual(rangesOf(11));
    // Each new partition has the parent's indexes and foreign key.
    const indexes = await sql<{ indexdef: string }>`
      SELECT indexdef FROM pg_indexes WHERE tablename = 'posts_p10' ORDER BY indexname`.execute(db());
    expect(indexes.rows.map((row) => row.indexdef.replace(/ ON \S+ /, " ON "))).toEqual([
      'CREATE INDEX posts_p10_content_idx ON USING gin (content COLLATE "C" gin_trgm_ops)',
      "CREATE UNIQUE INDEX posts_p10_pkey ON USING btree (id)",
      "CREATE INDEX posts_p10_post_char_pairs_idx ON USING gin (post_char_pairs((title)::text, content))",
      "CREATE INDEX posts_p10_post_chars_idx ON USING gin (post_chars((title)::text, content))",
      "CREATE INDEX posts_p10_post_word_pairs_idx ON USING gin (post_word_pairs((title)::text, content))",
      'CREATE INDEX posts_p10_title_idx ON USING gin (title COLLATE "C" gin_trgm_ops)',
      "CREATE INDEX posts_p10_user_id_id_updated_at_idx ON USING btree (user_id, id DESC) INCLUDE (updated_at)",
    ]);
    const { rows } = await sql<{ left: number }>`SELECT posts_partition_ids_left() AS left`.execute(db());
    expect(rows).toEqual([{ left: 11 * SPAN - (6 * SPAN + 2) }]);
  });

  it("leaves the caller's lock_timeout as it was", async () => {
    const { rows } = await db()
      .transaction()
      .execute(async (trx) => {
        await sql`SET LOCAL lock_timeout = '7s'`.execute(trx);
        await sql`SELECT posts_partitions_ahead(2)`.execute(trx);
        return sql<{ timeout: string }>`SELECT current_setting('lock_timeout') AS timeout`.execute(trx);
      });
    expect(rows).toEqual([{ timeout: "7s" }]);
  });

  it("lists each character of the title and of the content's first 8192 characters once, and '' for a longer content", async () => {
    const chars = async (title: string, content: string) =>
      (await sql<{ chars: string[] }>`SELECT post_chars(${title}, ${content}) AS chars`.execute(db())).rows[0]
        ?.chars;
    // Lower-cased in "C": ASCII letters only, each character once (0012), in the order of
    // their bytes.
    expect(await chars("Ab", "cÉ")).toEqual(["a", "b", "c", "É"]);
    expect(await chars("Abba 한", "한 BAB")).toEqual([" ", "a", "b", "한"]);
    expect(await chars("", "")).toEqual([]);
    expect(await chars("t", `${"x".repeat(8192)}`)).toEqual(["t", "x"]);
    // Past 8192 bytes the content may hold more than was read: the characters past 8192 are not
    // listed, and '' stands for them.
    expect(await chars("t", `${"x".repeat(8192)}z`)).toEqual(["t", "x", ""]);
    // Counted in bytes: 4097 two-byte characters are all read, and still marked.
    expect(await chars("", "é".repeat(4097))).toEqual(["é", ""]);
  });

  it("makes 0011's list of every character one of each (0012) and back, and its index answers the same", async () => {
    const chars = async () =>
      (await sql<{ chars: string[] }>`SELECT post_chars('Abba', 'aa') AS chars`.execute(db())).rows[0]?.chars;
    await migrateTo(db(), "0011_posts_partitioned_by_id_ranges");
    expect(await chars()).toEqual(["a", "b", "b", "a", "a", "a"]);
    const titled = await sql<{
      id: string;
    }>`SELECT id FROM posts WHERE title LIKE '%안녕%' ORDER BY id`.execute(db());
    const ids = titled.rows.map((row) => Number(row.id));
    expect(ids.length).toBeGreaterThan(0);
    expect((await migrateToLatest(db())).applied).toEqual([
      "0012_post_chars_each_once",
      "0013_post_word_pairs",
      "0014_post_char_pairs",
    ]);
    expect(await chars()).toEqual(["a", "b"]);
    // The index, built from 0011's lists, finds the posts by their characters as before.
    const byIndex = await db()
      .transaction()
      .execute(async (tx) => {
        await sql`SET LOCAL enable_seqscan = off`.execute(tx);
        await sql`SET LOCAL enable_indexscan = off`.execute(tx);
        const where = sql`post_chars(title, content) @> ${["안", "녕"]}::text[]`;
        const plan = await sql<{ "QUERY PLAN": string }>`EXPLAIN SELECT id FROM posts WHERE ${where}`.execute(
          tx,
        );
        const found = await sql<{ id: string }>`SELECT id FROM posts WHERE ${where} ORDER BY id`.execute(tx);
        return {
          plan: plan.rows.map((row) => row["QUERY PLAN"]).join("\n"),
          found: found.rows.map((row) => Number(row.id)),
        };
      });
    expect(byIndex.plan).toMatch(/Bitmap Index Scan on posts_p\d+_post_chars_idx/);
    expect(byIndex.found).toEqual(ids);
    await migrateTo(db(), "0011_posts_partitioned_by_id_ranges");
    expect(await chars()).toEqual(["a", "b", "b", "a", "a", "a"]);
  });

  it("goes back down to one plain table with the same rows and sequence, and up again", async () => {
    const before = await postsRows();
    await sql`DELETE FROM post_events`.execute(db());
    await migrateTo(db(), BEFORE);
    expect(await relkind()).toBe("r");
    expect(await postsRows()).toEqual(before);
    expect(await eventCount()).toBe(0);
    const functions = await sql<{ proname: string }>`
      SELECT proname FROM pg_proc
      WHERE proname IN ('post_chars', 'post_char_pairs', 'post_word_pairs', 'posts_partitions_ahead', 'posts_partition_ids_left')`.execute(
      db(),
    );
    expect(functions.rows).toEqual([]);
    const id = await insertPost(1);
    expect(id).toBe(6 * SPAN + 3);
    expect(await eventCount()).toBe(1);

    expect((await migrateToLatest(db())).applied).toEqual([
      "0011_posts_partitioned_by_id_ranges",
      "0012_post_chars_each_once",
      "0013_post_word_pairs",
      "0014_post_char_pairs",
    ]);
    expect((await postsRows()).map((row) => Number(row.id))).toEqual([
      ...before.map((row) => Number(row.id)),
      id,
    ]);
    // Through the partition of the last id given (p6), and two ahead.
    expect(await partitions()).toEqual(rangesOf(9));
  });

  onServer.it("makes each partition once when called from two connections at once", async () => {
    const handles = [1, 2].map(() =>
      createPostgresDatabase({ connectionString: serverUrl(database()), poolSize: 1 }),
    );
    try {
      const made = await Promise.all(
        handles.map(
          async (handle) =>
            (await sql<{ made: number }>`SELECT posts_partitions_ahead(8) AS made`.execute(handle.db)).rows[0]
              ?.made,
        ),
      );
      // p0..p8 exist; 8 ahead of p6 reach p14.
      expect(made.sort()).toEqual([0, 6]);
      expect(await partitions()).toEqual(rangesOf(15));
    } finally {
      await Promise.all(handles.map((handle) => handle.close()));
    }
  });

  onServer.it("leaves, going down, the very schema 0010 made", async () => {
    const fresh = await openTestDatabase("postgres", { migrate: false });
    try {
      await migrateTo(fresh.db, BEFORE);
      await migrateTo(db(), BEFORE);
      expect(await schemaSnapshot(serverUrl(database()))).toBe(await schemaSnapshot(serverUrl(fresh)));
    } finally {
      await fresh.close();
    }
  });
});
