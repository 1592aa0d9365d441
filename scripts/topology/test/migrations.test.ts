import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createPostgresDatabase, migrateToLatest } from "@posts/adapters-postgres";
import { afterEach, describe, expect, inject, it } from "vitest";
import { attachTopology, DATABASE, ROOT, sql, type Topology } from "../topology.js";

/**
 * Migrations through PgBouncer in transaction pooling, as an operator runs them: the service's
 * `migrate` command with DATABASE_URL naming PgBouncer, several at once. PgBouncer may hand each
 * transaction to another server connection, so a lock held by a session rather than by a
 * transaction would stay behind on a pooled connection and make the next migration wait.
 */
const topology: Topology = attachTopology(inject("topologyDir"));
const scratch: string[] = [];

/** A new empty database on the primary, reached through PgBouncer under its own name. */
async function scratchDatabase(): Promise<string> {
  const name = `posts_migrate_${randomBytes(4).toString("hex")}`;
  await sql(topology.directUrl("primary", "postgres"), `CREATE DATABASE ${name}`);
  scratch.push(name);
  return name;
}

afterEach(async () => {
  for (const name of scratch.splice(0)) {
    await sql(topology.directUrl("primary", "postgres"), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
});

interface Run {
  readonly code: number;
  /** The `applied` of the log line that says what the run did, if it logged one. */
  readonly applied: readonly string[] | undefined;
  readonly output: string;
}

/** Runs the service's `migrate` command on `database` through PgBouncer. */
function migrateCommand(database: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, "packages/app/dist/main.js"), "migrate"],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: topology.bouncerUrlOf(database),
          DB_NAMED_STATEMENTS: "false",
          JWT_SECRET: topology.jwtSecret,
          DATA_DIR: join(topology.dir, `migrate-${database}`),
          LOG_LEVEL: "info",
        },
        // A run stuck behind a lock left on a pooled connection would wait far longer.
        timeout: 30_000,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        const applied = stdout
          .split("\n")
          .flatMap((line) => {
            try {
              return [JSON.parse(line) as { applied?: string[] }];
            } catch {
              return [];
            }
          })
          .find((entry) => Array.isArray(entry.applied))?.applied;
        resolve({ code, applied, output: `${stdout}\n${stderr}` });
      },
    );
  });
}

async function migrationsOf(database: string): Promise<string[]> {
  const rows = await sql<{ name: string }>(
    topology.directUrl("primary", database),
    "SELECT name FROM kysely_migration ORDER BY name",
  );
  return rows.map((row) => row.name);
}

/** Advisory locks held in `database` by any session on the primary. */
async function advisoryLocksIn(database: string): Promise<number> {
  const [row] = await sql<{ count: number }>(
    topology.directUrl("primary", "postgres"),
    `SELECT count(*)::int AS count FROM pg_locks
     WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = $1)`,
    [database],
  );
  return row?.count ?? -1;
}

describe("migrations through PgBouncer in transaction pooling", () => {
  it("three migrate commands at once apply each migration once, leave no lock held, and the next runs find nothing to do", async () => {
    const database = await scratchDatabase();
    // The topology's own database, migrated the same way when it started: every migration.
    const all = await migrationsOf(DATABASE);
    expect(all.length).toBeGreaterThan(0);

    const runs = await Promise.all([1, 2, 3].map(() => migrateCommand(database)));
    for (const run of runs) expect(run.code, run.output).toBe(0);
    expect(runs.flatMap((run) => run.applied ?? []).sort()).toEqual(all);
    expect(await migrationsOf(database)).toEqual(all);
    expect(await advisoryLocksIn(database)).toBe(0);

    // Eight pools at once, through the same PgBouncer server connections the runs above used.
    const handles = Array.from({ length: 8 }, () =>
      createPostgresDatabase({
        connectionString: topology.bouncerUrlOf(database),
        namedStatements: false,
        poolSize: 2,
        applicationName: "migrations-test",
      }),
    );
    try {
      const summaries = await Promise.all(handles.map((handle) => migrateToLatest(handle.db)));
      expect(summaries.map((summary) => summary.applied)).toEqual(handles.map(() => []));
    } finally {
      await Promise.all(handles.map((handle) => handle.close()));
    }
    expect(await advisoryLocksIn(database)).toBe(0);
  });

  it("a migration that fails leaves nothing behind, no lock either, and the next run applies everything", async () => {
    const database = await scratchDatabase();
    const all = await migrationsOf(DATABASE);
    // The first migration creates `users`: a table of that name already there makes it fail.
    await sql(topology.directUrl("primary", database), "CREATE TABLE users (something integer)");
    const failures = await Promise.all([1, 2].map(() => migrateCommand(database)));
    for (const failure of failures) {
      expect(failure.code, failure.output).toBe(1);
      expect(failure.output).toMatch(/0001_create_users failed: relation \W*users\W* already exists/);
    }
    const [tables] = await sql<{ names: string[] }>(
      topology.directUrl("primary", database),
      "SELECT array_agg(table_name::text ORDER BY table_name) AS names FROM information_schema.tables WHERE table_schema = 'public'",
    );
    expect(tables?.names).toEqual(["users"]);
    expect(await advisoryLocksIn(database)).toBe(0);

    await sql(topology.directUrl("primary", database), "DROP TABLE users");
    const run = await migrateCommand(database);
    expect(run.code, run.output).toBe(0);
    expect(run.applied).toEqual(all);
  });
});
