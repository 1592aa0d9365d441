import { setTimeout as sleep } from "node:timers/promises";
import type { ChangeEventLog, PostChangeEvent } from "@posts/domain";
import { type Kysely, sql } from "kysely";
import { isProvedUncommitted } from "../connection/pool-for-kysely.js";
import { type PreparedStatement, prepare } from "../connection/prepare.js";
import { parseInt8 } from "../connection/type-parsers.js";
import type { Notifications } from "../notifications/notifications.js";
import type { Database } from "../schema/database.js";

/** The channel the sequencer notifies, with the newest number, at each commit of numbers. */
export const NUMBERED_CHANNEL = "post_events_numbered";
// One advisory lock key for the sequencer, the same in every instance ("postevnt" in ASCII).
const SEQUENCER_LOCK = sql.raw("8101829370236954228");
// Rows numbered per transaction, so that a backlog never makes one long transaction.
const BATCH = 5000;
const DEFAULT_CHECK_INTERVAL_MS = 5000;
// How soon to try again when another instance holds the sequencer's lock: it may have taken its
// snapshot before our change committed, and then leaves our row for us.
const BUSY_RETRY_MS = 20;
// The least time from the start of one run of the sequencer to the next while changes keep
// waking it: under a stream of writes it numbers them in batches instead of one short
// transaction per write, which the writes would pay for; a lone change is numbered at once.
const MIN_RUN_INTERVAL_MS = 50;
// The byte bound of a read that asks for none: larger than any sum of texts the table can hold
// in one page, and a bigint parameter as the sum it is compared with.
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** Options of {@link PostgresChangeEventLog}. */
export interface PostgresChangeEventLogOptions {
  /** The database's LISTEN/NOTIFY; without it, readers in other processes hear of numbers only at the periodic check. */
  readonly notifications?: Notifications;
  /**
   * How often numbering and the newest number are checked without being woken: what numbers a
   * change made outside this service (a statement of an operator's own), and a safety net for
   * notifications lost with a connection. Default 5000 ms.
   */
  readonly checkIntervalMs?: number;
  /** Told of each failure of the sequencer or the check, which the next notification or check retries. */
  readonly onError?: (error: unknown) => void;
  /**
   * How many changes of primary the pool has seen (`DatabaseHandle.primaryStats`). After one, the
   * sequencer looks for the rows still to number from the lowest transaction id again: a
   * promoted standby gives ids from past the last it replayed, which may lie below the floor
   * learned on the old primary (ids it gave that never reached the standby).
   */
  readonly primaryChanges?: () => number;
}

interface EventRow {
  readonly number: number | null;
  readonly type: "post.created" | "post.updated" | "post.deleted";
  readonly post_id: number;
  readonly title: string | null;
  readonly content: string | null;
  readonly created_at: Date | null;
  readonly updated_at: Date | null;
  readonly author_id: number;
  readonly author_email: string | null;
  readonly occurred_at: Date;
}

/** The one mapping from an outbox row to the domain's event. */
function toEvent(row: EventRow): PostChangeEvent {
  const head = {
    number: parseInt8(row.number ?? 0),
    postId: parseInt8(row.post_id),
    occurredAt: row.occurred_at,
  };
  if (row.type === "post.deleted") return { type: row.type, ...head };
  return {
    type: row.type,
    ...head,
    post: {
      id: head.postId,
      title: row.title ?? "",
      content: row.content ?? "",
      createdAt: row.created_at ?? row.occurred_at,
      updatedAt: row.updated_at ?? row.occurred_at,
      author: { id: parseInt8(row.author_id), email: row.author_email ?? "" },
    },
  };
}

