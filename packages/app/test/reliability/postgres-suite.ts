import { openTestDatabase, type TestDatabase } from "@posts/adapters-postgres/testing";
import { afterAll, beforeAll, describe } from "vitest";

/** The PostgreSQL server these suites need, or `undefined` when none is configured. */
export const DATABASE_URL: string | undefined = process.env.DATABASE_URL || undefined;

const SKIP_REASON = "skipped: set DATABASE_URL=postgres://… to run it";
let warned = false;

/**
 * A `describe` that needs a real PostgreSQL server: these suites put a TCP proxy in front of it
 * or spawn the service against it, which PGlite cannot stand in for. Without DATABASE_URL the
 * suite is reported as skipped, with the reason in its name and on stderr, except under CI=true,
 * where it runs and fails: a CI run without the server must not pass by skipping. With it (CI
 * sets it), it runs, and a server that does not answer fails it.
 */
export function describeOnPostgres(name: string, body: () => void): void {
  const skipped = DATABASE_URL === undefined && process.env.CI !== "true";
  if (skipped && !warned) {
    warned = true;
    console.warn(`[reliability] PostgreSQL suites ${SKIP_REASON}`);
  }
  describe.skipIf(skipped)(skipped ? `${name} (${SKIP_REASON})` : name, body);
}

/** A migrated database of this suite's own on the DATABASE_URL server, dropped after the suite. */
export interface SuiteDatabase extends TestDatabase {
  /** Its URL, for the service under test (possibly through a proxy). */
  readonly connectionString: string;
}

/** Creates the suite's database before its first test and drops it after its last. */
export function useSuiteDatabase(): () => SuiteDatabase {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await openTestDatabase("postgres");
    if (database.connectionString === undefined) {
      throw new Error(`expected a database on the DATABASE_URL server, got engine ${database.engine}`);
    }
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
