import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from "kysely";
import pg from "pg";
import type { RunStatement } from "./direct-statements.js";
import { isDatabaseUnavailable } from "./is-database-unavailable.js";
import { sqlStateOf } from "./sql-state.js";
import type { StatementNames } from "./statement-names.js";
import { evidenceIn, RESOLVE_WRITE, resolveParameters, type WriteEvidence } from "./write-evidence.js";

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

/**
 * admin_shutdown: the server's fast shutdown (or pg_terminate_backend) ended the session. Sent as
 * a FATAL error, after which the server closes the connection.
 */
const SQLSTATE_ADMIN_SHUTDOWN = "57P01";

/**
 * The first word of a statement that cannot commit anything by itself before its CommandComplete
 * when it runs outside a transaction block: its commit is the one PostgreSQL makes after it
 * completes. Not among them: CALL and DO (a procedure may COMMIT midway), VACUUM, the
 * CONCURRENTLY forms and the other utility statements that commit transactions of their own
 * while they run. Inside a transaction block none of those may run, and every statement is safe.
 */
const COMMITS_ONLY_AT_THE_END =
  /^\s*(?:select|insert|update|delete|merge|with|values|table|begin|start|commit|end|rollback|abort)\b/i;

/** A transaction's ROLLBACK, as Kysely sends it when a statement of the transaction failed. */
const ROLLBACK = /^\s*rollback\s*;?\s*$/i;

/** The errors of statements that provably never committed: see {@link isProvedUncommitted}. */
const UNCOMMITTED = new WeakSet<object>();

/**
 * The errors of statements that were sent and may have committed, with the rows the server had
 * sent of each before the failure, and whether they are all of them (its CommandComplete came).
 */
const UNDECIDED = new WeakMap<object, { readonly rows: readonly unknown[]; readonly complete: boolean }>();

/**
 * Whether `error` ended a statement run through {@link poolForKysely} that provably changed
 * nothing: it was never sent (its connection failed while it waited behind another statement),
 * or the server ended the session (FATAL 57P01, a fast shutdown or pg_terminate_backend) before
 * any CommandComplete of it and without the WARNING of a cancelled wait for the synchronous
 * standby. Inside a transaction, any statement up to and including its COMMIT: the transaction
 * never committed, and may run again whole, by whoever holds its work (Kysely rethrows that
 * error from `transaction().execute()`). `run` sends such a statement again by itself.
 */
export function isProvedUncommitted(error: unknown): boolean {
  return typeof error === "object" && error !== null && UNCOMMITTED.has(error);
}

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
 * it back; or the server's shutdown cut it short before it could commit (FATAL 57P01 with
 * none of its CommandComplete: see {@link isProvedUncommitted}), what a planned switchover does
 * to the writes in flight on the old primary. Any other failure, and above all a connection
 * lost after the statement was sent, whose commit may have happened, is the caller's at once. A
 * pool with every connection busy (its acquire timeout) is not tried again either: waiting
 * longer would only deepen an overload. `resent` counts the statements sent again, by why.
 *
 * Within the same window, a write made with `writeEvidence`'s columns whose connection failed
 * after it was sent, with no proof that it changed nothing (its commit waited for the
 * synchronous standby when the server shut down, whose WARNING then came with its rows; a FATAL
 * after its CommandComplete; a connection cut), is resolved from the rows it had returned: the
 * primary that the write endpoint reaches then is asked about its transaction (`RESOLVE_WRITE`).
 * Committed there, with the write's own event rows found (its transaction id and the microsecond
 * its transaction started, for every post it reported written), and every row of it received,
 * it is answered with those rows; the question's own commit has then been confirmed by the
 * synchronous standby, after the write's. Aborted there, or an id that server never gave (a
 * standby promoted without the old primary's last WAL), it changed nothing there and is sent
 * again. In progress, or a server in recovery, or no answer: asked again after a wait. Anything
 * else (committed without those rows: another transaction under the same id; rows missing;
 * status forgotten) fails it as before, and so does the end of the window. `resolved` counts
 * the outcomes. A write with no such columns, or none of its rows received, fails at once.
 */
