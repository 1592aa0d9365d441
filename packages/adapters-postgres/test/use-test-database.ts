import type { DatabaseEngine } from "@posts/adapters-postgres";
import {
  type OpenTestDatabaseOptions,
  openTestDatabase,
  type TestDatabase,
} from "@posts/adapters-postgres/testing";
import { afterAll, beforeAll } from "vitest";

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
