import type pg from "pg";
import type { RunStatement } from "../direct-statements.js";
import { isDatabaseUnavailable } from "../is-database-unavailable.js";
import { poolForKysely } from "../pool-for-kysely.js";
import { sqlStateOf } from "../sql-state.js";
import type { StatementNames } from "../statement-names.js";
import { PRIMARY_POSITION_SQL, PrimaryPosition } from "./primary-position.js";
import { REPLAY_POSITION_SQL, Standby, type StandbyTimings } from "./standby.js";
import type { WalPosition } from "./wal-position.js";

/** Why a read that a standby could have answered was answered by the primary. */
export type FallbackReason =
  /** No standby was in the rotation. */
  | "no_standby"
  /** No standby had replayed the primary's position within the wait. */
  | "not_caught_up"
  /** The standby chosen stopped answering during the read (it left the rotation). */
  | "standby_unavailable"
  /** The standby cancelled the read because replay needed what it held (SQLSTATE 40001/40P01). */
  | "recovery_conflict"
  /** The standby failed the read for another reason; the primary's answer, or error, is the one given. */
  | "standby_error";

/** Every {@link FallbackReason}, in the order /metrics lists them. */
export const FALLBACK_REASONS: readonly FallbackReason[] = [
  "no_standby",
  "not_caught_up",
  "standby_unavailable",
  "recovery_conflict",
  "standby_error",
];

/** One standby as `/metrics` shows it. */
export interface StandbyStats {
  /** `host:port/database` of its URL (never its user or password). */
  readonly label: string;
  /** Whether it is in the rotation. */
  readonly up: boolean;
  /**
   * Bytes of WAL between the primary's last reported position and the standby's last reported
   * replay position, 0 when it had caught up; `undefined` while out of the rotation or before
   * both were seen.
   */
  readonly replayLagBytes: number | undefined;
  /** Reads it answered. */
  readonly reads: number;
  /** Replay checks it answered. */
  readonly checks: number;
}

/**
 * What the standby reads have done since they were made (GET /metrics). adapters-http declares the
 * slice /metrics shows, as adapters never import one another; the app checks that they agree.
 */
export interface StandbyReadStats {
  readonly standbys: readonly StandbyStats[];
  /** Reads answered by the primary instead of a standby, by reason. */
  readonly fallbacks: Readonly<Record<FallbackReason, number>>;
  /** Statements that asked the primary for its WAL position (one serves a batch of reads). */
  readonly positionQueries: number;
  /** Reads a standby answered, as of its last replayed change, while the primary did not answer. */
  readonly readsWithoutPrimary: number;
}

/** One standby to read from: its pool, and its label for the metrics. */
export interface StandbyPool {
  readonly label: string;
  readonly pool: pg.Pool;
}

/** What {@link createStandbyReads} needs. */
export interface StandbyReadsOptions {
  /** Runs a statement on the primary (its pool's direct runner). */
  readonly primary: RunStatement;
  /**
   * Runs the statement that asks the primary its WAL position (one at a time, and often: one
   * for each batch of reads). Default `primary`.
   */
  readonly position?: RunStatement;
  /** The standbys, each with its own pool (ended by `close`). */
  readonly standbys: readonly StandbyPool[];
  /** Longest a read waits for a standby to replay the primary's position, in milliseconds. */
  readonly maxWaitMs: number;
  /** As the primary's pool: the client-side read timeout of a statement, 0 for none. */
  readonly readTimeoutMillis: number;
  /** The statement names of the process, or `undefined` to run every statement unnamed. */
  readonly names: StatementNames | undefined;
  /** Overrides of the timings (tests). */
  readonly timings?: Partial<StandbyTimings>;
}

