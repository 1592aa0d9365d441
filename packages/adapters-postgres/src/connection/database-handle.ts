import type { Kysely } from "kysely";
import type { Notifications } from "../notifications/notifications.js";
import type { Database } from "../schema/database.js";
import type { RunStatement } from "./direct-statements.js";
import type { PoolStats, Resends, Resolutions } from "./pool-for-kysely.js";
import type { StandbyReadStats } from "./standby-reads/standby-reads.js";

/** Which PostgreSQL a handle talks to: a server through `pg`, or PGlite in this process. */
export type DatabaseEngine = "postgres" | "pglite";

/** What the pool has seen of the server behind its URL (GET /metrics). */
export interface PrimaryStats {
  /**
   * Times a new connection found a primary on a higher timeline than every connection before
   * it: promotions of another server, seen by this pool. The first connection sets where it
   * starts.
   */
  readonly changes: number;
  /** The highest timeline a connection found, or undefined before the first. */
  readonly timeline: number | undefined;
  /**
   * Statements sent again after a failure that proved they changed nothing (`retryWithinMillis`),
   * by why: no connection could be opened, a server that takes no writes refused them, or the
   * server's shutdown cut them short before they could commit (or they were never sent).
   */
  readonly resent: Resends;
  /**
   * Writes that may have committed when their connection failed, resolved by asking the primary
   * (`retryWithinMillis`), by outcome: committed there (answered), never committed there (sent
   * again), or not told within the window (failed).
   */
  readonly resolved: Resolutions;
}

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
  /**
   * Present when the server has hot standbys to read from (`readConnectionStrings`): runs a
   * read that a standby may answer (a post by id, a page, a search, a login's user lookup),
   * reflecting at least every commit acknowledged before the call. Absent: such reads run on
   * the primary like every other statement.
   */
  readonly readStatements?: RunStatement;
  /** With `readStatements`: each standby's state, lag and reads, and the reads the primary answered instead. */
  readonly standbyStats?: () => StandbyReadStats;
  /** The changes of primary the pool has seen behind its URL; absent for PGlite. */
  readonly primaryStats?: () => PrimaryStats;
  /** LISTEN/NOTIFY on this database; absent when the handle cannot listen. */
  readonly notifications?: Notifications;
}
