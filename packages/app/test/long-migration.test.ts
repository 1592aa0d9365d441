import type { TestDatabase } from "@posts/adapters-postgres/testing";
import { migrateTo, openTestDatabase, postgresForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runCommand, startService, TEST_JWT_SECRET } from "./support/service-process.js";

/** Enough posts that building the index of pairs of words over them takes well past the timeout. */
const POSTS = 40_000;
const BEFORE = "0012_post_chars_each_once";

describeNeeding(await postgresForTests(), "a migration that takes longer than a statement may", () => {
  let database: TestDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await openTestDatabase("postgres", { migrate: false });
    await migrateTo(database.db, BEFORE);
    const author = await database.db
      .insertInto("users")
      .values({ email: "author@example.com", password_hash: "h", created_at: new Date().toISOString() })
      .returning("id")
      .executeTakeFirstOrThrow();
    const now = new Date().toISOString();
    for (let from = 1; from <= POSTS; from += 5000) {
      const rows = Array.from({ length: 5000 }, (_, i) => ({
        title: `Post number ${from + i}`,
        content: `lorem ipsum dolor sit amet ${from + i} `.repeat(8),
        created_at: now,
        updated_at: now,
        user_id: author.id,
      }));
      await database.db.insertInto("posts").values(rows).execute();
    }
    env = {
      DATABASE_URL: database.connectionString ?? "",
      JWT_SECRET: TEST_JWT_SECRET,
      // A request's statement is cut at 100 ms; the index takes seconds to build.
      DB_STATEMENT_TIMEOUT_MS: "100",
      DB_STARTUP_TIMEOUT_MS: "3000",
    };
  }, 120_000);
  afterAll(async () => {
    await database?.close();
  });

  it("is applied at start, on a connection without the statement timeout", async () => {
    const service = await startService(env);
    const exit = await service.stop();
    expect(exit.code).toBe(0);
    expect(service.logs).toContainEqual(
      expect.objectContaining({ applied: ["0013_post_word_pairs", "0014_post_char_pairs"] }),
    );
  }, 120_000);

  it("is applied by `migrate` likewise", async () => {
    await migrateTo(database.db, BEFORE);
    const run = await runCommand(["migrate"], env);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.logs.find((line) => Array.isArray(line.applied))?.applied).toEqual([
      "0013_post_word_pairs",
      "0014_post_char_pairs",
    ]);
  }, 120_000);
});