/** The standby reads: the statement runner to hand the repositories, its metrics, and how to close it. */
export interface StandbyReads {
  /**
   * Runs a read a standby may answer. The answer reflects at least every commit the primary
   * had acknowledged when the call was made, as {@link createStandbyReads} says.
   */
  readonly run: RunStatement;
  /** Counts and states, read at the moment of asking. */
  stats(): StandbyReadStats;
  /** Stops probing standbys and ends their pools. Idempotent. */
  close(): Promise<void>;
}

const DEFAULT_TIMINGS: StandbyTimings = {
  now: () => performance.now(),
  pollIntervalMs: 2,
  probeIntervalMs: 1000,
  knowledgeTtlMs: 100,
};

/** The message PostgreSQL cancels a query on a standby with when replay needs what it holds. */
const RECOVERY_CONFLICT = /conflict with recovery/i;

/**
 * Reads on hot standbys, never older than what any client was already told. For each read:
 * learn the primary's WAL position with a statement sent after the read arrived (one statement
 * serves every read waiting for it, see `PrimaryPosition`); then answer from a standby that has
 * replayed that far. Replay only moves forward, so a standby known (recently) to have passed
 * the position reads at once; otherwise every standby in the rotation is asked
 * (`pg_last_wal_replay_lsn()`, one check at a time per standby, shared by the reads waiting
 * for it) until one has, for at most `maxWaitMs`; then the primary answers. The read runs after
 * the check has answered, so its snapshot holds everything the check saw.
 *
 * A standby that cannot be reached leaves the rotation (the read goes to the primary) and
 * rejoins by itself once a probe finds it answering as a standby. A read cancelled by a
 * recovery conflict, or failed on a standby in any other way, is run again on the primary,
 * whose answer or error is the one given. When the primary cannot be reached to learn its
 * position, a standby answers as of the last change it replayed; if none can, the primary's
 * error (an outage, answered 503 upstream) is the one thrown.
 */
