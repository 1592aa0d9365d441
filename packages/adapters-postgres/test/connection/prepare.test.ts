import {
  createPostgresDatabase,
  type DatabaseHandle,
  PostgresPostRepository,
  PostgresUserRepository,
} from "@posts/adapters-postgres";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { type Kysely, sql } from "kysely";
import { afterEach, beforeEach, expect, it } from "vitest";
import { prepare } from "../../src/connection/prepare.js";
import type { Database } from "../../src/schema/database.js";
import { postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");

interface Prepared {
  readonly name: string;
  readonly statement: string;
}

/** What the one connection of a one-connection pool has prepared, by protocol (not PREPARE). */
async function preparedOn(handle: DatabaseHandle): Promise<Prepared[]> {
  const { rows } = await sql<Prepared>`
    SELECT name, statement FROM pg_prepared_statements WHERE NOT from_sql ORDER BY name`.execute(handle.db);
  return rows;
}

/** Every hot path of both repositories once; answers what each returned. */
async function everyOperation(handle: DatabaseHandle, email: string) {
  const posts = new PostgresPostRepository(handle.db);
  const users = new PostgresUserRepository(handle.db);
  const user = await users.create({ email, passwordHash: "hash", createdAt: CREATED_AT });
  if (!user.ok) throw new Error(user.error);
  const authorId = user.value.id;
  const created = await posts.create({ authorId, title: "first", content: "body", createdAt: CREATED_AT });
  if (created === undefined) throw new Error("author gone");
  const second = await posts.create({ authorId, title: "second", content: "body", createdAt: CREATED_AT });
  if (second === undefined) throw new Error("author gone");
  const answers = {
    login: await users.findByEmail(email),
    byId: await users.findById(authorId),
    one: await posts.findById(created.id),
    first: await posts.listPage({ limit: 2 }),
    deep: await posts.listPage({ limit: 2, beforeId: second.id }),
    byAuthor: await posts.listPage({ limit: 2, authorId }),
    byAuthorDeep: await posts.listPage({ limit: 2, authorId, beforeId: second.id }),
    patched: await posts.update({
      id: created.id,
      authorId,
      changes: { title: "edited" },
      now: new Date(CREATED_AT.getTime() + 1000),
    }),
    deleted: await posts.delete({ id: second.id, authorId }),
  };
  return answers;
}

describeNeeding(postgres, "statements compiled once run as named prepared statements on a server", () => {
  const database = useTestDatabase("postgres");
  const handles: DatabaseHandle[] = [];
  beforeEach(() => database().truncate());
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.close()));
  });
  /** A pool of one connection on the test database, so that every statement meets the same backend. */
  const open = (namedStatements?: boolean) => {
    const handle = createPostgresDatabase({
      connectionString: serverUrl(database()),
      poolSize: 1,
      ...(namedStatements === undefined ? {} : { namedStatements }),
    });
    handles.push(handle);
    return handle;
  };

  it("prepares each repository statement once per connection, and leaves ad-hoc statements unnamed", async () => {
    const handle = open();
    await sql`SELECT 1 AS ready`.execute(handle.db);
    await everyOperation(handle, "named@example.com");
    const first = await preparedOn(handle);
    // users: create, findByEmail, findById; posts: create, findById, four pages, an update, delete.
    expect(first.length).toBeGreaterThanOrEqual(11);
    expect(new Set(first.map((p) => p.name)).size).toBe(first.length);
    expect(first.every((p) => /^posts_\d+$/.test(p.name))).toBe(true);
    expect(first.some((p) => p.statement.includes("pg_prepared_statements"))).toBe(false);
    expect(first.some((p) => p.statement.includes("ready"))).toBe(false);

    // Run again: nothing new is prepared, the same names serve.
    await everyOperation(handle, "named-again@example.com");
    expect(await preparedOn(handle)).toEqual(first);
  });

  it("parses every execution's rows by its own statement's columns, however often each runs", async () => {
    const handle = open();
    // The same column names, of other types: a named statement's parsers are never another's.
    const typed = prepare(handle.db, (p: { n: number }) =>
      sql<{
        big: number;
        text: string;
        at: Date;
      }>`SELECT ${p.n}::int8 AS big, ${p.n}::text AS text, now() AS at`.compile(handle.db),
    );
    const asText = prepare(handle.db, (p: { n: number }) =>
      sql<{ big: string; text: number }>`SELECT ${p.n}::text AS big, ${p.n}::int4 AS text`.compile(handle.db),
    );
    for (const n of [1, 2, 3]) {
      const [row] = await typed({ n });
      expect(row).toEqual({ big: n, text: String(n), at: expect.any(Date) });
      expect(await asText({ n })).toEqual([{ big: String(n), text: n }]);
    }
    expect((await preparedOn(handle)).length).toBe(2);
  });

  it("answers exactly what the same statements answer unnamed", async () => {
    const namedHandle = open();
    const unnamedHandle = open(false);
    // Emptied with the ids restarted before each run, so both runs make the same ids.
    const named = await everyOperation(namedHandle, "same@example.com");
    await database().truncate();
    const unnamed = await everyOperation(unnamedHandle, "same@example.com");
    expect(named).toEqual(unnamed);
    expect(named.one?.title).toBe("first");
    expect(named.first.map((p) => p.title)).toEqual(["second", "first"]);
    expect(await preparedOn(unnamedHandle)).toEqual([]);
  });

  it("keeps serving through a schema change that alters a statement's result type, and through an added column", async () => {
    const handle = open();
    const posts = new PostgresPostRepository(handle.db);
    const users = new PostgresUserRepository(handle.db);
    const user = await users.create({
      email: "migrated@example.com",
      passwordHash: "h",
      createdAt: CREATED_AT,
    });
    if (!user.ok) throw new Error(user.error);
    const post = await posts.create({
      authorId: user.value.id,
      title: "t",
      content: "c",
      createdAt: CREATED_AT,
    });
    if (post === undefined) throw new Error("author gone");
    // Twice: the first lookup finds the post through `posts`, the next ones read its partition.
    expect((await posts.findById(post.id))?.title).toBe("t");
    expect((await posts.findById(post.id))?.title).toBe("t");
    expect(await posts.listPage({ limit: 5 })).toHaveLength(1);
    const before = await preparedOn(handle);

    // Migrated by another connection (another instance) while this one keeps its statements.
    await sql`ALTER TABLE posts ADD COLUMN migrated_flag boolean`.execute(database().db);
    expect((await posts.findById(post.id))?.title).toBe("t");
    // A new column changes none of these statements' results: PostgreSQL replans them in place.
    expect(await preparedOn(handle)).toEqual(before);

    await sql`ALTER TABLE posts ALTER COLUMN title TYPE varchar(300)`.execute(database().db);
    expect((await posts.findById(post.id))?.title).toBe("t");
    expect(await posts.listPage({ limit: 5 })).toEqual([await posts.findById(post.id)]);
    const after = await preparedOn(handle);
    const findById = before.find(
      (p) => p.statement.includes('"posts_p0"') && p.statement.includes('"posts"."id" = $1'),
    );
    expect(findById).toBeDefined();
    // The stale statement is still there under its old name; the one that answered has a new one.
    const sameText = after.filter((p) => p.statement === findById?.statement);
    expect(sameText).toHaveLength(2);
    expect(sameText.map((p) => p.name)).toContain(findById?.name);
  });

  it("inside a transaction, fails the stale statement and runs the next attempt under a fresh name", async () => {
    const handle = open();
    const title = (db: Kysely<Database>) =>
      prepare(db, (p: { limit: number }) =>
        db.selectFrom("posts").select(["posts.title"]).orderBy("posts.id").limit(p.limit).compile(),
      );
    const users = new PostgresUserRepository(handle.db);
    const user = await users.create({
      email: "in-trx@example.com",
      passwordHash: "h",
      createdAt: CREATED_AT,
    });
    if (!user.ok) throw new Error(user.error);
    await new PostgresPostRepository(handle.db).create({
      authorId: user.value.id,
      title: "kept",
      content: "c",
      createdAt: CREATED_AT,
    });
    expect(await title(handle.db)({ limit: 1 })).toEqual([{ title: "kept" }]);

    await sql`ALTER TABLE posts ALTER COLUMN title TYPE varchar(400)`.execute(database().db);
    const inside = handle.db.transaction().execute((trx) => title(trx)({ limit: 1 }));
    await expect(inside).rejects.toMatchObject({ code: "0A000" });
    // The aborted transaction rolled back; the whole unit, tried again, succeeds.
    const again = await handle.db.transaction().execute((trx) => title(trx)({ limit: 1 }));
    expect(again).toEqual([{ title: "kept" }]);
  });

  it("sends every statement unnamed when named statements are off", async () => {
    const handle = open(false);
    await everyOperation(handle, "unnamed@example.com");
    expect(await preparedOn(handle)).toEqual([]);
  });
});