export function poolForKysely(
  pool: pg.Pool,
  readTimeoutMillis: number,
  names?: StatementNames,
  offPrimary?: WeakSet<pg.ClientBase>,
  retryWithinMillis = 0,
): {
  readonly forKysely: PostgresPool;
  readonly run: RunStatement;
  readonly resent: () => Resends;
  readonly resolved: () => Resolutions;
} {
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
  const resent: Record<ResendReason, number> = { "no-connection": 0, "read-only": 0, uncommitted: 0 };
  const resolved: Record<ResolvedOutcome, number> = { committed: 0, uncommitted: 0, unresolved: 0 };
  return {
    resent: () => ({ ...resent }),
    resolved: () => ({ ...resolved }),
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
        // The next wait between two tries, or undefined when it would end past the deadline.
        const nextWait = (): number | undefined => {
          deadline ??= performance.now() + retryWithinMillis;
          const wait = Math.min(RETRY_FIRST_WAIT_MS * 2 ** tries, RETRY_LONGEST_WAIT_MS);
          if (performance.now() + wait > deadline) return undefined;
          tries += 1;
          return wait;
        };
        // Whether `failure` (which changed nothing) is tried again: answers false when it is the caller's.
        const again = (failure: Error, reason: ResendReason): boolean => {
          if (retryWithinMillis <= 0 || !isDatabaseUnavailable(failure)) return false;
          const wait = nextWait();
          if (wait === undefined) return false;
          resent[reason] += 1;
          setTimeout(attempt, wait);
          return true;
        };
        // After `failure` of a write that may have committed, asks the primary the write
        // endpoint reaches whether it did (RESOLVE_WRITE), until it can tell or the deadline
        // passes: committed there, with the write's own event rows, it is answered with the rows
        // already received; never run there, it is sent again; in progress, or no primary to
        // ask (a server in recovery, or unavailable), it is asked again after a wait; anything
        // else, or the deadline, is the caller's failure. A status "committed" without the rows is asked once more (the transaction
        // may have committed between the start of the question and its status), then refused.
        const settle = (
          failure: Error,
          evidence: WriteEvidence,
          rows: readonly unknown[],
          complete: boolean,
        ) => {
          let committedUnseen = 0;
          const unresolved = () => {
            resolved.unresolved += 1;
            reject(failure);
          };
          const later = () => {
            const wait = nextWait();
            if (wait === undefined) unresolved();
            else setTimeout(ask, wait);
          };
          const ask = () => {
            pool.connect((error, client) => {
              if (error || client === undefined) {
                later();
                return;
              }
              const timed = wrap(client);
              timed.run(RESOLVE_WRITE, resolveParameters(evidence), (asked, result) => {
                timed.release();
                if (asked) {
                  if (sqlStateOf(asked) === SQLSTATE_INVALID_PARAMETER && NEVER_GIVEN.test(asked.message)) {
                    // The server never gave that id: the write never ran where writes go now.
                    resolved.uncommitted += 1;
                    attempt();
                  } else if (isDatabaseUnavailable(asked)) later();
                  else unresolved();
                  return;
                }
                const answer = lastWithRows(result)?.rows[0] as
                  | { status?: unknown; found?: unknown }
                  | undefined;
                const status = answer?.status;
                if (status === "committed" && answer?.found === evidence.posts.length) {
                  if (!complete) {
                    unresolved();
                    return;
                  }
                  resolved.committed += 1;
                  resolve(rows as unknown[]);
                } else if (status === "aborted") {
                  resolved.uncommitted += 1;
                  attempt();
                } else if (status === "in progress" || status === "standby") {
                  later();
                } else if (status === "committed" && committedUnseen === 0) {
                  committedUnseen += 1;
                  later();
                } else {
                  unresolved();
                }
              });
            });
          };
          ask();
        };
        const attempt = () => {
          pool.connect((error, client) => {
            if (error || client === undefined) {
              const failure = error ?? noConnection();
              if (!POOL_BUSY.test(failure.message) && again(failure, "no-connection")) return;
              reject(failure);
              return;
            }
            const timed = wrap(client);
            timed.run(sql, parameters, (failure, result) => {
              timed.release();
              if (!failure) {
                resolve(lastWithRows(result)?.rows ?? []);
                return;
              }
              const reason = resendReason(failure);
              if (reason !== undefined && again(failure, reason)) return;
              // Not proved uncommitted, sent, and with its rows' evidence: the primary may tell.
              const undecided = reason === undefined ? UNDECIDED.get(failure) : undefined;
              const evidence = undecided === undefined ? undefined : evidenceIn(undecided.rows);
              if (
                undecided !== undefined &&
                evidence !== undefined &&
                retryWithinMillis > 0 &&
                isDatabaseUnavailable(failure)
              ) {
                settle(failure, evidence, undecided.rows, undecided.complete);
                return;
              }
              reject(failure);
            });
          });
        };
        attempt();
      }),
  };
}

/**
 * Why a statement was sent again: no connection could be opened to send it on, a server that
 * takes no writes refused it (25006), or {@link isProvedUncommitted} (above all, the server's
 * shutdown ended it before it could commit).
 */
