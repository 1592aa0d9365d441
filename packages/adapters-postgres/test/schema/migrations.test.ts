import type { Database } from "@posts/adapters-postgres";
import {
  createPostgresDatabase,
  type MigrationError,
  type MigrationSummary,
  migrateToLatest,
  PostgresChangeEventLog,
} from "@posts/adapters-postgres";
import { migrateTo } from "@posts/adapters-postgres/testing";
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { describeOnEachEngine, serverOnly, serverUrl, useTestDatabase } from "../use-test-database.js";

const ALL = [
  "0001_create_users",
  "0002_create_posts",
  "0003_create_attempt_counts",
  "0004_conditional_writes_idempotency_search",
  "0005_author_pages_from_the_index",
  "0006_post_change_events",
  "0007_post_events_without_a_notification_per_change",
  "0008_post_events_cheaper_to_write_and_to_number",
  "0009_post_events_written_per_statement",
  "0010_post_events_record_their_transactions_start",
  "0011_posts_partitioned_by_id_ranges",
  "0012_post_chars_each_once",
  "0013_post_word_pairs",
  "0014_post_char_pairs",
];
const TABLES = [
  "attempt_counts",
  "idempotency_keys",
  "kysely_migration",
  "kysely_migration_lock",
  "post_events",
  "posts",
  "posts_p0",
  "posts_p1",
  "posts_p2",
  "users",
];