export function createStandbyReads(options: StandbyReadsOptions): StandbyReads {
  const timings: StandbyTimings = { ...DEFAULT_TIMINGS, ...options.timings };
  const { maxWaitMs } = options;
  options.names?.register(PRIMARY_POSITION_SQL);
  options.names?.register(REPLAY_POSITION_SQL);

  const standbys = options.standbys.map(({ label, pool }) => {
    const { run } = poolForKysely(pool, options.readTimeoutMillis, options.names);
    const standby = new Standby(label, run, timings, isDatabaseUnavailable);
    // A new connection may reach a server that restarted since its replay position was learned;
    // a lost one says the server may be restarting.
    pool.on("connect", (client) => {
      standby.forget();
      client.on("error", () => standby.forget());
    });
    pool.on("error", () => {});
    return standby;
  });
  const position = new PrimaryPosition(options.position ?? options.primary);
  const fallbacks = Object.fromEntries(FALLBACK_REASONS.map((reason) => [reason, 0])) as Record<
    FallbackReason,
    number
  >;
  let readsWithoutPrimary = 0;
  let nextStandby = 0;
  let closing: Promise<void> | undefined;

  /** The standbys in the rotation, starting at the next one in turn. */
  const inTurn = (): Standby[] => {
    const start = nextStandby;
    nextStandby = (nextStandby + 1) % Math.max(1, standbys.length);
    const ordered: Standby[] = [];
    for (let i = 0; i < standbys.length; i += 1) {
      const standby = standbys[(start + i) % standbys.length] as Standby;
      if (standby.up) ordered.push(standby);
    }
    return ordered;
  };

  const onPrimary = (reason: FallbackReason, sql: string, parameters: readonly unknown[]) => {
    fallbacks[reason] += 1;
    return options.primary(sql, parameters);
  };

  /** The first standby (in turn) to reach `target` before the wait runs out, if any. */
  const firstToReach = async (
    candidates: readonly Standby[],
    target: WalPosition,
  ): Promise<Standby | undefined> => {
    const known = candidates.find((standby) => standby.knows(target));
    if (known !== undefined) return known;
    const deadline = timings.now() + maxWaitMs;
    const abandon = new AbortController();
    try {
      return await new Promise<Standby | undefined>((resolve) => {
        let pending = candidates.length;
        for (const standby of candidates) {
          void standby.reach(target, deadline, abandon.signal).then((reached) => {
            pending -= 1;
            if (reached) resolve(standby);
            else if (pending === 0) resolve(undefined);
          });
        }
      });
    } finally {
      // The others stop waiting, so their checks stop once no read waits for them.
      abandon.abort();
    }
  };

  const readOn = async (
    standby: Standby,
    sql: string,
    parameters: readonly unknown[],
  ): Promise<unknown[]> => {
    try {
      const rows = await standby.run(sql, parameters);
      standby.reads += 1;
      return rows;
    } catch (error) {
      if (standby.failed(error)) return onPrimary("standby_unavailable", sql, parameters);
      const conflict = isRecoveryConflict(error);
      return onPrimary(conflict ? "recovery_conflict" : "standby_error", sql, parameters);
    }
  };

  /** The primary cannot tell its position: the standby that has replayed most answers, as of then. */
  const withoutPrimary = async (primaryError: unknown, sql: string, parameters: readonly unknown[]) => {
    const candidates = inTurn().sort((a, b) => (a.known > b.known ? -1 : a.known < b.known ? 1 : 0));
    for (const standby of candidates) {
      try {
        const rows = await standby.run(sql, parameters);
        standby.reads += 1;
        readsWithoutPrimary += 1;
        return rows;
      } catch (error) {
        // Out of the rotation if it cannot be reached; either way the next one may answer.
        standby.failed(error);
      }
    }
    throw primaryError;
  };

  const run: RunStatement = async (sql, parameters) => {
    if (standbys.length === 0 || closing !== undefined) return options.primary(sql, parameters);
    let target: WalPosition;
    try {
      target = await position.afterNow();
    } catch (error) {
      if (isDatabaseUnavailable(error)) return withoutPrimary(error, sql, parameters);
      // Not an outage (a primary that is itself in recovery, say): the primary decides.
      return options.primary(sql, parameters);
    }
    const candidates = inTurn();
    if (candidates.length === 0) return onPrimary("no_standby", sql, parameters);
    const standby = await firstToReach(candidates, target);
    if (standby === undefined) return onPrimary("not_caught_up", sql, parameters);
    return readOn(standby, sql, parameters);
  };

  return {
    run,
    stats: () => {
      const primaryAt = position.latest;
      return {
        standbys: standbys.map((standby) => {
          const replayed = standby.lastReported;
          const lag =
            !standby.up || replayed === undefined || primaryAt === undefined
              ? undefined
              : Number(primaryAt > replayed ? primaryAt - replayed : 0n);
          return {
            label: standby.label,
            up: standby.up,
            replayLagBytes: lag,
            reads: standby.reads,
            checks: standby.checks,
          };
        }),
        fallbacks: { ...fallbacks },
        positionQueries: position.asked,
        readsWithoutPrimary,
      };
    },
    close: () => {
      closing ??= (async () => {
        for (const standby of standbys) standby.close();
        await Promise.all(options.standbys.map(({ pool }) => pool.end()));
      })();
      return closing;
    },
  };
}

/** Whether `error` is a standby cancelling a query for replay's sake (lock, snapshot, buffer pin, deadlock). */
export function isRecoveryConflict(error: unknown): boolean {
  const state = sqlStateOf(error);
  if (state !== "40001" && state !== "40P01") return false;
  const message = (error as { message?: unknown }).message;
  return typeof message === "string" && RECOVERY_CONFLICT.test(message);
}

/** `host:port/database` of a PostgreSQL URL, for metrics and logs: never its user or password. */
export function standbyLabel(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname}:${url.port || "5432"}${url.pathname || "/"}`;
  } catch {
    return "standby";
  }
}
