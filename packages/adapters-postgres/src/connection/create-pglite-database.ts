import { mkdir } from "node:fs/promises";
import type { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import type { Database } from "../schema/database.js";
import { withTransactionMigrationLock } from "../schema/migration-lock.js";
import { closeOnce } from "./close-once.js";
import type { DatabaseHandle } from "./database-handle.js";
import { PgliteInWorker } from "./pglite-in-worker.js";

/** Where an embedded database keeps its data. */
export interface PgliteDatabaseOptions {
  /**
   * Directory of the database files, created when missing; one process at a time may open it.
   * In memory when absent: nothing survives `close()`.
   */
  readonly dataDir?: string;
  /**
   * Starts from a copy of another database (a tarball from PGlite's `dumpDataDir`) instead of
   * running initdb, which takes seconds. Used by the test harness.
   */
  readonly loadDataDir?: Blob;
  /**
   * Told once when the database's worker thread fails or ends unasked (for the log); every
   * statement from then on fails as "database unavailable".
   */
  readonly onFailure?: (error: Error) => void;
}

/**
 * Opens PostgreSQL embedded in this process (PGlite), in a worker thread of its own: PGlite runs
 * each statement synchronously, and a statement over a large post would otherwise hold the
 * event loop that answers requests for seconds. A single connection, which the dialect hands
 * to one caller at a time. Reads int8 and timestamptz with this adapter's parsers, and loads
 * the extensions the schema uses (pg_trgm).
 * An empty directory or memory costs an initdb of a few seconds; an existing directory opens
 * in about half a second. `close()` writes everything to `dataDir` and ends the thread.
 */
export async function createPgliteDatabase(options: PgliteDatabaseOptions = {}): Promise<DatabaseHandle> {
  // PGlite creates the last directory of the path only.
  if (options.dataDir !== undefined) await mkdir(options.dataDir, { recursive: true });
  const pglite = await PgliteInWorker.start(options);
  // The dialect's driver calls only `query` and `close` (kysely-pglite-dialect 1.3.1), which
  // PgliteInWorker has with PGlite's signatures; destroying the Kysely instance closes it.
  const db = new Kysely<Database>({
    dialect: withTransactionMigrationLock(
      new PGliteDialect(pglite as Pick<PGlite, "query" | "close"> as PGlite),
    ),
  });
  return {
    db,
    engine: "pglite",
    close: closeOnce(db),
    // PGlite hands each notification to its listeners once its transaction commits.
    notifications: {
      async listen(channel, listener) {
        const unlisten = await pglite.listen(channel, (payload) => listener(payload));
        return async () => {
          if (!pglite.closed) await unlisten();
        };
      },
    },
  };
}
