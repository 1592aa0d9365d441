import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { ListenSession } from "../notifications/listen-session.js";
import { postgresNotifications } from "../notifications/postgres-notifications.js";
import type { Database } from "../schema/database.js";
import { withTransactionMigrationLock } from "../schema/migration-lock.js";
import { closeOnce } from "./close-once.js";
import type { DatabaseHandle } from "./database-handle.js";
import { DIRECT_STATEMENTS } from "./direct-statements.js";
import { poolForKysely, poolStats } from "./pool-for-kysely.js";
import { positionRunner } from "./standby-reads/position-runner.js";
import { positionSession } from "./standby-reads/position-session.js";
import { createStandbyReads, standbyLabel } from "./standby-reads/standby-reads.js";
import { PREPARED_STATEMENT_NAMES } from "./statement-names.js";
import { TYPE_PARSERS } from "./type-parsers.js";

/** The name the listening session prepares the primary-position statement under (no `posts_N` of `StatementNames`). */
const POSITION_STATEMENT = "posts_primary_position";

/**
 * The timeline the server writes WAL on, as eight hexadecimal digits, or null on a standby.
 * Each promotion starts a new timeline, one above the highest the cluster had: a higher one
 * than before means another server has become the primary.
 */
const TIMELINE_SQL =
  "SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END AS timeline";

/** How to reach a PostgreSQL server and how patient to be with it. */
export interface PostgresDatabaseOptions {
  /** `postgres://user:password@host:port/database?…`, as `pg` reads it. */
  readonly connectionString: string;
  /**
   * Where the one connection that `LISTEN`s for notifications goes: the same database, on a
   * session of its own, which also asks the primary's WAL position for the standby reads (as a
   * prepared statement). Default `connectionString`. Give the server itself (or a pooler's
   * session-mode pool) when `connectionString` is a pooler in transaction mode, which hands each
   * statement to whichever server connection is free, so a `LISTEN` hears nothing.
   */
  readonly listenConnectionString?: string;
  /** Most connections open at once. Absent: `pg`'s own default. */
  readonly poolSize?: number;
  /**
   * Longest wait for a connection, whether a new one is being opened or every one is busy;
   * then the query fails with an error `isDatabaseUnavailable` recognizes. Absent: `pg`'s own
   * default, which waits as long as it takes; a service should set it.
   */
  readonly connectionTimeoutMillis?: number;
  /**
   * The server cancels a statement running longer (SQLSTATE 57014). 0 disables. Absent: the
   * server's own `statement_timeout`.
   */
  readonly statementTimeoutMillis?: number;
  /**
   * The client gives up on an answer after this long, for a server that has stopped answering
   * without closing the connection; that connection is then closed, not reused. 0 disables.
   * Absent: the statement timeout plus one second (disabled when there is none).
   */
  readonly queryTimeoutMillis?: number;
  /** An idle connection is closed after this long. Default 10000 ms. */
  readonly idleTimeoutMillis?: number;
  /**
   * Run the statements the repositories compiled once as named prepared statements, parsed once
   * per connection. Default true. False sends every statement unnamed, for a
   * connection pooler that hands a client's statements to different server connections
   * (PgBouncer in transaction mode before 1.21, or with `max_prepared_statements = 0`).
   */
  readonly namedStatements?: boolean;
  /**
   * URLs of hot standbys of this server. Given, the handle's `readStatements` answers the reads
   * a standby may answer from one of them, never older than what the primary had acknowledged
   * when the read was made (see `createStandbyReads`). Default none.
   */
  readonly readConnectionStrings?: readonly string[];
  /**
   * Longest a read waits for a standby to replay what the primary had acknowledged, before the
   * primary answers it. Required with `readConnectionStrings` (it throws without).
   */
  readonly readMaxWaitMillis?: number;
  /**
   * How long a statement that surely changed nothing is sent again after its first failure: no
   * connection could be opened to send it on, a server that takes no writes refused it, or the
   * server's shutdown ended it before it could commit (see `poolForKysely`). Behind a failover
   * proxy, a little longer than a planned switchover leaves the write endpoint without a primary
   * (a few seconds) makes one cost no request, but rarely a write whose commit cannot be told.
   * Default 0: never, so that an outage answers at once.
   */
  readonly retryWithinMillis?: number;
  /** Shown in `pg_stat_activity`. Default `posts-service`. */
  readonly applicationName?: string;
  /**
   * Told about the first error of a pooled connection, idle or checked out: the server
   * terminating it, the network cutting it. The pool discards such a connection by itself, and
   * a statement it cuts short fails with an error `isDatabaseUnavailable` recognizes; this is
   * only for the logs. (The name dates from when only idle connections were reported.)
   */
  readonly onIdleClientError?: (error: Error) => void;
}

/**
 * Opens a pool of connections to a PostgreSQL server; connections are made on first use, so
 * this does not fail when the server is down. Every connection reads int8 and timestamptz with
 * this adapter's parsers (set on this pool only, never on `pg`'s global defaults). Given
 * `readConnectionStrings`, also a pool per standby, with the same settings, behind the handle's
 * `readStatements`.
 */
