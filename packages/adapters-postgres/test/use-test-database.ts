import type { DatabaseEngine } from "@posts/adapters-postgres";
import {
  type OpenTestDatabaseOptions,
  openTestDatabase,
  postgresForTests,
  type TestDatabase,
} from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, describe, it, type TestFunction } from "vitest";

/** Whether this process has a PostgreSQL to test on: the one probe every suite here shares. */
export const postgres = await postgresForTests();

/**
 * A suite run once per engine, `%s` in its name standing for the engine: on PostgreSQL through
 * `describeNeeding` (skipped or failed when collected if there is none), and on PGlite always.
 */
export function describeOnEachEngine(name: string, body: (engine: DatabaseEngine) => void): void {
  describeNeeding(postgres, name.replace("%s", "postgres"), () => body("postgres"));
  describe(name.replace("%s", "pglite"), () => body("pglite"));
}

/** `it` and `describe` for what only a server does; see {@link serverOnly}. */
export interface ServerOnly {
  readonly it: (name: string, fn: TestFunction, timeout?: number) => void;
  readonly describe: (name: string, body: () => void) => void;
}

/**
 * `it` and `describe` for tests of what only a server does (several sessions, pools of their
 * own), in a suite of `describeOnEachEngine`: registered in the PostgreSQL suite, and not at all
 * in the PGlite one, whose single session cannot play them. Decided when the file is collected,
 * so no test skips itself when it runs.
 */
export function serverOnly(engine: DatabaseEngine): ServerOnly {
  if (engine === "postgres") return { it: (name, fn, timeout) => it(name, fn, timeout), describe };
  return { it: () => {}, describe: () => {} };
}

/** The URL of a test database on a server, to open more pools on it; throws for PGlite. */
export function serverUrl(database: TestDatabase): string {
  if (database.connectionString === undefined)
    throw new Error(`no server URL: the database is ${database.engine}`);
  return database.connectionString;
}

/**
 * Opens one test database before the enclosing describe block's first test and closes it after
 * the last. Answers a getter, because the database exists only once the hook has run.
 */
export function useTestDatabase(
  engine: DatabaseEngine,
  options: OpenTestDatabaseOptions = {},
): () => TestDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await openTestDatabase(engine, options);
  });
  afterAll(async () => {
    await database?.close();
  });
  return () => {
    if (database === undefined) throw new Error("the test database is not open: did opening it fail?");
    return database;
  };
}
