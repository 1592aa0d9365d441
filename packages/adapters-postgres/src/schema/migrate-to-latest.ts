import { type Kysely, type MigrationResult, Migrator } from "kysely";
import type { Database } from "./database.js";
import { inMigrationTransaction } from "./migration-lock.js";
import { MIGRATIONS } from "./migrations.js";

/** What {@link migrateToLatest} did. */
export interface MigrationSummary {
  /** The migrations applied by this call, in order; empty when the schema was up to date. */
  readonly applied: readonly string[];
  /** Every migration the schema now has, in order. */
  readonly all: readonly string[];
}

/** A migration failed; nothing of it remains (a call's migrations run in one transaction). */
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
 * applies nothing. Everything (Kysely's bookkeeping tables, each pending migration) runs in one
 * transaction that first takes a transaction-level advisory lock (see `inMigrationTransaction`),
 * so several processes migrating the same database at once apply each migration once: the
 * others wait, then find nothing to do. The same holds through a pooler in transaction mode
 * (PgBouncer), where a session-level lock would stay behind on a pooled server connection. A
 * migration may build an index over every post (`0013_post_word_pairs`: about a minute a million
 * posts, the posts' writes waiting meanwhile), so give `db` no statement timeout (the service
 * runs them on a connection of its own without one); the wait for another process's migrations
 * lasts as long as they do. `db` must come from `createPostgresDatabase` or
 * `createPgliteDatabase`. Throws a {@link MigrationError} when a migration or the bookkeeping
 * fails; nothing of that call's work then remains.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<MigrationSummary> {
  const { error, results = [] } = await inMigrationTransaction(db, async (session) => {
    const migrator = new Migrator({
      db: session,
      provider: { getMigrations: async () => ({ ...MIGRATIONS }) },
      disableTransactions: true,
    });
    const outcome = await migrator.migrateToLatest();
    return { commit: outcome.error === undefined, value: outcome };
  }).catch((error: unknown) => ({ error, results: undefined }));
  if (error !== undefined) {
    const failed = results?.find((result: MigrationResult) => result.status === "Error");
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
