import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recreateDatabase, warmPageCache, withDatabase } from "../src/load/database.js";

// Needs a PostgreSQL server, as `pnpm bench` does; CI always gives one (DATABASE_URL).
const url = process.env.DATABASE_URL;
if (url === undefined && process.env.CI === "true") throw new Error("DATABASE_URL is required under CI");
if (url === undefined)
  console.warn("[bench] DATABASE_URL is not set: the test of the page cache warm-up is skipped");

describe.skipIf(url === undefined)("warming the page cache before a run", () => {
  // A database of its own: the warm-up creates the pg_prewarm extension in the one it is given.
  const database = `bench_warm_${process.pid}`;
  // Made in beforeAll: the body of a skipped suite still runs, and has no URL to give it.
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: withDatabase(url as string, database) });
    await recreateDatabase(url as string, database);
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
    await client.end();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
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
