import { type Kysely, sql } from "kysely";
import { sqlStateOf } from "../connection/sql-state.js";
import type { Database } from "../schema/database.js";
import { POSTS_PARTITION_SPAN } from "./post-partitions.js";

/** Pause between two runs, in milliseconds. */
const DEFAULT_INTERVAL_MS = 10_000;

/** Partitions kept ahead of the one that takes the next id. */
const DEFAULT_AHEAD = 2;

/** The caller may not make partitions (it does not own posts): no later run can either. */
const SQLSTATE_INSUFFICIENT_PRIVILEGE = "42501";

/** What {@link PartitionsAhead} needs besides the database. */
export interface PartitionsAheadOptions {
  /** Pause between two runs. Default 10 s. */
  readonly intervalMs?: number;
  /** Partitions kept ahead of the one that takes the next id. Default 2. */
  readonly ahead?: number;
  /** Told of a run that failed; the next run tries again (but after a refusal of privilege). */
  readonly onError?: (error: unknown) => void;
  /** Told after each run that made partitions, and how many ids are left after them. */
  readonly onMade?: (made: number, idsLeft: number) => void;
  /**
   * Told after each run that left fewer ids than one partition holds: the inserts will soon
   * fail, and runs are not making partitions (they fail, or the task is stopped elsewhere).
   */
  readonly onFewIdsLeft?: (idsLeft: number) => void;
}

/**
 * Keeps partitions of posts made ahead of the ids: at start and then every interval, calls
 * `posts_partitions_ahead` (migration 0011), which makes what is missing for the partition of
 * the next id and `ahead` more, and reads in the same statement how many ids the sequence may
 * still give before the last partition is full ({@link idsLeft}). posts has no open-ended
 * partition, so an insert past the last one fails (the HTTP API answers 503): this task is what
 * keeps that from happening, and `idsLeft` is what to alarm on. Several instances may run it at
 * once: the function serialises them and makes each partition once.
 *
 * Written by hand, as the trigram pending-list cleaner: a timer and one statement. The timer does
 * not keep the process alive; `close()` it before the database closes.
 */
export class PartitionsAhead {
  readonly #db: Kysely<Database>;
  readonly #intervalMs: number;
  readonly #ahead: number;
  readonly #onError: (error: unknown) => void;
  readonly #onMade: (made: number, idsLeft: number) => void;
  readonly #onFewIdsLeft: (idsLeft: number) => void;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #closed = false;
  #idsLeft: number | undefined;

  constructor(db: Kysely<Database>, options: PartitionsAheadOptions = {}) {
    const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    if (!(Number.isFinite(intervalMs) && intervalMs >= 0)) {
      throw new RangeError("the partitions' interval must be a non-negative number of milliseconds");
    }
    const ahead = options.ahead ?? DEFAULT_AHEAD;
    if (!(Number.isInteger(ahead) && ahead >= 0)) {
      throw new RangeError("the partitions kept ahead must be a non-negative integer");
    }
    this.#db = db;
    this.#intervalMs = intervalMs;
    this.#ahead = ahead;
    this.#onError = options.onError ?? (() => {});
    this.#onMade = options.onMade ?? (() => {});
    this.#onFewIdsLeft = options.onFewIdsLeft ?? (() => {});
  }

  /** Runs now, and every interval after each run until closed. Idempotent; never throws. */
  start(): void {
    if (this.#closed || this.#running !== undefined || this.#timer !== undefined) return;
    this.#run();
  }

  /**
   * Ids the sequence may still give before the last partition is full, as the last successful
   * run read it; `undefined` before one.
   */
  get idsLeft(): number | undefined {
    return this.#idsLeft;
  }

  /** Resolves once no run is under way (at once when none is). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** Cancels the next run and waits for one under way. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  #run(): void {
    this.#timer = undefined;
    this.#running = this.#makeAhead().finally(() => {
      this.#running = undefined;
      if (this.#closed) return;
      this.#timer = setTimeout(() => this.#run(), this.#intervalMs);
      // A due run does not keep a process alive that has nothing else to do.
      this.#timer.unref();
    });
  }

  async #makeAhead(): Promise<void> {
    try {
      const { rows } = await sql<{ made: number; ids_left: number }>`
        SELECT made, posts_partition_ids_left() AS ids_left
        FROM posts_partitions_ahead(${this.#ahead}::int) AS made`.execute(this.#db);
      const made = Number(rows[0]?.made ?? 0);
      const idsLeft = Number(rows[0]?.ids_left ?? 0);
      this.#idsLeft = idsLeft;
      if (made > 0) this.#onMade(made, idsLeft);
      if (idsLeft < POSTS_PARTITION_SPAN) this.#onFewIdsLeft(idsLeft);
    } catch (error) {
      if (sqlStateOf(error) === SQLSTATE_INSUFFICIENT_PRIVILEGE) this.#closed = true;
      this.#onError(error);
    }
  }
}
