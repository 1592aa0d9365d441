import { openTestDatabase, postgresForTests, type TestDatabase } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { warmPageCache } from "../src/load/database.js";

// Needs a PostgreSQL server, as `pnpm bench` does.
describeNeeding(await postgresForTests(), "warming the page cache before a run", () => {
  // A database of its own: the warm-up creates the pg_prewarm extension in the one it is given.
  let database: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    database = await openTestDatabase("postgres", { migrate: false });
    client = new pg.Client({ connectionString: database.connectionString });
    await client.connect();
    await client.query("create table users (id int primary key, email text)");
    await client.query("create table posts (id int primary key, user_id int, title text)");
    await client.query("create index posts_user_id on posts (user_id)");
    await client.query("create table other (id int primary key)");
    await client.query("insert into users select g, 'u' || g from generate_series(1, 1000) g");
    await client.query(
      "insert into posts select g, g % 1000 + 1, repeat('t', 100) from generate_series(1, 20000) g",
    );
    await client.query("insert into other select generate_series(1, 20000)");
  });
  afterAll(async () => {
    await client?.end();
    await database?.close();
  });

  it("reads every block of the posts and users tables and of their indexes, and nothing else", async () => {
    const { rows } = await client.query<{ bytes: string }>(
      `select sum(pg_relation_size(c.oid))::int8 as bytes from pg_class c
        where c.relnamespace = current_schema()::regnamespace
          and c.relname in ('users', 'users_pkey', 'posts', 'posts_pkey', 'posts_user_id')`,
    );
    const expected = Number(rows[0]?.bytes);
    expect(expected).toBeGreaterThan(1_000_000);
    expect(await warmPageCache(client)).toBe(expected);
  });
});
