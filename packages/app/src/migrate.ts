import type { Logger } from "pino";
import type { AppConfig } from "./config.js";
import { openDatabase, openMigrationDatabase } from "./open-database.js";
import { prepareDatabase } from "./prepare-database.js";

/**
 * The `migrate` command: brings the configured database to the latest schema (waiting up to
 * DB_STARTUP_TIMEOUT_MS for it to answer) and answers the exit code, 0 when the schema is up to
 * date, whether or not this run changed it, and 1 with a logged reason otherwise. Safe to run
 * while instances are starting: the migrations take a database lock.
 */
export async function migrate(config: AppConfig, logger: Logger): Promise<number> {
  let database: Awaited<ReturnType<typeof openDatabase>> | undefined;
  const migrations = openMigrationDatabase(config);
  try {
    database = await openDatabase(config, logger);
    const summary = await prepareDatabase(database, {
      migrate: true,
      timeoutMs: config.DB_STARTUP_TIMEOUT_MS,
      logger,
      ...(migrations === undefined ? {} : { migrateOn: migrations }),
    });
    const applied = summary?.applied ?? [];
    logger.info(
      { applied, all: summary?.all ?? [] },
      applied.length === 0
        ? "database schema is already up to date"
        : `applied ${applied.length} database migration(s)`,
    );
    return 0;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    logger.fatal({ err: error }, `migration failed: ${reason}`);
    return 1;
  } finally {
    await migrations?.close();
    await database?.close();
  }
}
