import { mkdir } from "node:fs/promises";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { Kysely } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import type { Database } from "../schema/database.js";
import { withTransactionMigrationLock } from "../schema/migration-lock.js";
import { closeOnce } from "./close-once.js";
import type { DatabaseHandle } from "./database-handle.js";
import { TYPE_PARSERS } from "./type-parsers.js";

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
}

/**
 * Opens PostgreSQL embedded in this process (PGlite): a single connection, which the dialect
 * hands to one caller at a time. Reads int8 and timestamptz with this adapter's parsers, and
 * loads the extensions the schema uses (pg_trgm).
 * An empty directory or memory costs an initdb of a few seconds; an existing directory opens
 * in about half a second.
 */
export async function createPgliteDatabase(options: PgliteDatabaseOptions = {}): Promise<DatabaseHandle> {
  // PGlite creates the last directory of the path only.
  if (options.dataDir !== undefined) await mkdir(options.dataDir, { recursive: true });
  // The options object must be the first argument: PGlite.create(undefined, options) ignores it.
  const pglite = await PGlite.create({
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.loadDataDir === undefined ? {} : { loadDataDir: options.loadDataDir }),
    parsers: { ...TYPE_PARSERS },
    // The schema's search indexes need it (migration 0004); PGlite loads only what it is given.
    extensions: { pg_trgm },
  });
  // Destroying the Kysely instance closes PGlite (kysely-pglite-dialect's driver does it).
  const db = new Kysely<Database>({ dialect: withTransactionMigrationLock(new PGliteDialect(pglite)) });
  return {
    db,
    engine: "pglite",
    close: closeOnce(db),
    // In process: PGlite hands each notification to its listeners once its transaction commits.
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