export type ResendReason = "no-connection" | "read-only" | "uncommitted";

/** How many statements were sent again, by why. */
export type Resends = Readonly<Record<ResendReason, number>>;

/**
 * What became of a write that may have committed when its connection failed, asked of the
 * primary (see {@link poolForKysely}): committed there, and answered with its rows; never
 * committed there, and sent again; or not told within the window, and failed.
 */
export type ResolvedOutcome = "committed" | "uncommitted" | "unresolved";

/** How many writes that may have committed were resolved, by outcome. */
export type Resolutions = Readonly<Record<ResolvedOutcome, number>>;

/** invalid_parameter_value, which `pg_xact_status` fails with for an id the server has not given yet. */
const SQLSTATE_INVALID_PARAMETER = "22023";
/** `pg_xact_status`'s message for an id the server has not given yet. */
const NEVER_GIVEN = /^transaction ID \d+ is in the future$/;

/**
 * Why a statement that was given a connection may be sent again, as its failure proves that it
 * changed nothing; undefined when it does not.
 */
function resendReason(failure: Error): Exclude<ResendReason, "no-connection"> | undefined {
  if (sqlStateOf(failure) === SQLSTATE_READ_ONLY) return "read-only";
  return isProvedUncommitted(failure) ? "uncommitted" : undefined;
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

/** What the server has answered of one statement sent: whether pg sent it, and any CommandComplete. */
interface Sent {
  submitted: boolean;
  completed: boolean;
  /** The rows the server has sent of it so far. */
  rows: () => readonly unknown[];
}

/** The parts of `pg`'s private result that its `addFields` builds from a row description. */
interface ResultInternals {
  fields: readonly pg.FieldDef[];
  _parsers: unknown[] | undefined;
  _prebuiltEmptyResultObject: object | null;
  addFields(fields: readonly pg.FieldDef[]): void;
}

/** What `pg` built from a named statement's row description, to be given to its next results. */
interface KnownFields {
  readonly fields: readonly pg.FieldDef[];
  readonly parsers: unknown[] | undefined;
  readonly emptyRow: object | null;
}

class TimedClient implements PostgresPoolClient {
  readonly #client: pg.PoolClient;
  /** Per named statement, what `pg` built from its first row description on this connection. */
  readonly #knownFields = new Map<string, KnownFields>();
  readonly #readTimeoutMillis: number;
  readonly #names: StatementNames | undefined;
  /** Set once a statement went unanswered past the read timeout: the connection is not reused. */
  #stalled = false;
  /** Set once a statement failed as on a server that takes no writes: the connection is not reused. */
  #readOnly = false;
  readonly #offPrimary: WeakSet<pg.ClientBase> | undefined;
  /** The server's warning that the running statement's commit was not confirmed by the synchronous standby. */
  #unconfirmed: { readonly message?: string | undefined } | undefined;
  /** The statement the server is answering now: the last one `pg` sent on this connection. */
  #current: Sent | undefined;
  /** Set once the server ended the session before a statement could commit: see `run`'s ROLLBACK. */
  #endedUncommitted = false;
  /** Set while pg writes a statement whose rows' description is known: see {@link #reuseFields}. */
  #undescribed = false;
  /** What the stall of the statement under the read timer does, and when it was run (`performance.now()`). */
  #stall: (() => void) | undefined;
  #since = 0;
  /** The read timer's one timeout, armed while statements run; see {@link #watch}. */
  #watchdog: NodeJS.Timeout | undefined;

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
    // pg's Query and Client emit no event of their own for a CommandComplete (a Query keeps it in
    // its private result); the connection, a public member of the client, emits every message of
    // the protocol it reads by name, in order, before the error or ReadyForQuery that follows.
    client.connection.on("commandComplete", () => {
      if (this.#current !== undefined) this.#current.completed = true;
    });
    // pg's Query asks for the description of every statement's rows (a Describe, which the server
    // answers with a RowDescription) whatever it knows; a statement sent while this is set skips it.
    const connection = client.connection as unknown as { describe(message: unknown): void };
    const describe = connection.describe;
    connection.describe = (message) => {
      if (!this.#undescribed) describe.call(connection, message);
    };
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
    // After a FATAL that proved the transaction uncommitted, the server has ended it with the
    // session: Kysely's ROLLBACK, which would fail on the dead connection and replace the error
    // the caller needs to see (isProvedUncommitted), answers at once.
    if (this.#endedUncommitted && ROLLBACK.test(sql)) {
      done(null, { command: "ROLLBACK", rowCount: null, oid: 0, fields: [], rows: [] });
      return;
    }
    let settled = false;
    this.#unconfirmed = undefined;
    // The transaction status pg holds is the one from before this statement: "T" or "E" inside a
    // transaction block. (On a new connection it is still null when the pool hands it over.)
    const status = this.#client.getTransactionStatus();
    const inBlock = status === "T" || status === "E";
    let sent: Sent = { submitted: false, completed: false, rows: () => [] };
    const names = this.#names;
    let name = names?.nameOf(sql);
    let renewed = false;
    const stall = () => {
      settled = true;
      this.#stalled = true;
      const failure = new Error(READ_TIMEOUT);
      // Sent, it may still commit: what it answered so far is kept, as for a lost connection.
      if (sent.submitted) UNDECIDED.set(failure, { rows: [...sent.rows()], complete: sent.completed });
      done(failure);
    };
    const watched = this.#readTimeoutMillis > 0 && this.#watch(stall);
    // Only if a statement were already running here (a connection runs one at a time).
    const timer =
      this.#readTimeoutMillis > 0 && !watched ? setTimeout(stall, this.#readTimeoutMillis) : undefined;
    const answer: Answer = (error, result) => {
      if (settled) return;
      if (error && names && name !== undefined && !renewed && sqlStateOf(error) === SQLSTATE_STALE_PLAN) {
        renewed = true;
        name = names.renew(sql, name);
        // The status pg holds is the one from before this statement (the error arrives ahead
        // of the next ReadyForQuery): "I" means it ran as a transaction of its own, which the
        // error rolled back, so running it again is safe. Within the read timer already set.
        if (this.#client.getTransactionStatus() === "I") {
          sent = this.#send(sql, name, parameters, answer);
          return;
        }
      }
      settled = true;
      if (watched) this.#unwatch();
      else clearTimeout(timer);
      if (error && sqlStateOf(error) === SQLSTATE_READ_ONLY) this.#readOnly = true;
      if (error && this.#provesUncommitted(error, sent, sql, inBlock)) {
        UNCOMMITTED.add(error);
        // Sent, it was ended by the server, which ended the session and its transaction.
        if (sent.submitted) this.#endedUncommitted = true;
      }
      const unconfirmed = this.#unconfirmed;
      this.#unconfirmed = undefined;
      if (unconfirmed !== undefined && !error) {
        const failure = new Error(SYNC_COMMIT_UNCONFIRMED, { cause: unconfirmed });
        UNDECIDED.set(failure, { rows: lastWithRows(result)?.rows ?? [], complete: true });
        done(failure);
        return;
      }
      if (error && sent.submitted && !UNCOMMITTED.has(error) && !ROLLBACK.test(sql))
        UNDECIDED.set(error, { rows: sent.rows(), complete: sent.completed });
      done(error, result);
    };
    sent = this.#send(sql, name, parameters, answer);
  }

  /**
   * Puts the statement being run under the read timer, `stall` called once it has waited
   * `readTimeoutMillis`; false when another statement is already under it (then the caller
   * keeps a timeout of its own). Why not a timeout per statement: creating and clearing one is a
   * measurable share of a lone GET's CPU, while a connection runs one statement at a time. One
   * timeout serves them all: when it fires it fails the statement running then if that one has
   * waited long enough, else waits for the rest of its time, and ends when none runs.
   */
  #watch(stall: () => void): boolean {
    if (this.#stall !== undefined) return false;
    this.#stall = stall;
    this.#since = performance.now();
    if (this.#watchdog === undefined) this.#arm(this.#readTimeoutMillis);
    return true;
  }

  /** The statement under the read timer has its answer. */
  #unwatch(): void {
    this.#stall = undefined;
  }

  #arm(wait: number): void {
    this.#watchdog = setTimeout(() => {
      this.#watchdog = undefined;
      const stall = this.#stall;
      if (stall === undefined) return;
      const waited = performance.now() - this.#since;
      if (waited < this.#readTimeoutMillis) {
        this.#arm(this.#readTimeoutMillis - waited);
        return;
      }
      this.#stall = undefined;
      stall();
    }, wait);
    // A statement's connection keeps the process alive; an idle connection's timer must not.
    this.#watchdog.unref();
  }

  /**
   * Whether `error`, which ended the statement `sent`, proves that it committed nothing (see
   * {@link isProvedUncommitted}). Why the rule holds, from PostgreSQL's postgres.c and xact.c
   * (15): a transaction commits in finish_xact_command. For the last statement of a simple-
   * protocol text, and for a transaction-control statement in either protocol, that runs before
   * EndCommand puts the CommandComplete in the output buffer; for any other statement of the
   * extended protocol (pg sends each parameterised statement with its own Sync), at the Sync,
   * after it. CommitTransaction holds interrupts from before its commit record to its end, and
   * nothing between that and EndCommand checks for them; so the FATAL that ProcessInterrupts
   * raises for a shutdown comes either before the commit, which then never happens, or behind a
   * CommandComplete already buffered. A commit waiting for the synchronous standby is the
   * exception: SyncRepWaitForLSN notices the shutdown itself, sends the WARNING that
   * `#unconfirmed` keeps, and sends nothing more (neither CommandComplete nor FATAL); that commit
   * is local only. In a text of several statements, any CommandComplete rules the rule out: an
   * earlier one may have been a COMMIT. Outside a transaction block, only a statement that cannot
   * commit by itself midway qualifies (`COMMITS_ONLY_AT_THE_END`); inside one, every statement.
   * A statement `pg` never sent (its connection failed while it waited its turn) changed nothing.
   * A ROLLBACK's failure is never taken for a proof: it would say nothing of the transaction it
   * was to end, which Kysely rolls back after a COMMIT whose outcome may be unknown.
   */
  #provesUncommitted(error: Error, sent: Sent, sql: string, inBlock: boolean): boolean {
    if (ROLLBACK.test(sql)) return false;
    if (!sent.submitted) return true;
    return (
      sqlStateOf(error) === SQLSTATE_ADMIN_SHUTDOWN &&
      (error as { severity?: unknown }).severity === "FATAL" &&
      !sent.completed &&
      this.#unconfirmed === undefined &&
      (inBlock || COMMITS_ONLY_AT_THE_END.test(sql))
    );
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
  ): Sent {
    const sent: Sent = { submitted: false, completed: false, rows: () => [] };
    // Made from the text and named afterwards, where pg reads the name (when it sends it): given
    // a config object instead, pg copies it with all its property descriptors first, for every
    // statement, a measurable share of a GET's CPU. Made here for an unnamed one too (as
    // `client.query` would make it from the text) to see whether pg sends it: pg calls `submit`
    // when it writes the statement to the connection, and never on a connection that already
    // failed; from then on, the CommandComplete the connection reads are this statement's.
    const query = new pg.Query(sql, parameters as unknown[], answer as never) as pg.Query & { name?: string };
    let described = true;
    if (name !== undefined) {
      query.name = name;
      described = !this.#reuseFields(query, name);
    }
    // pg keeps the rows it has parsed in the query's private result until the statement ends,
    // and drops them when an error ends it instead: read from there, they are those received.
    sent.rows = () => (query as unknown as { _result?: { rows?: unknown[] } })._result?.rows ?? [];
    const submit = query.submit;
    query.submit = (connection) => {
      sent.submitted = true;
      this.#current = sent;
      if (described) return submit.call(query, connection);
      // pg writes the whole statement (Bind, Describe, Execute, Sync) within `submit`.
      this.#undescribed = true;
      try {
        return submit.call(query, connection);
      } finally {
        this.#undescribed = false;
      }
    };
    this.#client.query(query);
    return sent;
  }

  /**
   * Gives `query`'s result the columns, the type parsers and the empty row that `pg` built from
   * the row description of statement `name` at its first execution on this connection, and
   * answers true, when there was one: `query` is then sent without a Describe, and its rows are
   * read with those. Else answers false, and keeps what `pg` builds from this execution's
   * description for the next ones.
   *
   * Why: the server describes the rows of every execution anew, and `pg` parses that description
   * and builds a parser per column and a dictionary-mode object from it each time, a measurable
   * share of a lone GET's time on both sides. A named statement's rows keep their description for
   * as long as it is prepared: PostgreSQL fails an execution whose plan, made again after a
   * schema change, would describe them otherwise ("cached plan must not change result type",
   * 0A000), and `run` then prepares the statement afresh under a new name. Everything given is
   * only read.
   */
  #reuseFields(query: pg.Query, name: string): boolean {
    const result = (query as unknown as { _result: ResultInternals })._result;
    const known = this.#knownFields.get(name);
    if (known !== undefined) {
      result.fields = known.fields;
      result._parsers = known.parsers;
      result._prebuiltEmptyResultObject = known.emptyRow;
      // What pg's own handling of a RowDescription sets: keep the rows for the callback.
      (query as unknown as { _accumulateRows: boolean })._accumulateRows = true;
      return true;
    }
    const build = result.addFields;
    result.addFields = (fields) => {
      build.call(result, fields);
      this.#knownFields.set(name, {
        fields,
        parsers: result._parsers,
        emptyRow: result._prebuiltEmptyResultObject,
      });
    };
    return false;
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
