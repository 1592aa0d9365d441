import type { RunStatement } from "../direct-statements.js";
import { parseWalPosition, type WalPosition } from "./wal-position.js";

/**
 * The primary's WAL position that covers every commit it has acknowledged. A commit is answered
 * only once its record is flushed (`synchronous_commit` on, local or remote_*), so the flush
 * position covers it; it is also exactly as far as a walsender ships WAL, so a standby can
 * always reach it. `pg_current_wal_lsn()` (the write position) or the insert position would
 * ask for WAL that may sit unflushed in the primary's buffers for up to `wal_writer_delay`,
 * and make reads fall back for nothing. With `synchronous_commit = off` a commit is answered
 * before its flush, and only the insert position covers it, so that setting selects it.
 */
export const PRIMARY_POSITION_SQL =
  "SELECT (CASE WHEN current_setting('synchronous_commit') = 'off' THEN pg_current_wal_insert_lsn() " +
  "ELSE pg_current_wal_flush_lsn() END)::text AS position";

/**
 * Learns the primary's WAL position for reads, one statement for a batch of them: a read may
 * only use a position learned by a statement sent after the read arrived (a write acknowledged
 * just before the read arrived may be past an answer already on its way). So a read that
 * arrives while a statement is in flight waits for the next one, which is sent as soon as that
 * one is answered and serves every read that arrived in the meantime: the primary answers at
 * most one of these statements at a time per process, however many reads there are.
 *
 * And the next statement is sent no sooner than `gatherMs` (default 1 ms) after the previous one
 * was answered, so that under a stream of reads each statement gathers those of a round trip
 * and a millisecond, not of a round trip alone: on the topology this costs the primary a third less
 * CPU per standby read, with no loss of throughput or latency (bench/RESULTS.md#standbys). When the
 * statements take longer than that to be answered (a busy primary, a busy machine), the wait is
 * twice as long as they take (their recent mean round trip), up to `maxGatherMs` (default 10 ms):
 * the busier the primary, the more reads each of its answers serves, so that it answers these
 * statements at most a third of the time, per process, and a read waits for at most about four of
 * their round trips (the statement in flight, the gathering, its own). On a saturated topology this
 * lowers and steadies the primary's CPU per standby read against a wait of one round trip, with
 * throughput and latency unchanged. The gathering is for company seen: when the last statement
 * served a single read, nothing says another is coming, and a lone client would wait the gathering
 * time at every read for nobody; so the next statement then waits only for the end of the event
 * loop's turn (`setImmediate`), as does a read that finds the primary idle for longer than the
 * gathering time, so that the requests whose bytes arrived in the same turn share one statement.
 */
export class PrimaryPosition {
  readonly #run: RunStatement;
  readonly #gatherMs: number;
  readonly #maxGatherMs: number;
  /** The recent mean time from sending a statement to its answer, in ms. */
  #roundTripMs = 0;
  #inFlight: Promise<WalPosition> | undefined;
  #next: Promise<WalPosition> | undefined;
  #answeredAt = Number.NEGATIVE_INFINITY;
  /** Reads waiting for the statement not sent yet. */
  #waiting = 0;
  /** Reads the statement sent last serves. */
  #servedLast = 0;
  #latest: WalPosition | undefined;
  #asked = 0;

  constructor(
    run: RunStatement,
    options: { readonly gatherMs?: number; readonly maxGatherMs?: number } = {},
  ) {
    this.#run = run;
    this.#gatherMs = options.gatherMs ?? 1;
    this.#maxGatherMs = Math.max(this.#gatherMs, options.maxGatherMs ?? 10);
  }

  /** A position the primary reported after this call: every commit acknowledged before the call is at or before it. */
  afterNow(): Promise<WalPosition> {
    // A statement not sent yet is sent after this call, so it serves this read too.
    if (this.#next !== undefined) {
      this.#waiting += 1;
      return this.#next;
    }
    this.#waiting = 1;
    const next = this.#ready().then(() => {
      this.#next = undefined;
      this.#servedLast = this.#waiting;
      return this.#send();
    });
    this.#next = next;
    return next;
  }

  /** Resolves when the next statement may be sent: after the one in flight, and the gathering time. */
  async #ready(): Promise<void> {
    await this.#inFlight?.then(noop, noop);
    const gather =
      this.#servedLast > 1 ? Math.min(this.#maxGatherMs, Math.max(this.#gatherMs, 2 * this.#roundTripMs)) : 0;
    const rest = this.#answeredAt + gather - performance.now();
    await new Promise<void>((resolve) => (rest > 0 ? setTimeout(resolve, rest) : setImmediate(resolve)));
  }

  /** The last position the primary reported, if any. */
  get latest(): WalPosition | undefined {
    return this.#latest;
  }

  /** How many of these statements were sent to the primary. */
  get asked(): number {
    return this.#asked;
  }

  #send(): Promise<WalPosition> {
    this.#asked += 1;
    const sentAt = performance.now();
    const answer = this.#run(PRIMARY_POSITION_SQL, []).then((rows) => {
      const position = parseWalPosition((rows[0] as { position?: unknown } | undefined)?.position);
      if (position === undefined) throw new Error("the primary reported no WAL position");
      const took = performance.now() - sentAt;
      // An exponential mean over the last few answers: one slow answer moves it by a fifth.
      this.#roundTripMs = this.#roundTripMs === 0 ? took : this.#roundTripMs * 0.8 + took * 0.2;
      if (this.#latest === undefined || position > this.#latest) this.#latest = position;
      return position;
    });
    this.#inFlight = answer;
    const done = () => {
      this.#answeredAt = performance.now();
      if (this.#inFlight === answer) this.#inFlight = undefined;
    };
    answer.then(done, done);
    return answer;
  }
}

function noop(): void {}