export function createPostgresDatabase(options: PostgresDatabaseOptions): DatabaseHandle {
  const statementTimeout = options.statementTimeoutMillis;
  const queryTimeout =
    options.queryTimeoutMillis ??
    (statementTimeout !== undefined && statementTimeout > 0 ? statementTimeout + 1000 : 0);
  const readUrls = options.readConnectionStrings ?? [];
  if (readUrls.length > 0 && options.readMaxWaitMillis === undefined) {
    throw new TypeError("createPostgresDatabase: readConnectionStrings needs readMaxWaitMillis");
  }

  const primary = {
    changes: 0,
    timeline: undefined as number | undefined,
    offPrimary: new WeakSet<pg.ClientBase>(),
  };
  // Asked once per connection, before the pool hands it out (pg-pool's hook, awaited): queued
  // ahead of the connection's first statement instead, it would save a round trip on a
  // connection that costs several to open, but pg deprecates a query sent while another is
  // queued (a warning on stderr, and an error in pg 9). A failure here fails the connect, as a
  // server that cannot answer it could not have run the statement either.
  const pool = openPool(options.connectionString, options, statementTimeout, async (client) => {
    const result = await client.query<{ timeline: string | null }>(TIMELINE_SQL);
    const text = result.rows[0]?.timeline;
    if (text === null || text === undefined) {
      primary.offPrimary.add(client);
      return;
    }
    const timeline = Number.parseInt(text, 16);
    if (primary.timeline !== undefined && timeline > primary.timeline) primary.changes += 1;
    if (primary.timeline === undefined || timeline > primary.timeline) primary.timeline = timeline;
  });
  const names = options.namedStatements === false ? undefined : PREPARED_STATEMENT_NAMES;
  const { forKysely, run, resent, resolved } = poolForKysely(
    pool,
    queryTimeout,
    names,
    primary.offPrimary,
    options.retryWithinMillis ?? 0,
  );
  const db = new Kysely<Database>({
    dialect: withTransactionMigrationLock(new PostgresDialect({ pool: forKysely })),
  });
  DIRECT_STATEMENTS.set(db, run);
  // Its connection opens on the first LISTEN only: a handle nobody listens on costs nothing more.
  const listening = new ListenSession({
    connectionString: options.listenConnectionString ?? options.connectionString,
    applicationName: `${options.applicationName ?? "posts-service"} (listen)`,
    ...(options.onIdleClientError === undefined ? {} : { onError: options.onIdleClientError }),
  });
  const notifications = postgresNotifications(listening);
  const handle: DatabaseHandle = {
    db,
    engine: "postgres",
    close: closeOnce({
      destroy: async () => {
        await listening.close();
        await db.destroy();
      },
    }),
    poolStats: () => poolStats(pool),
    primaryStats: () => ({
      changes: primary.changes,
      timeline: primary.timeline,
      resent: resent(),
      resolved: resolved(),
    }),
    notifications,
  };
  if (readUrls.length === 0 || options.readMaxWaitMillis === undefined) return handle;

  const onSession = positionSession(listening, queryTimeout);
  const reads = createStandbyReads({
    primary: run,
    // The primary's position is asked for every batch of reads, so its cost on the primary is
    // what reads on standbys still cost it. On the listening session, prepared once and always
    // answered by the same server process, it cost the primary 20–40% less per read (two
    // interleaved runs) than through a pooler in transaction mode, which parses it each time
    // on whichever process is free (bench/RESULTS.md#standbys). The pool asks while that
    // session is not open, and when it is lost.
    position: positionRunner((sql) => onSession(POSITION_STATEMENT, sql), run),
    standbys: readUrls.map((url) => ({
      label: standbyLabel(url),
      pool: openPool(url, options, statementTimeout),
    })),
    maxWaitMs: options.readMaxWaitMillis,
    readTimeoutMillis: queryTimeout,
    names,
  });
  const closePrimary = handle.close;
  let closing: Promise<void> | undefined;
  return {
    ...handle,
    close: () => {
      closing ??= Promise.all([reads.close(), closePrimary()]).then(() => undefined);
      return closing;
    },
    readStatements: reads.run,
    standbyStats: reads.stats,
  };
}

/**
 * A `pg` pool for `connectionString` with the settings of `options`: int8 and timestamptz read
 * with this adapter's parsers (on this pool only, never on `pg`'s global defaults), and every
 * connection's errors reported once to `onIdleClientError`. `onConnect`, when given, runs on
 * each new connection before the pool hands it out; its failure fails the connect.
 */
function openPool(
  connectionString: string,
  options: PostgresDatabaseOptions,
  statementTimeout: number | undefined,
  onConnect?: (client: pg.ClientBase) => Promise<void>,
): pg.Pool {
  const types = new pg.TypeOverrides();
  for (const [oid, parse] of Object.entries(TYPE_PARSERS)) types.setTypeParser(Number(oid), parse);

  const pool = new pg.Pool({
    connectionString,
    // Absent options stay absent, so that pg's own defaults apply.
    ...(options.poolSize === undefined ? {} : { max: options.poolSize }),
    ...(options.connectionTimeoutMillis === undefined
      ? {}
      : { connectionTimeoutMillis: options.connectionTimeoutMillis }),
    idleTimeoutMillis: options.idleTimeoutMillis ?? 10_000,
    // pg sends statement_timeout at connect time; 0 means none, as in PostgreSQL.
    ...(statementTimeout === undefined ? {} : { statement_timeout: statementTimeout }),
    application_name: options.applicationName ?? "posts-service",
    // Lets the kernel notice a peer that vanished without closing the connection.
    keepAlive: true,
    types,
    ...(onConnect === undefined ? {} : { onConnect }),
  });
  // pg emits "error" on a client whose connection fails, and pg-pool listens only while the
  // client is idle: on a checked-out one the event would have no listener, and Node would throw
  // it out of the event loop and crash the process. So every client gets its own listener for
  // life, which reports its first error (a failing connection often emits a second, e.g. 57P01
  // then "Connection terminated unexpectedly").
  pool.on("connect", (client) => {
    let reported = false;
    client.on("error", (error) => {
      if (reported) return;
      reported = true;
      options.onIdleClientError?.(error);
    });
  });
  // pg-pool re-emits here the error of an idle client it has discarded: already reported above.
  pool.on("error", () => {});

  return pool;
}
