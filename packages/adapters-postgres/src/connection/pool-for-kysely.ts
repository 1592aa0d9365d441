import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from "kysely";
import pg from "pg";
import type { RunStatement } from "./direct-statements.js";
import { isDatabaseUnavailable } from "./is-database-unavailable.js";
import { sqlStateOf } from "./sql-state.js";
import type { StatementNames } from "./statement-names.js";

/** How many connections a pool has and how they are used, read at the moment of asking. */
export interface PoolStats {
  /** Most connections the pool opens. */
  readonly max: number;
  /** Connections open (idle or checked out), including ones still connecting. */
  readonly total: number;
  /** Open connections nobody is using. */
  readonly idle: number;
  /** Callers waiting for a connection because every one is checked out. */
  readonly waiting: number;
}

/** The message {@link isDatabaseUnavailable} knows `pg`'s own read timeout by, which this adapter's timers use too. */
export const READ_TIMEOUT = "Query read timeout";

/**
 * The message of the error a statement fails with when PostgreSQL cancelled its wait for the
 * synchronous standby: {@link isDatabaseUnavailable} knows it.
 */
export const SYNC_COMMIT_UNCONFIRMED = "Commit not confirmed by a synchronous standby";

/**
 * The WARNING PostgreSQL sends, then a success, when the wait of a commit for its synchronous
 * standby is cancelled (pg_cancel_backend, or a terminated session): "canceling wait for
 * synchronous replication due to user request", "canceling the wait for synchronous replication
 * and terminating connection …". The commit is then local only and may be lost in a failover.
 * Matched on the text, as the first has no SQLSTATE of its own (01000, any warning); the
 * server's lc_messages must therefore be English, as it is by default.
 */
const SYNC_WAIT_CANCELLED = /wait for synchronous replication/;

/**
 * "cached plan must not change result type": a named statement whose result columns a schema
 * change altered (ALTER COLUMN ... TYPE, or a `*` that a new column widens). PostgreSQL replans
 * such a statement by itself for any other change, but never changes the result type of one
 * that is already prepared.
 */
const SQLSTATE_STALE_PLAN = "0A000";

/**
 * read_only_sql_transaction: a write on a server that is no longer (or not yet) the primary,
 * reached through a write endpoint that still routes to it during a failover.
 */
const SQLSTATE_READ_ONLY = "25006";

/** What `pg` answers a statement with, through its callback. */
type Answer = (error: Error | null, result: pg.QueryResult) => void;

/** How a statement ends: an error, or (without one) its result. */
type Done = (error: Error | null, result?: pg.QueryResult) => void;

/**
 * Hands `pool` to Kysely with each statement sent through `pg`'s callback form and bounded by
 * this adapter's own read timer, instead of `pg`'s promise form and its `query_timeout`.
 *
 * Why: under concurrent load either of those two keeps much of every young-generation
 * collection alive and promotes it, which the RSS pays for; with the callback form and a plain
 * timer almost nothing survives, as with `pool.query` in the baseline server. Same statements, same
 * results, same errors.
 *
 * A statement with no answer after `readTimeoutMillis` (a server or network that stopped
 * answering without closing the connection) fails with "Query read timeout", and its
 * connection is destroyed when released: it may still be waiting for that answer, and a
 * statement queued behind it would wait too. 0 means no read timeout. Cursors (Kysely's
 * `stream()`) are not supported; this adapter does not use them.
 *
 * A statement during which the server reports a cancelled wait for its synchronous standby
 * (a commit, explicit or of a statement run as a transaction of its own) fails with
 * {@link SYNC_COMMIT_UNCONFIRMED} although the server answered success: that commit may not
 * survive a failover, so it is never acknowledged as one.
 *
 * A connection on which a write failed with 25006 (read_only_sql_transaction) is on a server
 * that takes no writes, a demoted primary or a standby, and stays there: it is destroyed when
 * released, so that the next connection is made afresh through the write endpoint, which then
 * names the new primary.
 *
 * `offPrimary` names the connections found on a server that takes no writes when they opened
 * (`createPostgresDatabase` asks each); they are destroyed when released, as after a 25006: the
 * server may be promoted meanwhile, but the next connection through the write endpoint then
 * finds out which server it reaches now.
 *
 * With `names`, a statement whose text has a name there runs as that named prepared statement
 * (parsed once per connection); any other runs unnamed, as without `names`. When a
 * schema change made a named statement's result type stale (SQLSTATE 0A000), the statement gets
 * a fresh name and runs again once, on the same connection, if it ran outside a transaction
 * block; inside one, the failure has aborted the transaction, so it fails and only the next
 * attempt of the whole transaction runs under the fresh name.
 *
 * With `retryWithinMillis` above 0, `run` sends a statement again, on a new connection, after
 * a failure that proves it changed nothing, for up to that long after its first failure
 * (waits of 50 ms doubling to 500 ms between tries): no connection could be opened to send it
 * on (refused, cut while opening, a server starting or shutting down: what a switchover or a
 * failover looks like from here), or a server that takes no writes refused it (25006: a
 * standby, or the old primary, still reached through the write endpoint), which rolled all of
 * it back. Any other failure, and above all a connection lost after the statement was sent,
 * whose commit may have happened, is the caller's at once. A pool with every connection busy
 * (its acquire timeout) is not tried again either: waiting longer would only deepen an overload.
 */