// The tests of each engine share one database and run in order: from empty, again, from empty
// with several migrators, after a failure; then the schema the migrations made.
describeOnEachEngine("migrations on %s", (engine) => {
  const database = useTestDatabase(engine, { migrate: false });
  const db = () => database().db;
  const onServer = serverOnly(engine);

  const tables = async () =>
    (
      await sql<{ table_name: string }>`
        SELECT table_name FROM information_schema.tables
        WHERE table_schema = current_schema() ORDER BY table_name`.execute(db())
    ).rows.map((row) => row.table_name);
  const dropEverything = async () => {
    await sql`DROP TABLE IF EXISTS attempt_counts, idempotency_keys, post_events, posts, users, kysely_migration, kysely_migration_lock`.execute(
      db(),
    );
    await sql`DROP FUNCTION IF EXISTS post_chars, post_char_pairs, post_word_pairs, posts_partitions_ahead, posts_partition_ids_left`.execute(
      db(),
    );
  };
  const sqlStateOf = async (statement: Promise<unknown>) =>
    statement.then(
      () => "no error",
      (error: { code?: string }) => error.code,
    );

  it("creates the schema on an empty database and says what it applied", async () => {
    expect(await tables()).toEqual([]);
    expect(await migrateToLatest(db())).toEqual({ applied: ALL, all: ALL });
    expect(await tables()).toEqual(TABLES);
  });

  it("applies nothing when run again", async () => {
    expect(await migrateToLatest(db())).toEqual({ applied: [], all: ALL });
  });

  it("applies each migration exactly once when several migrators start at the same time", async () => {
    await dropEverything();
    const { connectionString } = database();
    let summaries: MigrationSummary[];
    if (connectionString === undefined) {
      // PGlite: one process, one connection; the calls still overlap in time.
      summaries = await Promise.all([1, 2, 3, 4].map(() => migrateToLatest(db())));
    } else {
      // Separate pools, as separate service instances would have.
      const handles = [1, 2, 3, 4].map(() => createPostgresDatabase({ connectionString, poolSize: 2 }));
      try {
        summaries = await Promise.all(handles.map((handle) => migrateToLatest(handle.db)));
      } finally {
        await Promise.all(handles.map((handle) => handle.close()));
      }
    }
    expect(summaries.flatMap((summary) => summary.applied).sort()).toEqual(ALL);
    expect(await tables()).toEqual(TABLES);
  });

  it("fails with a MigrationError naming the migration, and keeps nothing of it", async () => {
    await dropEverything();
    await sql`CREATE TABLE users (something integer)`.execute(db());
    const failure = await migrateToLatest(db()).then(
      () => undefined,
      (error: MigrationError) => error,
    );
    expect(failure?.name).toBe("MigrationError");
    expect(failure?.migration).toBe("0001_create_users");
    expect(failure?.message).toMatch(
      /^database migration 0001_create_users failed: .*"users" already exists/,
    );
    // Nothing of the call is left behind: not the index of 0001, not the later migrations, not
    // even Kysely's bookkeeping tables, made in the same transaction.
    expect(await tables()).toEqual(["users"]);
    // Nor a lock: the migration lock ended with the transaction that rolled back.
    const locks = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM pg_locks
      WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(
      db(),
    );
    expect(locks.rows).toEqual([{ count: 0 }]);
    await sql`DROP TABLE users`.execute(db());
    expect((await migrateToLatest(db())).applied).toEqual(ALL);
  });

  // A PGlite database has no pool to open another Kysely on.
  onServer.it(
    "refuses a Kysely instance whose adapter takes Kysely's session-level migration lock",
    async () => {
      const connectionString = serverUrl(database());
      const pool = new pg.Pool({ connectionString, max: 1 });
      const stock = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
      try {
        const failure = await migrateToLatest(stock).then(
          () => undefined,
          (error: Error) => error,
        );
        expect(failure?.message).toMatch(/needs? a database opened by createPostgresDatabase/);
      } finally {
        await stock.destroy();
      }
    },
  );

  it("gives the columns the types, limits and defaults the service relies on", async () => {
    const columns = await sql<{
      table_name: string;
      column_name: string;
      data_type: string;
      character_maximum_length: number | null;
      is_nullable: string;
      identity_generation: string | null;
    }>`
      SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, identity_generation
      FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name IN ('users', 'posts', 'idempotency_keys')
      ORDER BY table_name, ordinal_position`.execute(db());
    const shape = columns.rows.map(
      (c) =>
        `${c.table_name}.${c.column_name} ${c.data_type}` +
        `${c.character_maximum_length === null ? "" : `(${c.character_maximum_length})`}` +
        `${c.is_nullable === "NO" ? " not null" : ""}` +
        `${c.identity_generation === null ? "" : ` generated ${c.identity_generation.toLowerCase()}`}`,
    );
    expect(shape).toEqual([
      "idempotency_keys.user_id bigint not null",
      "idempotency_keys.key character varying(255) not null",
      "idempotency_keys.post_id bigint",
      "idempotency_keys.fingerprint bytea",
      "idempotency_keys.expires_at timestamp with time zone not null",
      "posts.id bigint not null generated always",
      "posts.title character varying(255) not null",
      "posts.content text not null",
      "posts.created_at timestamp with time zone not null",
      "posts.updated_at timestamp with time zone not null",
      "posts.user_id bigint not null",
      "users.id bigint not null generated always",
      "users.email text not null",
      "users.password_hash text not null",
      "users.created_at timestamp with time zone not null",
    ]);
  });

  it("indexes emails case-insensitively, one author's posts newest first, text by trigrams, characters, pairs of characters and pairs of words, keys by expiry", async () => {
    const indexes = await sql<{ indexname: string; indexdef: string }>`
      SELECT indexname, indexdef FROM pg_indexes
      WHERE schemaname = current_schema() AND tablename IN ('users', 'posts', 'idempotency_keys')
      ORDER BY indexname`.execute(db());
    expect(indexes.rows.map((row) => row.indexdef.replace(/ ON (ONLY )?\S+\./, " ON $1"))).toEqual([
      "CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys USING btree (expires_at)",
      "CREATE UNIQUE INDEX idempotency_keys_pkey ON idempotency_keys USING btree (user_id, key)",
      "CREATE INDEX posts_char_pairs_idx ON ONLY posts USING gin (post_char_pairs((title)::text, content))",
      "CREATE INDEX posts_chars_idx ON ONLY posts USING gin (post_chars((title)::text, content))",
      'CREATE INDEX posts_content_trgm_idx ON ONLY posts USING gin (content COLLATE "C" gin_trgm_ops)',
      "CREATE UNIQUE INDEX posts_pkey ON ONLY posts USING btree (id)",
      'CREATE INDEX posts_title_trgm_idx ON ONLY posts USING gin (title COLLATE "C" gin_trgm_ops)',
      "CREATE INDEX posts_user_id_id_idx ON ONLY posts USING btree (user_id, id DESC) INCLUDE (updated_at)",
      "CREATE INDEX posts_word_pairs_idx ON ONLY posts USING gin (post_word_pairs((title)::text, content))",
      "CREATE UNIQUE INDEX users_email_lower_key ON users USING btree (lower(email))",
      "CREATE UNIQUE INDEX users_pkey ON users USING btree (id)",
    ]);
  });

  describe("the schema itself, below the repositories", () => {
    const insertUser = async (email: string) =>
      (
        await sql<{ id: number }>`
          INSERT INTO users (email, password_hash, created_at) VALUES (${email}, 'hash', now())
          RETURNING id`.execute(db())
      ).rows[0]?.id;
    const insertPost = (userId: unknown, title = "title") =>
      sql`
        INSERT INTO posts (title, content, created_at, updated_at, user_id)
        VALUES (${title}, 'content', now(), now(), ${userId})`.execute(db());

    it("deletes a user's posts with the user (on delete cascade), and nobody else's", async () => {
      const leaving = await insertUser("leaving@example.com");
      const staying = await insertUser("staying@example.com");
      await insertPost(leaving);
      await insertPost(leaving);
      await insertPost(staying);
      await sql`DELETE FROM users WHERE id = ${leaving}`.execute(db());
      const left = await sql<{ user_id: number }>`SELECT user_id FROM posts ORDER BY id`.execute(db());
      expect(left.rows).toEqual([{ user_id: staying }]);
    });

    it("refuses a post whose author does not exist (23503)", async () => {
      expect(await sqlStateOf(insertPost(Number.MAX_SAFE_INTEGER))).toBe("23503");
    });

    it("stores a title of 255 emoji and refuses one of 256 (varchar(255) counts code points)", async () => {
      const author = await insertUser("emoji@example.com");
      expect(await sqlStateOf(insertPost(author, "😀".repeat(255)))).toBe("no error");
      expect(await sqlStateOf(insertPost(author, "😀".repeat(256)))).toBe("22001");
    });

    it("refuses an email that differs from a registered one only in case (23505)", async () => {
      await insertUser("Case@Example.com");
      expect(await sqlStateOf(insertUser("case@example.COM"))).toBe("23505");
    });

    it("deletes a user's idempotency keys with the user, and keeps a key whose post is gone", async () => {
      const leaving = await insertUser("keys-leaving@example.com");
      const staying = await insertUser("keys-staying@example.com");
      const post = await sql<{ id: number }>`
        INSERT INTO posts (title, content, created_at, updated_at, user_id)
        VALUES ('t', 'c', now(), now(), ${staying}) RETURNING id`.execute(db());
      const postId = post.rows[0]?.id;
      for (const [user, key] of [
        [leaving, "a"],
        [leaving, "b"],
        [staying, "a"],
      ] as const) {
        await sql`
          INSERT INTO idempotency_keys (user_id, key, post_id, expires_at)
          VALUES (${user}, ${key}, ${postId}, now() + interval '1 day')`.execute(db());
      }
      await sql`DELETE FROM posts WHERE id = ${postId}`.execute(db());
      await sql`DELETE FROM users WHERE id = ${leaving}`.execute(db());
      const left = await sql<{ user_id: number; key: string }>`
        SELECT user_id, key FROM idempotency_keys ORDER BY user_id, key`.execute(db());
      expect(left.rows).toEqual([{ user_id: staying, key: "a" }]);
    });

    it("refuses a second row for one user's key (23505), and a key of a user who does not exist (23503)", async () => {
      const user = await insertUser("keys-twice@example.com");
      const insertKey = (userId: unknown) =>
        sql`
          INSERT INTO idempotency_keys (user_id, key, expires_at)
          VALUES (${userId}, 'same', now())`.execute(db());
      expect(await sqlStateOf(insertKey(user))).toBe("no error");
      expect(await sqlStateOf(insertKey(user))).toBe("23505");
      expect(await sqlStateOf(insertKey(Number.MAX_SAFE_INTEGER))).toBe("23503");
    });

    it("generates ids and refuses one given by the client (generated always)", async () => {
      const explicit = sql`
        INSERT INTO users (id, email, password_hash, created_at) VALUES (12345, 'x@example.com', 'h', now())`;
      expect(await sqlStateOf(explicit.execute(db()))).toBe("428C9");
    });
  });
});

