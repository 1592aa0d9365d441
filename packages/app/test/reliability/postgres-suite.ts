import { openTestDatabase, type TestDatabase } from "@posts/adapters-postgres/testing";
import { afterAll, beforeAll } from "vitest";

/** A migrated database of this suite's own on a PostgreSQL server, dropped after the suite. */
export interface SuiteDatabase extends TestDatabase {
  /** Its URL, for the service under test (possibly through a proxy). */
  readonly connectionString: string;
}

/**
 * Creates the suite's database before its first test and drops it after its last. These suites
 * put a TCP proxy in front of the server or spawn the service against it, which PGlite cannot
 * stand in for: declare them with `describeNeeding(await postgresForTests(), …)`.
 */
export function useSuiteDatabase(): () => SuiteDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await openTestDatabase("postgres");
    if (database.connectionString === undefined) throw new Error(`expected a server, got ${database.engine}`);
  });
  afterAll(async () => {
    await database?.close();
  });
  return () => {
    if (database?.connectionString === undefined) throw new Error("the suite database is not open");
    return database as SuiteDatabase;
  };
}

/** Host and port of a `postgres://` URL, as a TCP proxy targets them. */
export function serverOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname || "127.0.0.1", port: Number(parsed.port || 5432) };
}
