import {
  createPostgresDatabase,
  type DatabaseHandle,
  PostgresPostRepository,
} from "@posts/adapters-postgres";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { postgres, serverUrl, useTestDatabase } from "../../use-test-database.js";

const CREATED_AT = new Date("2026-11-29T10:15:30.123Z");

describeNeeding(postgres, "the plan of lookups gathered into one statement, on a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");
  const handles: DatabaseHandle[] = [];
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.close()));
  });

  it("is planned once and kept from the sixth execution, however few the ids and whichever partition", async () => {
    // One connection, so that every execution meets the same backend and its plan cache.
    const handle = createPostgresDatabase({ connectionString: serverUrl(database()), poolSize: 1 });
    handles.push(handle);
    const posts = new PostgresPostRepository(handle.db);
    const author = await database().users.create({
      email: "lookup-plans@example.com",
      passwordHash: "hash",
      createdAt: CREATED_AT,
    });
    if (!author.ok) throw new Error(author.error);
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const post = await posts.create({
        authorId: author.value.id,
        title: `post ${i}`,
        content: "c",
        createdAt: CREATED_AT,
      });
      ids.push(post?.id as number);
    }
    // Three lookups in one turn: the first sent alone, the two asked while it waits in one
    // statement of two ids, in one partition of several. Given the array, PostgreSQL would
    // price a plan of that one partition below a plan for any ids, and plan every execution
    // afresh.
    for (let i = 0; i < 8; i++) {
      const asked = [ids[(i + 2) % 3], ids[i % 3], ids[(i + 1) % 3]] as number[];
      const found = await Promise.all(asked.map((id) => posts.findById(id)));
      expect(found.map((post) => post?.id)).toEqual(asked);
    }
    const { rows } = await sql<{ generic_plans: string; custom_plans: string }>`
      SELECT generic_plans, custom_plans FROM pg_prepared_statements
      WHERE NOT from_sql AND statement LIKE '%unnest((SELECT%'`.execute(handle.db);
    expect(rows).toHaveLength(1);
    expect(Number(rows[0]?.custom_plans)).toBe(5);
    expect(Number(rows[0]?.generic_plans)).toBe(3);
  });
});
