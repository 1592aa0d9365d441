import type { DatabaseHandle, MigrationSummary } from "@posts/adapters-postgres";
import { isDatabaseUnavailable, migrateToLatest } from "@posts/adapters-postgres";
import type { Logger } from "pino";
import { retryWithBackoff } from "./retry-with-backoff.js";

/** Options of {@link prepareDatabase}. */
export interface PrepareDatabaseOptions {
  /** Run the migrations; otherwise only check that the database answers. */
  readonly migrate: boolean;
  /**
   * Where the migrations run (see `openMigrationDatabase`): the same database through a
   * connection of their own. Absent: on the database itself.
   */
  readonly migrateOn?: DatabaseHandle;
  /** How long an unreachable database is waited for, in milliseconds. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** Aborts the waiting, e.g. on SIGTERM during start-up. */
  readonly signal?: AbortSignal;
}

/**
 * Waits until the database answers, retrying with backoff while it is unreachable (a server
 * still starting, a network not up yet) for at most `timeoutMs`, then migrates it to the latest
 * schema when asked. Answers what the migration applied. Rejects with an error whose message a
 * person can act on when the database stays unreachable, refuses the connection for another
 * reason (a wrong password, a missing database: not retried), or a migration fails.
 */
export async function prepareDatabase(
  database: DatabaseHandle,
  options: PrepareDatabaseOptions,
): Promise<MigrationSummary | undefined> {
  const { logger } = options;
  // Kept across attempts: a retry of the check below does not migrate again (it would find
  // nothing to do, and the summary would say so).
  let migrated: MigrationSummary | undefined;
  try {
    return await retryWithBackoff(
      async () => {
        if (options.migrate && migrated === undefined) {
          migrated = await migrateToLatest((options.migrateOn ?? database).db);
        }
        // The service's own pool answers too (migrated through another, it has not connected yet):
        // its first connection is made now, not by the first request.
        if (!options.migrate || options.migrateOn !== undefined) {
          await database.db.selectNoFrom((eb) => eb.lit(1).as("up")).execute();
        }
        return migrated;
      },
      {
        timeoutMs: options.timeoutMs,
        isRetryable: isDatabaseUnavailable,
        onRetry: ({ error, attempt, delayMs }) =>
          logger.warn(
            { err: error, attempt, delayMs },
            `the database does not answer yet; retrying in ${delayMs} ms`,
          ),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      },
    );
  } catch (error) {
    if (options.signal?.aborted) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    if (isDatabaseUnavailable(error)) {
      throw new Error(
        `the database did not answer within ${options.timeoutMs} ms (DB_STARTUP_TIMEOUT_MS): ${reason}`,
        { cause: error },
      );
    }
    throw new Error(`the database could not be prepared: ${reason}`, { cause: error });
  }
}
