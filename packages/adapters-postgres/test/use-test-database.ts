import type { DatabaseEngine } from "@posts/adapters-postgres";
import {
  type OpenTestDatabaseOptions,
  openTestDatabase,
  type TestDatabase,
} from "@posts/adapters-postgres/testing";
import { afterAll, beforeAll, describe } from "vitest";

/** Both engines: every adapter test runs on each. */
export const ENGINES: readonly DatabaseEngine[] = ["postgres", "pglite"];

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

/**
 * Whether the suites that need sessions of a PostgreSQL server (PGlite has one session only)
 * are skipped: without DATABASE_URL, except under CI=true, where a missing server must fail
 * them rather than pass by skipping.
 */
const NO_SERVER = process.env.DATABASE_URL === undefined && process.env.CI !== "true";

/**
 * A `describe` for a suite that needs a PostgreSQL server: skipped without DATABASE_URL outside
 * CI, with the reason in its name, so that `pnpm test` on a machine without a server passes and
 * says what it did not run.
 */
export function describeOnServer(name: string, body: () => void): void {
  describe.skipIf(NO_SERVER)(NO_SERVER ? `${name} (skipped: set DATABASE_URL)` : name, body);
}