/**
 * The change event log in the `post_events` table, and its sequencer.
 *
 * A trigger on `posts` writes one row per changed post in the change's own transaction. The
 * process that made the change then calls {@link PostgresChangeEventLog.wake} (the repositories
 * do, given `onChange`), which runs the sequencer: one short transaction which, holding a
 * transaction-scoped advisory lock (so one at a time, over all instances), gives every committed
 * row still without a number the numbers after the greatest given, in insertion order, and
 * notifies `post_events_numbered` with the newest. Numbers are thus taken after commit, in one
 * transaction at a time, so a reader sees either a whole batch or none of it and never a later
 * number without the earlier ones; a transaction that stays open simply has its event numbered
 * after those that committed first. A post's changes wait for each other on the post's row
 * lock, so each one's row is inserted after the previous committed, and numbered after it. A
 * crash of the sequencer rolls its numbers back.
 *
 * Why the writer wakes its own sequencer rather than the trigger notifying every instance: a
 * transaction that notifies takes a database-wide lock from its notification until the end of
 * its commit, so that notifications are queued in commit order; one `NOTIFY` per change would put
 * every write's commit (its WAL flush included) in one line, and costs writes about a third of
 * their throughput. Only the sequencer notifies, once per batch (the cost of events to writes:
 * bench/RESULTS.md#events).
 *
 * {@link PostgresChangeEventLog.start} listens and numbers what is waiting; subscribers hear
 * of `post_events_numbered`. A change no process of the service woke for (made by an
 * operator's statement), and notifications lost with their connection, wait for the check every
 * `checkIntervalMs`, which does both.
 */
export class PostgresChangeEventLog implements ChangeEventLog {
  readonly #db: Kysely<Database>;
  readonly #options: PostgresChangeEventLogOptions;
  readonly #listeners = new Set<(lastNumber: number) => void>();
  readonly #readAfter: PreparedStatement<{ after: number; limit: number; maxBytes: number }, EventRow>;
  readonly #stops: (() => Promise<void>)[] = [];
  #timer: NodeJS.Timeout | undefined;
  #sequencing: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #lastHeard = 0;
  // Where the scan of the rows still to number starts: a transaction id (xid8, as text) below
  // which every row is numbered. Its own runs move it; a run of another instance leaves it
  // behind, which costs a longer scan and nothing else. A transaction left open anywhere on the
  // server holds it back for as long (and vacuum too), so the scan is then as long as before.
  #floor = "0";
  /** The changes of primary seen when the floor was last learned. */
  #floorPrimaryChanges = 0;

