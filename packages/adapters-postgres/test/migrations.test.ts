import {
  createPostgresDatabase,
  type MigrationError,
  type MigrationSummary,
  migrateToLatest,
} from "@posts/adapters-postgres";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { ENGINES, useTestDatabase } from "./use-test-database.js";

const ALL = ["0001_create_users", "0002_create_posts", "0003_create_attempt_counts"];
const SCHEMA_TABLES = ["attempt_counts", "kysely_migration", "kysely_migration_lock", "posts", "users"];

// The tests of each engine share one database and run in order: from empty, again, from empty
// with several migrators, after a failure; then the schema the migrations made.
describe.each(ENGINES)("migrations on %s", (engine) => {
  const database = useTestDatabase(engine, { migrate: false });
  const db = () => database().db;

  const tables = async () =>
    (
      await sql<{ table_name: string }>`
        SELECT table_name FROM information_schema.tables
        WHERE table_schema = current_schema() ORDER BY table_name`.execute(db())
    ).rows.map((row) => row.table_name);
  const dropEverything = () =>
    sql`DROP TABLE IF EXISTS attempt_counts, posts, users, kysely_migration, kysely_migration_lock`.execute(
      db(),
    );
  const sqlStateOf = async (statement: Promise<unknown>) =>
    statement.then(
      () => "no error",
      (error: { code?: string }) => error.code,
    );

  it("creates the schema on an empty database and says what it applied", async () => {
    expect(await tables()).toEqual([]);
    expect(await migrateToLatest(db())).toEqual({ applied: ALL, all: ALL });
    expect(await tables()).toEqual(SCHEMA_TABLES);
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
    expect(await tables()).toEqual(SCHEMA_TABLES);
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
    // Neither the index of 0001 nor anything of 0002 is left behind.
    expect(await tables()).toEqual(["kysely_migration", "kysely_migration_lock", "users"]);
    await sql`DROP TABLE users`.execute(db());
    expect((await migrateToLatest(db())).applied).toEqual(ALL);
  });

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
      WHERE table_schema = current_schema() AND table_name IN ('users', 'posts')
      ORDER BY table_name, ordinal_position`.execute(db());
    const shape = columns.rows.map(
      (c) =>
        `${c.table_name}.${c.column_name} ${c.data_type}` +
        `${c.character_maximum_length === null ? "" : `(${c.character_maximum_length})`}` +
        `${c.is_nullable === "NO" ? " not null" : ""}` +
        `${c.identity_generation === null ? "" : ` generated ${c.identity_generation.toLowerCase()}`}`,
    );
    expect(shape).toEqual([
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

  it("indexes emails case-insensitively and one author's posts newest first", async () => {
    const indexes = await sql<{ indexname: string; indexdef: string }>`
      SELECT indexname, indexdef FROM pg_indexes
      WHERE schemaname = current_schema() AND tablename IN ('users', 'posts')
      ORDER BY indexname`.execute(db());
    expect(indexes.rows.map((row) => row.indexdef.replace(/ ON \S+\./, " ON "))).toEqual([
      "CREATE UNIQUE INDEX posts_pkey ON posts USING btree (id)",
      "CREATE INDEX posts_user_id_id_idx ON posts USING btree (user_id, id DESC)",
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

    it("generates ids and refuses one given by the client (generated always)", async () => {
      const explicit = sql`
        INSERT INTO users (id, email, password_hash, created_at) VALUES (12345, 'x@example.com', 'h', now())`;
      expect(await sqlStateOf(explicit.execute(db()))).toBe("428C9");
    });
  });
});
