import type { Kysely } from "kysely";
import type { Database } from "../schema/database.js";
import type { Notifications } from "./notifications.js";
import type { PoolStats } from "./pool-for-kysely.js";

/** Which PostgreSQL a handle talks to: a server through `pg`, or PGlite in this process. */
export type DatabaseEngine = "postgres" | "pglite";

/** An open database: the query builder for the repositories, and how to let it go. */
export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly engine: DatabaseEngine;
  /**
   * Closes the pool (waiting for checked-out connections to come back) or the embedded
   * database. Idempotent; the handle cannot be used afterwards.
   */
  close(): Promise<void>;
  /** How the connection pool is used right now; absent for PGlite, which has one connection and no pool. */
  readonly poolStats?: () => PoolStats;
  /** LISTEN/NOTIFY on this database; absent when the handle cannot listen. */
  readonly notifications?: Notifications;
}