  constructor(db: Kysely<Database>, options: PostgresChangeEventLogOptions = {}) {
    this.#db = db;
    this.#options = options;
    // Compiled once and, on a server, a named statement: the feed's pages and the relay's batches
    // read the log many times a second under writes, and each read built the query again in
    // Kysely and had the server parse and plan it.
    this.#readAfter = prepare(db, (p: { after: number; limit: number; maxBytes: number }) =>
      // The running total of the text before each event decides whether it is read: sizes come
      // from octet_length, which reads a value's stored length without fetching it, so the rows
      // past the bound cost an index entry and a heap tuple each, never their megabytes of text.
      sql<EventRow>`
        SELECT number, type, post_id, title, content, created_at, updated_at, author_id,
               author_email, occurred_at
        FROM (
          SELECT number, type, post_id, title, content, created_at, updated_at, author_id,
                 author_email, occurred_at,
                 sum(coalesce(octet_length(title), 0) + coalesce(octet_length(content), 0)
                     + coalesce(octet_length(author_email), 0))
                   OVER (ORDER BY number ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS text_before
          FROM post_events
          WHERE number > ${p.after}
          ORDER BY number
          LIMIT ${p.limit}
        ) page
        WHERE coalesce(page.text_before, 0) < ${p.maxBytes}
        ORDER BY number`.compile(db),
    );
  }

  /**
   * Listens for changes and numbers, numbers what committed while nobody listened, and starts the
   * periodic check. Resolves once listening; call it once, and {@link close} at shutdown.
   */
  async start(): Promise<void> {
    const { notifications } = this.#options;
    if (notifications !== undefined) {
      this.#stops.push(
        await notifications.listen(NUMBERED_CHANNEL, (payload) => {
          // Undefined: the listening connection is back, and what was notified meanwhile is lost.
          if (payload === undefined) {
            void this.#check();
            return;
          }
          const last = Number(payload);
          if (Number.isSafeInteger(last)) this.#tell(last);
        }),
      );
    }
    this.wake();
    this.#timer = setInterval(
      () => void this.#check(),
      this.#options.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS,
    );
    this.#timer.unref();
  }

  /** Stops listening and checking, and waits for a sequencer run under way. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    for (const stop of this.#stops.splice(0)) await stop().catch(() => {});
    await this.#sequencing;
    this.#listeners.clear();
  }

  /**
   * Runs the sequencer soon, unless it is running in this process, in which case it runs again
   * once done: a change that committed during a run may be outside that run's snapshot. Call it
   * after each change committed (the repositories' `onChange`): its event is numbered, and
   * readers in every instance hear of it, without waiting for the periodic check.
   */
  wake(): void {
    if (this.#closed) return;
    if (this.#sequencing !== undefined) {
      this.#again = true;
      return;
    }
    this.#sequencing = this.#sequenceUntilDone().finally(() => {
      this.#sequencing = undefined;
    });
  }

  async #sequenceUntilDone(): Promise<void> {
    do {
      this.#again = false;
      const started = performance.now();
      try {
        const numbered = await this.numberPending();
        if (numbered === "busy") {
          await sleep(BUSY_RETRY_MS);
          this.#again = true;
        } else if (numbered === BATCH) {
          // A backlog: the next batch at once.
          this.#again = true;
          continue;
        }
      } catch (error) {
        // A run the server's shutdown cut short before its COMMIT took effect numbered nothing:
        // run again at once (the next connection finds the new primary, or fails as any other).
        // Running again is safe whatever happened, as a run numbers only the rows still without
        // a number; otherwise the next wake or the periodic check tries again.
        if (isProvedUncommitted(error)) this.#again = true;
        else this.#options.onError?.(error);
      }
      const wait = MIN_RUN_INTERVAL_MS - (performance.now() - started);
      if (this.#again && wait > 0) await sleep(wait);
    } while (this.#again && !this.#closed);
  }

  /**
   * One run of the sequencer: numbers the committed events that have no number yet (at most a
   * batch), in one transaction, and answers how many; `"busy"` when another run, in this process
   * or another, holds the sequencer's lock. Exposed for tests; `wake` is how the log runs it.
   */
  async numberPending(): Promise<number | "busy"> {
    let horizon: string | undefined;
    this.#forgetFloorAfterPrimaryChange();
    const learnedOn = this.#floorPrimaryChanges;
    const numbered = await this.#db.transaction().execute(async (trx) => {
      const lock = await sql<{ locked: boolean }>`
        SELECT pg_try_advisory_xact_lock(${SEQUENCER_LOCK}) AS locked`.execute(trx);
      if (lock.rows[0]?.locked !== true) return "busy";
      // Each statement of a READ COMMITTED transaction sees what committed before it began: here,
      // every number given by the runs that held the lock before this one.
      //
      // The rows still to number are looked for from the floor up, in the index of such rows by
      // writing transaction: the entries of rows numbered since the table was last vacuumed stay
      // in that index, and a scan from its start walked all of them on every run. The statement
      // also answers its snapshot's xmin: every transaction below it had ended when the snapshot
      // was taken, so their rows were all visible to this statement and are numbered by it
      // (unless the batch was full); a transaction still running, or not yet begun, has an id
      // at or above it. That is the next run's floor.
      const done = await sql<{ last: number | null; count: number; horizon: string }>`
        WITH base AS (SELECT coalesce(max(number), 0) AS last FROM post_events),
        todo AS (
          SELECT seq, row_number() OVER (ORDER BY seq) AS rank
          FROM post_events WHERE number IS NULL AND xid >= ${this.#floor}::xid8
          ORDER BY seq LIMIT ${BATCH}
        ),
        numbered AS (
          UPDATE post_events e SET number = base.last + todo.rank, numbered_at = now()
          FROM base, todo WHERE e.seq = todo.seq
          RETURNING e.number
        )
        SELECT max(number) AS last, count(*) AS count,
               pg_snapshot_xmin(pg_current_snapshot())::text AS horizon
        FROM numbered`.execute(trx);
      const row = done.rows[0];
      const count = parseInt8(row?.count ?? 0);
      if (row !== undefined && count < BATCH) horizon = row.horizon;
      if (count > 0 && row?.last !== null && row?.last !== undefined) {
        await sql`SELECT pg_notify(${NUMBERED_CHANNEL}, ${String(parseInt8(row.last))})`.execute(trx);
      }
      return count;
    });
    // Raised only once the numbers are committed: rolled back, they would leave rows still to
    // number below the new floor, where no run would look again.
    // A change of primary seen during the run: the horizon may be the old primary's.
    if (this.#forgetFloorAfterPrimaryChange() || this.#floorPrimaryChanges !== learnedOn) return numbered;
    if (horizon !== undefined && BigInt(horizon) > BigInt(this.#floor)) this.#floor = horizon;
    return numbered;
  }

  /** Lowers the floor to the bottom when the pool has seen a change of primary since it was learned; answers whether it did. */
  #forgetFloorAfterPrimaryChange(): boolean {
    const changes = this.#options.primaryChanges?.() ?? 0;
    if (changes === this.#floorPrimaryChanges) return false;
    this.#floorPrimaryChanges = changes;
    this.#floor = "0";
    return true;
  }

  // One cheap statement (two index probes), so that the check costs next to nothing while idle.
  async #check(): Promise<void> {
    if (this.#closed) return;
    this.#forgetFloorAfterPrimaryChange();
    try {
      const { rows } = await sql<{ last: number | null; pending: boolean }>`
        SELECT (SELECT max(number) FROM post_events) AS last,
               EXISTS (SELECT 1 FROM post_events WHERE number IS NULL AND xid >= ${this.#floor}::xid8) AS pending`.execute(
        this.#db,
      );
      const row = rows[0];
      if (row?.pending === true) this.wake();
      this.#tell(row?.last === null || row?.last === undefined ? 0 : parseInt8(row.last));
    } catch (error) {
      this.#options.onError?.(error);
    }
  }

  #tell(last: number): void {
    // Only news is worth waking every reader for: a lower number is a notification overtaken.
    if (last <= this.#lastHeard) return;
    this.#lastHeard = last;
    for (const listener of this.#listeners) listener(last);
  }

  async readAfter(after: number, limit: number, maxBytes = UNBOUNDED): Promise<readonly PostChangeEvent[]> {
    return (await this.#readAfter({ after, limit, maxBytes })).map(toEvent);
  }

  async lastNumber(): Promise<number> {
    const row = await this.#db
      .selectFrom("post_events")
      .select((eb) => eb.fn.max("number").as("last"))
      .executeTakeFirst();
    return row?.last === null || row?.last === undefined ? 0 : parseInt8(row.last);
  }

  subscribe(listener: (lastNumber: number) => void): () => void {
    // Wrapped, so that one function subscribed twice is two subscriptions: the port's promise,
    // kept in these same lines by the domain testing kit's log, which production code may not import.
    const own = (last: number) => listener(last);
    this.#listeners.add(own);
    return () => {
      this.#listeners.delete(own);
    };
  }

  async deleteNumberedBefore(before: Date): Promise<number> {
    // Only a prefix of the numbers goes, up to the first event numbered at or after `before`, so
    // that what is kept has no gap even if the database's clock stepped back; and never the
    // newest, from which numbering goes on. The first kept is found by walking the number index
    // from the oldest (`numbered_at` has no index of its own: every event would pay for its entry,
    // and the walk reads only the rows the statement deletes anyway, and one more).
    const result = await sql`
      DELETE FROM post_events
      WHERE number < coalesce(
        (SELECT min(number) FROM post_events WHERE numbered_at >= ${before.toISOString()}),
        (SELECT max(number) FROM post_events))`.execute(this.#db);
    return Number(result.numAffectedRows ?? 0);
  }
}