describeOnEachEngine("upgrading a filled database on %s", (engine) => {
  const database = useTestDatabase(engine, { migrate: false });
  const db = () => database().db;

  it("keeps every user and post made before 0004, which then serves searches and keys", async () => {
    await migrateTo(db(), "0002_create_posts");
    await sql`
      INSERT INTO users (email, password_hash, created_at) VALUES
        ('old1@example.com', '$argon2id$old1', '2025-01-01T00:00:00.001Z'),
        ('old2@example.com', '$argon2id$old2', '2025-01-02T00:00:00.002Z')`.execute(db());
    await sql`
      INSERT INTO posts (title, content, created_at, updated_at, user_id)
      SELECT 'Title ' || g || ' 안녕', 'Body ' || g || ' 😀 100%', '2025-02-01T00:00:00.123Z',
             '2025-02-02T00:00:00.456Z', 1 + g % 2
      FROM generate_series(1, 50) AS g`.execute(db());
    const before = await sql`
      SELECT p.*, u.email, u.password_hash, u.created_at AS registered FROM posts p JOIN users u ON u.id = p.user_id
      ORDER BY p.id`.execute(db());

    expect((await migrateToLatest(db())).applied).toEqual(ALL.slice(2));

    const after = await sql`
      SELECT p.*, u.email, u.password_hash, u.created_at AS registered FROM posts p JOIN users u ON u.id = p.user_id
      ORDER BY p.id`.execute(db());
    expect(after.rows).toHaveLength(50);
    expect(after.rows).toEqual(before.rows);

    const { posts } = database();
    const found = await posts.listPage({ limit: 100, search: "title 7 안녕" });
    expect(found.map((post) => post.title)).toEqual(["Title 7 안녕"]);
    const created = await posts.createIdempotently(
      { authorId: 1, title: "new", content: "after the upgrade", createdAt: new Date() },
      { key: "upgraded", expiresAt: new Date(Date.now() + 60_000) },
    );
    expect(created).toStrictEqual({ ok: true, value: { id: 51, replayed: false } });
  });

  it("numbers after 0008 the events 0007 left unnumbered, after those it had numbered, and goes back down", async () => {
    await migrateTo(db(), "0007_post_events_without_a_notification_per_change");
    await sql`DELETE FROM posts`.execute(db());
    await sql`DELETE FROM post_events`.execute(db());
    await sql`INSERT INTO users (email, password_hash, created_at) VALUES ('events@example.com', 'h', now())`.execute(
      db(),
    );
    const insertPosts = (from: number, to: number) =>
      sql`
        INSERT INTO posts (title, content, created_at, updated_at, user_id)
        SELECT 'event ' || g, 'c', now(), now(), (SELECT max(id) FROM users)
        FROM generate_series(${from}::int, ${to}::int) g`.execute(db());
    // Three events numbered under 0007 (as its sequencer did), two left to number.
    await insertPosts(1, 3);
    await sql`
      UPDATE post_events SET number = r.rank, numbered_at = now()
      FROM (SELECT seq, row_number() OVER (ORDER BY seq) AS rank FROM post_events) r
      WHERE post_events.seq = r.seq`.execute(db());
    await insertPosts(4, 5);

    expect((await migrateToLatest(db())).applied).toEqual(ALL.slice(7));
    const log = new PostgresChangeEventLog(db());
    expect(await log.numberPending()).toBe(2);
    await insertPosts(6, 6);
    expect(await log.numberPending()).toBe(1);
    const titles = (await log.readAfter(0, 100)).map((event) => [
      event.number,
      event.type === "post.deleted" ? undefined : event.post.title,
    ]);
    expect(titles).toEqual([1, 2, 3, 4, 5, 6].map((n) => [n, `event ${n}`]));

    // Down again: no xid column, and the outbox still takes numbers after the last one given.
    await migrateTo(db(), "0007_post_events_without_a_notification_per_change");
    await insertPosts(7, 7);
    await sql`
      UPDATE post_events SET number = (SELECT max(number) FROM post_events) + 1, numbered_at = now()
      WHERE number IS NULL`.execute(db());
    const columns = await sql<{ column_name: string }>`
      SELECT column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'post_events' AND column_name = 'xid'`.execute(
      db(),
    );
    expect(columns.rows).toEqual([]);
    const numbers = await sql<{ number: string }>`SELECT number FROM post_events ORDER BY number`.execute(
      db(),
    );
    expect(numbers.rows.map((row) => Number(row.number))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect((await migrateToLatest(db())).applied).toEqual(ALL.slice(7));
  });

  it("writes after 0009, one insert a statement, the very events 0008's row triggers wrote, and goes back down", async () => {
    // The same changes under each version of the triggers: several posts a statement, an update
    // of two posts of which one changes nothing, a deletion, and a user's deletion that cascades.
    const changes = async () => {
      await sql`DELETE FROM posts`.execute(db());
      await sql`DELETE FROM post_events`.execute(db());
      await sql`DELETE FROM users`.execute(db());
      await sql`
        INSERT INTO users (id, email, password_hash, created_at) OVERRIDING SYSTEM VALUE
        VALUES (901, 'one@example.com', 'h', now()), (902, 'two@example.com', 'h', now())`.execute(db());
      await sql`
        INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
        SELECT g, 'post ' || g, 'content ' || g, '2026-11-27T10:00:00Z', '2026-11-27T10:00:00Z',
               CASE WHEN g <= 3 THEN 901 ELSE 902 END
        FROM generate_series(5, 1, -1) g`.execute(db());
      await sql`
        UPDATE posts SET title = CASE id WHEN 2 THEN 'changed' ELSE title END,
                         updated_at = CASE id WHEN 2 THEN '2026-11-27T11:00:00Z'::timestamptz ELSE updated_at END
        WHERE id IN (1, 2)`.execute(db());
      await sql`DELETE FROM posts WHERE id = 3`.execute(db());
      await sql`DELETE FROM users WHERE id = 902`.execute(db());
      const { rows } = await sql<Record<string, unknown>>`
        SELECT type, post_id::int, title, content, created_at, updated_at, author_id::int, author_email,
               CASE WHEN type = 'post.deleted' THEN occurred_at IS NOT NULL ELSE occurred_at = updated_at END AS occurred
        FROM post_events ORDER BY seq`.execute(db());
      return rows;
    };
    await migrateTo(db(), "0008_post_events_cheaper_to_write_and_to_number");
    const byRows = await changes();
    // Each statement's events: row triggers wrote them in the order the statement met its rows.
    const statements = [5, 1, 1, 2];
    const byStatement = (rows: Record<string, unknown>[], sortById: boolean) =>
      statements.map((count, i) => {
        const start = statements.slice(0, i).reduce((sum, n) => sum + n, 0);
        const events = rows.slice(start, start + count);
        return sortById ? events.sort((a, b) => Number(a.post_id) - Number(b.post_id)) : events;
      });
    expect(byStatement(byRows, true).map((events) => events.map((row) => [row.type, row.post_id]))).toEqual([
      [1, 2, 3, 4, 5].map((id) => ["post.created", id]),
      [["post.updated", 2]],
      [["post.deleted", 3]],
      [4, 5].map((id) => ["post.deleted", id]),
    ]);

    expect((await migrateToLatest(db())).applied).toEqual(ALL.slice(8));
    const byStatements = await changes();
    // The very same rows, each statement's in the order of its posts' ids.
    expect(byStatement(byStatements, false)).toEqual(byStatement(byRows, true));

    await migrateTo(db(), "0008_post_events_cheaper_to_write_and_to_number");
    expect(await changes()).toEqual(byRows);
    expect((await migrateToLatest(db())).applied).toEqual(ALL.slice(8));
  });

  it("records after 0010 when each event's transaction started, leaves the rows before it without, and goes back down", async () => {
    await sql`DELETE FROM posts`.execute(db());
    await sql`DELETE FROM post_events`.execute(db());
    await sql`DELETE FROM users`.execute(db());
    await sql`
      INSERT INTO users (id, email, password_hash, created_at) OVERRIDING SYSTEM VALUE
      VALUES (903, 'three@example.com', 'h', now())`.execute(db());
    const create = (id: number) =>
      sql`
        INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
        VALUES (${id}, 'post', 'content', now(), now(), 903)`.execute(db());
    await migrateTo(db(), "0009_post_events_written_per_statement");
    await create(1);
    expect((await migrateToLatest(db())).applied).toEqual(ALL.slice(9));
    // Two posts in one transaction: both events carry its start, which is its now().
    const { rows: started } = await db()
      .transaction()
      .execute(async (trx) => {
        await sql`
          INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
          VALUES (2, 'post', 'content', now(), now(), 903), (3, 'post', 'content', now(), now(), 903)`.execute(
          trx,
        );
        return sql<{ now: Date }>`SELECT now() AS now`.execute(trx);
      });
    const { rows } = await sql<{ post_id: string; xact_start: Date | null }>`
      SELECT post_id, xact_start FROM post_events ORDER BY post_id`.execute(db());
    expect(rows.map((row) => [Number(row.post_id), row.xact_start?.getTime() ?? null])).toEqual([
      [1, null],
      [2, started[0]?.now.getTime()],
      [3, started[0]?.now.getTime()],
    ]);
    await migrateTo(db(), "0009_post_events_written_per_statement");
    const columns = await sql<{ column_name: string }>`
      SELECT column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'post_events' AND column_name = 'xact_start'`.execute(
      db(),
    );
    expect(columns.rows).toEqual([]);
    expect((await migrateToLatest(db())).applied).toEqual(ALL.slice(9));
  });
});
