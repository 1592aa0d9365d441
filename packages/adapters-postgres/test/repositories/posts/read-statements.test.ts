import { PostgresPostRepository, PostgresUserRepository, type RunStatement } from "@posts/adapters-postgres";
import type { TestDatabase } from "@posts/adapters-postgres/testing";
import { CompiledQuery } from "kysely";
import { expect, it } from "vitest";
import { describeOnEachEngine, useTestDatabase } from "../../use-test-database.js";

const CREATED_AT = new Date("2026-11-22T10:15:30.123Z");

/** A runner that records each statement it is given and runs it on the test database's primary. */
function recordingRunner(database: TestDatabase): { run: RunStatement; taken: () => string[] } {
  let recorded: string[] = [];
  return {
    run: async (text, parameters) => {
      recorded.push(text);
      return (await database.db.executeQuery(CompiledQuery.raw(text, [...parameters]))).rows;
    },
    taken: () => {
      const taken = recorded;
      recorded = [];
      return taken;
    },
  };
}

/** Whether every statement is a plain read: a SELECT that neither writes nor locks. */
const plainReads = (texts: readonly string[]) =>
  texts.every(
    (text) =>
      /^\s*select\b/i.test(text) &&
      !/\b(insert|update|delete|for\s+(no\s+key\s+)?update|for\s+(key\s+)?share)\b/i.test(text),
  );

describeOnEachEngine("readStatements on %s", (engine) => {
  const database = useTestDatabase(engine);

  it("carries exactly the post reads a standby may answer (by id, pages, searches), and no write", async () => {
    const { run, taken } = recordingRunner(database());
    const posts = new PostgresPostRepository(database().db, { readStatements: run });
    const author = await database().users.create({
      email: `standby-${engine}@example.com`,
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!author.ok) throw new Error(author.error);
    const authorId = author.value.id;

    const created = await posts.create({ authorId, title: "one", content: "text", createdAt: CREATED_AT });
    if (created === undefined) throw new Error("author gone");
    const keyed = { key: "k-1", expiresAt: new Date(CREATED_AT.getTime() + 60_000) };
    const second = { authorId, title: "two", content: "text", createdAt: CREATED_AT };
    expect(await posts.createIdempotently(second, keyed)).toMatchObject({
      ok: true,
      value: { replayed: false },
    });
    expect(await posts.createIdempotently(second, keyed)).toMatchObject({
      ok: true,
      value: { replayed: true },
    });
    const updated = await posts.update({
      id: created.id,
      authorId,
      changes: { title: "one, changed" },
      now: CREATED_AT,
      expectedVersions: [created.updatedAt],
    });
    expect(updated.ok).toBe(true);
    // Writes that change nothing, and so are diagnosed: a stale version, someone else's post.
    expect(
      await posts.update({
        id: created.id,
        authorId,
        changes: { content: "late" },
        now: CREATED_AT,
        expectedVersions: [created.updatedAt],
      }),
    ).toStrictEqual({ ok: false, error: "version-mismatch" });
    expect(await posts.delete({ id: created.id, authorId: authorId + 1 })).toStrictEqual({
      ok: false,
      error: "not-author",
    });
    expect(await posts.deleteExpiredIdempotencyKeys(new Date(CREATED_AT.getTime() + 120_000))).toBe(1);
    expect(taken()).toStrictEqual([]);

    expect(await posts.findById(created.id)).toStrictEqual(updated.ok ? updated.value : undefined);
    expect(taken()).toHaveLength(1);
    const pages = [
      { limit: 10 },
      { limit: 10, beforeId: created.id + 1_000_000 },
      { limit: 10, authorId },
      { limit: 10, search: "changed" },
    ];
    for (const query of pages) {
      expect(await posts.listPage(query)).toStrictEqual(await database().posts.listPage(query));
      const statements = taken();
      expect(statements).toHaveLength(1);
      expect(plainReads(statements)).toBe(true);
    }

    expect(await posts.delete({ id: created.id, authorId })).toStrictEqual({ ok: true, value: undefined });
    expect(taken()).toStrictEqual([]);
  });

  it("carries the cached pages' statements too: the listing, then the posts it lacks", async () => {
    const { run, taken } = recordingRunner(database());
    const posts = new PostgresPostRepository(database().db, {
      readStatements: run,
      cache: { maxBytes: 1_000_000, alwaysThroughCache: true },
    });
    const author = await database().users.create({
      email: `standby-cache-${engine}@example.com`,
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!author.ok) throw new Error(author.error);
    await posts.create({
      authorId: author.value.id,
      title: "cached",
      content: "text",
      createdAt: CREATED_AT,
    });
    taken();
    const query = { limit: 5, authorId: author.value.id };
    const first = await posts.listPage(query);
    expect(first).toStrictEqual(await database().posts.listPage(query));
    const statements = taken();
    expect(statements).toHaveLength(2);
    expect(plainReads(statements)).toBe(true);
  });

  it("carries the user lookup by email that login reads, and nothing else of the users", async () => {
    const { run, taken } = recordingRunner(database());
    const users = new PostgresUserRepository(database().db, { readStatements: run });
    const created = await users.create({
      email: `login-${engine}@example.com`,
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!created.ok) throw new Error(created.error);
    expect(await users.findById(created.value.id)).toStrictEqual(created.value);
    expect(taken()).toStrictEqual([]);
    expect(await users.findByEmail(`LOGIN-${engine}@example.com`)).toStrictEqual(created.value);
    const statements = taken();
    expect(statements).toHaveLength(1);
    expect(plainReads(statements)).toBe(true);
    expect(await users.delete(created.value.id)).toBe(true);
    expect(taken()).toStrictEqual([]);
  });
});
