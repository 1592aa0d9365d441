import { join } from "node:path";
import type { DatabaseHandle } from "@posts/adapters-postgres";
import { createPgliteDatabase, createPostgresDatabase } from "@posts/adapters-postgres";
import type { Logger } from "pino";
import { type AppConfig, EMBEDDED_DATABASE_DIRECTORY } from "./config.js";

/**
 * Opens the configured database without waiting for it to answer: with `DATABASE_URL`, a `pg`
 * pool that connects on first use; without it, PGlite in `DATA_DIR/pglite`, which opens (and on
 * first use initializes) its directory. Does not migrate.
 */
export async function openDatabase(config: AppConfig, logger: Logger): Promise<DatabaseHandle> {
  if (config.DATABASE_URL === undefined) {
    const directory = join(config.DATA_DIR, EMBEDDED_DATABASE_DIRECTORY);
    logger.info({ directory }, "opening the embedded database (PGlite)");
    return createPgliteDatabase({
      dataDir: directory,
      // Every statement answers 503 from then on; this says why, once.
      onFailure: (error) => logger.error({ err: error }, "the embedded database's thread failed"),
    });
  }
  return createPostgresDatabase({
    connectionString: config.DATABASE_URL,
    ...(config.DATABASE_LISTEN_URL === undefined
      ? {}
      : { listenConnectionString: config.DATABASE_LISTEN_URL }),
    poolSize: config.DB_POOL_SIZE,
    connectionTimeoutMillis: config.DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMillis: config.DB_STATEMENT_TIMEOUT_MS,
    retryWithinMillis: config.DB_RETRY_WITHIN_MS,
    namedStatements: config.DB_NAMED_STATEMENTS,
    readConnectionStrings: config.DATABASE_READ_URLS,
    readMaxWaitMillis: config.READ_REPLICA_MAX_WAIT_MS,
    // The pool drops such a connection by itself; this only makes a server restart visible.
    onIdleClientError: (error) =>
      logger.warn({ err: error }, "a database connection failed; the pool replaces it"),
  });
}

/**
 * The connection the migrations run on, or `undefined` to run them on the service's own database
 * handle (the embedded PGlite, which one process opens once). On a server: a pool of one
 * connection without the statement timeout or its read timer. Those bound a request's statement;
 * a migration's may build an index over every post, which on a large table takes minutes, and
 * cut short it would only be rolled back and started again at the next start. Close it once the
 * migrations are done.
 */
export function openMigrationDatabase(config: AppConfig): DatabaseHandle | undefined {
  if (config.DATABASE_URL === undefined) return undefined;
  return createPostgresDatabase({
    connectionString: config.DATABASE_URL,
    poolSize: 1,
    connectionTimeoutMillis: config.DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMillis: 0,
  });
}