export function poolForKysely(
  pool: pg.Pool,
  readTimeoutMillis: number,
  names?: StatementNames,
  offPrimary?: WeakSet<pg.ClientBase>,
  retryWithinMillis = 0,
): { readonly forKysely: PostgresPool; readonly run: RunStatement } {
  const clients = new WeakMap<pg.PoolClient, TimedClient>();
  const wrap = (client: pg.PoolClient): TimedClient => {
    let wrapped = clients.get(client);
    if (wrapped === undefined) {
      wrapped = new TimedClient(client, readTimeoutMillis, names, offPrimary);
      clients.set(client, wrapped);
    }
    return wrapped;
  };
  const noConnection = () => new Error("the pool gave no connection");
  return {
    forKysely: {
      connect: () =>
        new Promise((resolve, reject) => {
          pool.connect((error, client) => {
            if (error || client === undefined) reject(error ?? noConnection());
            else resolve(wrap(client));
          });
        }),
      end: () => pool.end(),
    },
    // What Kysely's driver does with the pool above (connect, query, release whatever
    // happened), in callbacks, with one promise for the caller; tried again as said above.
    run: (sql, parameters) =>
      new Promise((resolve, reject) => {
        let deadline: number | undefined;
        let tries = 0;
        // Whether `failure` (which changed nothing) is tried again: answers false when it is the caller's.
        const again = (failure: Error): boolean => {
          if (retryWithinMillis <= 0 || !isDatabaseUnavailable(failure)) return false;
          deadline ??= performance.now() + retryWithinMillis;
          const wait = Math.min(RETRY_FIRST_WAIT_MS * 2 ** tries, RETRY_LONGEST_WAIT_MS);
          if (performance.now() + wait > deadline) return false;
          tries += 1;
          setTimeout(attempt, wait);
          return true;
        };
        const attempt = () => {
          pool.connect((error, client) => {
            if (error || client === undefined) {
              const failure = error ?? noConnection();
              if (!POOL_BUSY.test(failure.message) && again(failure)) return;
              reject(failure);
              return;
            }
            const timed = wrap(client);
            timed.run(sql, parameters, (failure, result) => {
              timed.release();
              if (!failure) resolve(lastWithRows(result)?.rows ?? []);
              else if (!(sqlStateOf(failure) === SQLSTATE_READ_ONLY && again(failure))) reject(failure);
            });
          });
        };
        attempt();
      }),
  };
}

/** The first wait before a statement that changed nothing is sent again; each next one doubles. */
const RETRY_FIRST_WAIT_MS = 50;
/** The longest wait between two tries of a statement that changed nothing. */
const RETRY_LONGEST_WAIT_MS = 500;
/** pg-pool's acquire timeout: every connection busy, none free within the connect timeout. */
const POOL_BUSY = /^timeout exceeded when trying to connect$/;

/**
 * The result of a statement. A text of several statements without parameters answers one result
 * each: the result is then the last one that holds rows, else the last (the others set things up
 * or tidy up, and answer none).
 */
function lastWithRows(result: pg.QueryResult | pg.QueryResult[] | undefined): pg.QueryResult | undefined {
  if (!Array.isArray(result)) return result;
  for (let i = result.length - 1; i >= 0; i--) {
    const each = result[i];
    if (each !== undefined && each.rows.length > 0) return each;
  }
  return result.at(-1);
}

