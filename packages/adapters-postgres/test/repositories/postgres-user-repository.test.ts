import { sql } from "kysely";
import { beforeEach, expect, it } from "vitest";
import { describeOnEachEngine, useTestDatabase } from "../use-test-database.js";

const REGISTERED_AT = new Date("2026-11-22T10:15:30.123Z");

describeOnEachEngine("PostgresUserRepository on %s", (engine) => {
  const database = useTestDatabase(engine);
  beforeEach(async () => database().truncate());
  const create = (email: string) =>
    database().users.create({ email, passwordHash: "hash", createdAt: REGISTERED_AT });

  it("registers one user when ten case variants of an email arrive at once", async () => {
    const variants = Array.from({ length: 10 }, (_, i) =>
      [..."same.person@example.com"].map((c, j) => ((i >> (j % 4)) & 1 ? c.toUpperCase() : c)).join(""),
    );
    const results = await Promise.all(variants.map(create));
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(results.filter((result) => !result.ok && result.error === "email-taken")).toHaveLength(9);
    const count = await sql<{ n: number }>`SELECT count(*)::int AS n FROM users`.execute(database().db);
    expect(count.rows[0]?.n).toBe(1);
  });

  it("answers email-taken from the unique index, even against a row written around the repository", async () => {
    await sql`
      INSERT INTO users (email, password_hash, created_at)
      VALUES ('Written.Elsewhere@Example.com', 'hash', now())`.execute(database().db);
    expect(await create("written.elsewhere@example.com")).toStrictEqual({ ok: false, error: "email-taken" });
    // Found by its normalized form too: the lookup compares lower(email), as the index does.
    expect((await database().users.findByEmail("written.elsewhere@example.com"))?.email).toBe(
      "Written.Elsewhere@Example.com",
    );
  });

  it("lets a clash on another unique key propagate instead of calling it email-taken", async () => {
    // Take the id the identity will hand out next.
    await sql`
      INSERT INTO users (id, email, password_hash, created_at) OVERRIDING SYSTEM VALUE
      VALUES (1, 'squatter@example.com', 'hash', now())`.execute(database().db);
    const clash = await create("newcomer@example.com").then(
      () => "no error",
      (error: { code?: string; constraint?: string }) => `${error.code} ${error.constraint}`,
    );
    expect(clash).toBe("23505 users_pkey");
  });

  it("removes the user's posts in the statement that removes the user", async () => {
    const created = await create("leaving@example.com");
    if (!created.ok) throw new Error(created.error);
    const author = created.value;
    for (let i = 0; i < 3; i++) {
      await database().posts.create({
        authorId: author.id,
        title: "t",
        content: "c",
        createdAt: REGISTERED_AT,
      });
    }
    expect(await database().users.delete(author.id)).toBe(true);
    const left = await sql<{ n: number }>`SELECT count(*)::int AS n FROM posts`.execute(database().db);
    expect(left.rows[0]?.n).toBe(0);
  });
});
