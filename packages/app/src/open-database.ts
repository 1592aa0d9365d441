import type { DatabaseHandle } from "@posts/adapters-postgres";
import { createPgliteDatabase, createPostgresDatabase } from "@posts/adapters-postgres";
import type { Logger } from "pino";
import type { DatabaseConfig } from "./config.js";

/**
 * Opens the configured database without waiting for it to answer: a `pg` pool connects on
 * first use, PGlite opens (and on first use initializes) its directory. Does not migrate.
 */
export async function openDatabase(config: DatabaseConfig, logger: Logger): Promise<DatabaseHandle> {
  if (config.kind === "embedded") {
    logger.info({ directory: config.directory }, "opening the embedded database (PGlite)");
    return createPgliteDatabase({ dataDir: config.directory });
  }
  return createPostgresDatabase({
    connectionString: config.url,
    listenConnectionString: config.listenUrl,
    poolSize: config.poolSize,
    connectionTimeoutMillis: config.connectTimeoutMs,
    statementTimeoutMillis: config.statementTimeoutMs,
    namedStatements: config.namedStatements,
    readConnectionStrings: config.readUrls,
    readMaxWaitMillis: config.readMaxWaitMs,
    // The pool drops such a connection by itself; this only makes a server restart visible.
    onIdleClientError: (error) =>
      logger.warn({ err: error }, "a database connection failed; the pool replaces it"),
  });
}
