import { type Kysely, type MigrationResult, Migrator } from "kysely";
import type { Database } from "./database.js";
import { MIGRATIONS } from "./migrations.js";

/** What {@link migrateToLatest} did. */
export interface MigrationSummary {
  /** The migrations applied by this call, in order; empty when the schema was up to date. */
  readonly applied: readonly string[];
  /** Every migration the schema now has, in order. */
  readonly all: readonly string[];
}

/** A migration failed; nothing of it remains (each runs in the migrator's transaction). */
export class MigrationError extends Error {
  override readonly name = "MigrationError";
  /** The migration that failed, when Kysely got as far as running one. */
  readonly migration: string | undefined;

  constructor(migration: string | undefined, cause: unknown) {
    const reason = reasonOf(cause);
    super(
      migration === undefined
        ? `database migration failed before any migration ran: ${reason}`
        : `database migration ${migration} failed: ${reason}`,
      { cause },
    );
    this.migration = migration;
  }
}

/**
 * Brings the schema to the latest migration and answers what it applied; running it again
 * applies nothing. Safe when several processes migrate the same database at once: Kysely's
 * PostgreSQL adapter (used by both the `pg` and the PGlite dialect) holds a session-level
 * advisory lock while it reads the applied migrations and runs the pending ones in one
 * transaction, so the others wait and then find nothing to do. The wait is subject to the
 * database's statement timeout, which this schema's migrations (milliseconds) stay far below.
 * Throws a {@link MigrationError} when a migration or the bookkeeping fails.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<MigrationSummary> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => ({ ...MIGRATIONS }) } });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results.find((result: MigrationResult) => result.status === "Error");
    throw new MigrationError(failed?.migrationName, error);
  }
  return {
    applied: results.filter((result) => result.status === "Success").map((result) => result.migrationName),
    all: Object.keys(MIGRATIONS).sort(),
  };
}

// Node's AggregateError for a host with several addresses has an empty message of its own.
function reasonOf(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  if (cause.message !== "") return cause.message;
  if (cause instanceof AggregateError) return cause.errors.map(reasonOf).join("; ");
  const code = (cause as { code?: unknown }).code;
  return typeof code === "string" ? code : cause.name;
}
