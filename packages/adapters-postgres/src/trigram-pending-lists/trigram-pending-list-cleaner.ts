import { type Kysely, sql } from "kysely";
import { sqlStateOf } from "../connection/sql-state.js";
import type { Database } from "../schema/database.js";

/** Shortest pause between two merges, in milliseconds, while writes go on. */
const DEFAULT_INTERVAL_MS = 200;

/** The caller may not merge the lists (it does not own the indexes): no later merge can either. */
const SQLSTATE_INSUFFICIENT_PRIVILEGE = "42501";

/** What {@link TrigramPendingListCleaner} needs besides the database. */
export interface TrigramPendingListCleanerOptions {
  /** Shortest pause between two merges while writes go on. Default 200 ms. */
  readonly intervalMs?: number;
  /** Told of a merge that failed; the next write tries again (but after a refusal of privilege). */
  readonly onError?: (error: unknown) => void;
}

/**
 * Merges the GIN pending lists of the posts' partitions (their two trigram indexes, their
 * indexes of characters and of pairs of characters, and their index of pairs of words) into the
 * indexes, in a statement of its own on a pool connection, soon after
 * this process wrote posts, so that no request's statement has to.
 *
 * A GIN index with `fastupdate` (PostgreSQL's default) appends the entries of each new row
 * version to a pending list, and the statement whose insert finds the list past
 * `gin_pending_list_limit` (4 MB) merges the whole list into the index before it commits: tens to
 * hundreds of milliseconds. Every PATCH adds a row version with entries in both trigram indexes,
 * and the service answers concurrent updates with one statement (`owned-writes.ts`), so one merge
 * held back every update of that statement: the tail of PATCH's latency. While a merge runs, a
 * writer that finds the list too long leaves it to that merge instead of waiting (PostgreSQL takes
 * the merge's lock conditionally for writers), so merging often enough here keeps the lists short
 * of the limit and the merges off the requests. Short lists also keep searches fast: every search
 * through a trigram index reads its whole pending list.
 *
 * Written by hand: a timer and one statement (`gin_clean_pending_list`); autovacuum also merges
 * the lists, but only when it vacuums the table, far too seldom under a stream of updates.
 */
export class TrigramPendingListCleaner {
  readonly #db: Kysely<Database>;
  readonly #intervalMs: number;
  readonly #onError: (error: unknown) => void;
  #timer: NodeJS.Timeout | undefined;
  #merging: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #merged = 0;

  constructor(db: Kysely<Database>, options: TrigramPendingListCleanerOptions = {}) {
    const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    if (!(Number.isFinite(intervalMs) && intervalMs >= 0)) {
      throw new RangeError("the pending-list merge interval must be a non-negative number of milliseconds");
    }
    this.#db = db;
    this.#intervalMs = intervalMs;
    this.#onError = options.onError ?? (() => {});
  }

  /**
   * Call after posts were written: a merge follows within the interval, unless one is already
   * due, or under way (another then follows it). Never throws.
   */
  wake(): void {
    if (this.#closed) return;
    if (this.#merging !== undefined) {
      this.#again = true;
      return;
    }
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#merging = this.#merge().finally(() => {
        this.#merging = undefined;
        if (this.#again) {
          this.#again = false;
          this.wake();
        }
      });
    }, this.#intervalMs);
    // A pending merge does not keep a process alive that has nothing else to do.
    this.#timer.unref();
  }

  /** Pending-list pages merged by this cleaner since it was made (for tests and stats). */
  get merged(): number {
    return this.#merged;
  }

  /** Resolves once no merge is due or under way (at once when none is). */
  async idle(): Promise<void> {
    while (this.#timer !== undefined || this.#merging !== undefined) {
      await (this.#merging ?? new Promise((resolve) => setTimeout(resolve, this.#intervalMs)));
    }
  }

  /** Cancels a merge that is due and waits for one under way. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#merging;
  }

  async #merge(): Promise<void> {
    try {
      // The indexes of posts are partitioned: a partitioned index has no pending list, each
      // partition's index has its own. `to_regclass` answers null for an index that is not there
      // (a schema of another version), which then has no partitions to merge.
      const { rows } = await sql<{ merged: number | null }>`
        SELECT coalesce(sum(gin_clean_pending_list(i.inhrelid)), 0) AS merged
        FROM pg_inherits i
        WHERE i.inhparent IN (to_regclass('posts_title_trgm_idx'), to_regclass('posts_content_trgm_idx'),
                              to_regclass('posts_chars_idx'), to_regclass('posts_char_pairs_idx'),
                              to_regclass('posts_word_pairs_idx'))`.execute(this.#db);
      this.#merged += Number(rows[0]?.merged ?? 0);
    } catch (error) {
      if (sqlStateOf(error) === SQLSTATE_INSUFFICIENT_PRIVILEGE) this.#closed = true;
      this.#onError(error);
    }
  }
}
