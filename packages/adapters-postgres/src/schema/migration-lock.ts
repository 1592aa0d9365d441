import { type Dialect, type Kysely, PostgresAdapter, sql } from "kysely";

/**
 * The advisory lock key the migrations serialize on: "posts.mi" in ASCII, a number no other
 * role of the service uses (the event relay's is "posts.ev").
 */
export const MIGRATION_LOCK_KEY = 0x706f7374732e6d69n;

/**
 * Kysely's PostgreSQL adapter, whose migration lock hooks do nothing: the migrations hold
 * {@link MIGRATION_LOCK_KEY} as a transaction-level lock instead, taken by
 * {@link inMigrationTransaction}. Kysely's own hooks take a session-level advisory lock before
 * its transaction and release it after, three round trips that a pooler in transaction mode
 * (PgBouncer) may send to three different server connections: the lock then stays held by a
 * pooled connection nobody owns, and the next migration waits for it (an hour, Kysely's
 * lock_timeout). A transaction-level lock lives and ends with the one transaction, which such a
 * pooler keeps on one server connection.
 */
export class TransactionLockPostgresAdapter extends PostgresAdapter {
  override async acquireMigrationLock(): Promise<void> {}

  override async releaseMigrationLock(): Promise<void> {}
}

/**
 * `dialect` with {@link TransactionLockPostgresAdapter} as its adapter; everything else (driver,
 * query compiler, introspector) is `dialect`'s own. For a PostgreSQL dialect (`pg` or PGlite).
 */
export function withTransactionMigrationLock(dialect: Dialect): Dialect {
  return {
    createDriver: () => dialect.createDriver(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => new TransactionLockPostgresAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

/**
 * Runs `work` on one connection inside one transaction that first takes the migration lock
 * (`pg_advisory_xact_lock`), and commits when `work` answers `commit: true`, rolls back
 * otherwise (or when it throws). Concurrent callers, in any process, wait for the lock and then
 * see what the holder committed. Kysely's `Migrator` must run inside with `disableTransactions`
 * (the transaction is this one) on a database whose adapter is
 * {@link TransactionLockPostgresAdapter}, which this checks: Kysely's stock adapter would take
 * its session-level lock inside this transaction and, if a migration failed, could not release
 * it in the aborted transaction, leaving it held by the connection.
 */
export async function inMigrationTransaction<T>(
  // biome-ignore lint/suspicious/noExplicitAny: migrations see no particular schema.
  db: Kysely<any>,
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  work: (session: Kysely<any>) => Promise<{ readonly commit: boolean; readonly value: T }>,
): Promise<T> {
  if (!(db.getExecutor().adapter instanceof TransactionLockPostgresAdapter)) {
    throw new Error(
      "migrations need a database opened by createPostgresDatabase or createPgliteDatabase (their migration lock lasts one transaction)",
    );
  }
  return db.connection().execute(async (session) => {
    // Raw BEGIN rather than db.transaction(): Kysely's Migrator cannot run on a Transaction
    // (it asks it for a connection), but can on this connection-bound instance.
    await sql`BEGIN`.execute(session);
    let outcome: { readonly commit: boolean; readonly value: T };
    try {
      await sql`SELECT pg_advisory_xact_lock(${sql.lit(MIGRATION_LOCK_KEY)})`.execute(session);
      outcome = await work(session);
    } catch (error) {
      await sql`ROLLBACK`.execute(session).catch(() => {});
      throw error;
    }
    await sql.raw(outcome.commit ? "COMMIT" : "ROLLBACK").execute(session);
    return outcome.value;
  });
}