/** How `pool` is used right now. */
export function poolStats(pool: pg.Pool): PoolStats {
  return { max: pool.options.max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
}

class TimedClient implements PostgresPoolClient {
  readonly #client: pg.PoolClient;
  readonly #readTimeoutMillis: number;
  readonly #names: StatementNames | undefined;
  /** Set once a statement went unanswered past the read timeout: the connection is not reused. */
  #stalled = false;
  /** Set once a statement failed as on a server that takes no writes: the connection is not reused. */
  #readOnly = false;
  readonly #offPrimary: WeakSet<pg.ClientBase> | undefined;
  /** The server's warning that the running statement's commit was not confirmed by the synchronous standby. */
  #unconfirmed: { readonly message?: string | undefined } | undefined;

  constructor(
    client: pg.PoolClient,
    readTimeoutMillis: number,
    names: StatementNames | undefined,
    offPrimary: WeakSet<pg.ClientBase> | undefined,
  ) {
    this.#client = client;
    this.#offPrimary = offPrimary;
    this.#readTimeoutMillis = readTimeoutMillis;
    this.#names = names;
    // pg emits a notice as it reads it, before the answer of the statement it came with.
    client.on("notice", (notice) => {
      if (SYNC_WAIT_CANCELLED.test(notice.message ?? "")) this.#unconfirmed = notice;
    });
  }

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    sql: string | PostgresCursor<R>,
    parameters?: ReadonlyArray<unknown>,
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof sql !== "string") throw new TypeError("cursors are not supported by this pool");
    return new Promise((resolve, reject) => {
      this.run(sql, parameters, (error, result) => {
        if (error) reject(error);
        else resolve(lastWithRows(result) as unknown as PostgresQueryResult<R>);
      });
    });
  }

  /** Runs `sql` under the read timer and its name, as {@link poolForKysely} says; answers through `done`. */
  run(sql: string, parameters: ReadonlyArray<unknown> | undefined, done: Done): void {
    // A rollback after a stalled statement would queue behind it: fail it now instead.
    if (this.#stalled) {
      done(new Error(READ_TIMEOUT));
      return;
    }
    let settled = false;
    this.#unconfirmed = undefined;
    const names = this.#names;
    let name = names?.nameOf(sql);
    let renewed = false;
    const timer =
      this.#readTimeoutMillis > 0
        ? setTimeout(() => {
            settled = true;
            this.#stalled = true;
            done(new Error(READ_TIMEOUT));
          }, this.#readTimeoutMillis)
        : undefined;
    const answer: Answer = (error, result) => {
      if (settled) return;
      if (error && names && name !== undefined && !renewed && sqlStateOf(error) === SQLSTATE_STALE_PLAN) {
        renewed = true;
        name = names.renew(sql, name);
        // The status pg holds is the one from before this statement (the error arrives ahead
        // of the next ReadyForQuery): "I" means it ran as a transaction of its own, which the
        // error rolled back, so running it again is safe. Within the read timer already set.
        if (this.#client.getTransactionStatus() === "I") {
          this.#send(sql, name, parameters, answer);
          return;
        }
      }
      settled = true;
      clearTimeout(timer);
      if (error && sqlStateOf(error) === SQLSTATE_READ_ONLY) this.#readOnly = true;
      const unconfirmed = this.#unconfirmed;
      this.#unconfirmed = undefined;
      if (unconfirmed !== undefined && !error) {
        done(new Error(SYNC_COMMIT_UNCONFIRMED, { cause: unconfirmed }));
        return;
      }
      done(error, result);
    };
    this.#send(sql, name, parameters, answer);
  }

  /**
   * Sends one statement in `pg`'s callback form, passed at the call: see poolForKysely for why
   * not the promise form. Kysely hands over a copy of the parameters made for this call.
   */
  #send(
    sql: string,
    name: string | undefined,
    parameters: ReadonlyArray<unknown> | undefined,
    answer: Answer,
  ): void {
    const values = parameters as unknown[];
    if (name === undefined) {
      this.#client.query(sql, values, answer);
      return;
    }
    // Made from the text and named afterwards, where pg reads the name (when it sends it): given
    // a config object instead, pg copies it with all its property descriptors first, for every
    // statement, a measurable share of a GET's CPU.
    const query = new pg.Query(sql, values, answer as never) as pg.Query & { name?: string };
    query.name = name;
    this.#client.query(query);
  }

  release(): void {
    if (!this.#stalled && !this.#readOnly && this.#offPrimary?.has(this.#client) !== true) {
      this.#client.release();
      return;
    }
    // pg-pool destroys a client released with an error: it is never handed out again, and its
    // entry in the pool's WeakMap goes with it.
    this.#client.release(
      new Error(this.#stalled ? READ_TIMEOUT : "connected to a server that takes no writes"),
    );
  }
}
