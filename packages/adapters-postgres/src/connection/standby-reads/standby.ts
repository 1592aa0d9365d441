import type { RunStatement } from "../direct-statements.js";
import { waitUntil } from "../wait-until.js";
import { parseWalPosition, type WalPosition } from "./wal-position.js";

/**
 * How far a standby has replayed: `null` when the server is not in recovery (not a standby). A
 * promoted standby would keep answering the last position it replayed, static from then on, so
 * it is asked whether it is still in recovery: it answers null, and leaves the rotation.
 */
export const REPLAY_POSITION_SQL =
  "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() END)::text AS position";

/** The timings of a {@link Standby}. */
export interface StandbyTimings {
  /** The clock, in milliseconds. */
  readonly now: () => number;
  /** Pause between two checks of a standby that is behind while reads wait for it. */
  readonly pollIntervalMs: number;
  /** Pause between two attempts to reach a standby out of the rotation. */
  readonly probeIntervalMs: number;
  /**
   * How long a replay position learned from a standby is trusted without asking again. Replay
   * only moves forward while the server runs, but a standby that restarts may open for reads at
   * an earlier position, and a pooler between us and it hides the restart; no standby stops,
   * starts and recovers within this time.
   */
  readonly knowledgeTtlMs: number;
}

/** What a read waiting for a standby is told: it has replayed far enough, or not in time. */
interface Waiter {
  readonly target: WalPosition;
  readonly settle: (reached: boolean) => void;
}

/**
 * One hot standby: whether it is in the rotation, how far it is known to have replayed, and
 * what it answered. A standby leaves the rotation when it does not answer, and a probe every
 * `probeIntervalMs` brings it back once it answers as a standby again.
 */
export class Standby {
  readonly label: string;
  readonly run: RunStatement;
  readonly #timings: StandbyTimings;
  readonly #isUnavailable: (error: unknown) => boolean;
  #up = true;
  #reason: string | undefined;
  /** A replay position the standby had reached when it was learned, and when that was (the check's sending). */
  #known: WalPosition = -1n;
  #knownAt = Number.NEGATIVE_INFINITY;
  #lastReported: WalPosition | undefined;
  readonly #waiters = new Set<Waiter>();
  #polling = false;
  #probe: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** Reads this standby answered. */
  reads = 0;
  /** Replay checks it answered. */
  checks = 0;

  constructor(
    label: string,
    run: RunStatement,
    timings: StandbyTimings,
    isUnavailable: (e: unknown) => boolean,
  ) {
    this.label = label;
    this.run = run;
    this.#timings = timings;
    this.#isUnavailable = isUnavailable;
  }

  /** Whether the standby is in the rotation. */
  get up(): boolean {
    return this.#up;
  }

  /** Why the standby left the rotation, while it is out. */
  get reason(): string | undefined {
    return this.#reason;
  }

  /** The replay position it last reported, if it reported one since it joined the rotation. */
  get lastReported(): WalPosition | undefined {
    return this.#lastReported;
  }

  /** Whether the standby is in the rotation and known, recently enough, to have replayed `target`. */
  knows(target: WalPosition): boolean {
    return (
      this.#up && this.#known >= target && this.#timings.now() - this.#knownAt <= this.#timings.knowledgeTtlMs
    );
  }

  /** The highest replay position it is known to have reached, recently enough, or -1. */
  get known(): WalPosition {
    return this.#timings.now() - this.#knownAt <= this.#timings.knowledgeTtlMs ? this.#known : -1n;
  }

  /**
   * Forgets what the standby is known to have replayed: its pool opened a connection (perhaps
   * to a server that restarted) or lost one.
   */
  forget(): void {
    this.#known = -1n;
    this.#knownAt = Number.NEGATIVE_INFINITY;
  }

  /**
   * Resolves true as soon as the standby is known to have replayed `target`, false when it has
   * not by `deadline` (on the clock of the timings), leaves the rotation, or `abandon` fires.
   * Every read waiting for this standby shares one check at a time.
   */
  reach(target: WalPosition, deadline: number, abandon: AbortSignal): Promise<boolean> {
    if (this.knows(target)) return Promise.resolve(true);
    if (!this.#up || abandon.aborted) return Promise.resolve(false);
    return waitUntil(
      (settle) => {
        const waiter: Waiter = { target, settle };
        this.#waiters.add(waiter);
        void this.#poll();
        return () => this.#waiters.delete(waiter);
      },
      { signal: abandon, timeoutMs: Math.max(0, deadline - this.#timings.now()), otherwise: false },
    );
  }

  /**
   * Takes the standby out of the rotation after `error`, when the error says it cannot be
   * reached (anything else is a fault of one statement, not of the standby). Answers whether it did.
   */
  failed(error: unknown): boolean {
    if (!this.#isUnavailable(error)) return false;
    this.#leave(error instanceof Error ? error.message : String(error));
    return true;
  }

  /** Stops probing and lets every waiting read go. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#probe);
    for (const waiter of [...this.#waiters]) waiter.settle(false);
  }

  /**
   * Asks the standby how far it has replayed, and learns the answer; answers the position, or
   * why there is none (the standby did not answer, or is not in recovery).
   */
  async #ask(): Promise<WalPosition | string> {
    const sentAt = this.#timings.now();
    let rows: unknown[];
    try {
      rows = await this.run(REPLAY_POSITION_SQL, []);
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
    this.checks += 1;
    const position = parseWalPosition((rows[0] as { position?: unknown } | undefined)?.position);
    if (position === undefined) return "the server is not in recovery: it is not a standby";
    this.#lastReported = position;
    if (position > this.#known || this.#knownAt < sentAt) {
      // A later check of a server that restarted may report less: the newest answer wins.
      this.#known = position;
      this.#knownAt = sentAt;
    }
    return position;
  }

  /** Checks the standby while reads wait for it: again at once for reads that arrived during a check, after a pause otherwise. */
  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      while (this.#waiters.size > 0 && this.#up && !this.#closed) {
        const before = new Set(this.#waiters);
        const position = await this.#ask();
        if (typeof position === "string") {
          this.#leave(position);
          break;
        }
        let behind = false;
        for (const waiter of [...this.#waiters]) {
          if (waiter.target <= position) waiter.settle(true);
          else if (before.has(waiter)) behind = true;
        }
        if (behind) await delay(this.#timings.pollIntervalMs);
      }
    } finally {
      this.#polling = false;
    }
  }

  #leave(reason: string): void {
    this.forget();
    this.#lastReported = undefined;
    this.#reason = reason;
    for (const waiter of [...this.#waiters]) waiter.settle(false);
    if (!this.#up) return;
    this.#up = false;
    this.#scheduleProbe();
  }

  #scheduleProbe(): void {
    if (this.#closed) return;
    this.#probe = setTimeout(async () => {
      const answer = await this.#ask();
      if (this.#closed) return;
      if (typeof answer === "string") {
        this.#reason = answer;
        this.#scheduleProbe();
        return;
      }
      this.#reason = undefined;
      this.#up = true;
    }, this.#timings.probeIntervalMs);
    // A probe alone must not keep the process alive.
    this.#probe.unref?.();
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
