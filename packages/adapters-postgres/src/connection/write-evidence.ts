import { type RawBuilder, sql } from "kysely";

/**
 * The columns a write statement adds to each row it returns so that, if its connection is lost
 * before its commit is confirmed, `poolForKysely` can find out whether it committed (see
 * {@link RESOLVE_WRITE}): the transaction's id (null until the transaction has written
 * anything), when the transaction started, in microseconds since the epoch, the last value the
 * outbox's sequence had given when the row was made (every event of this transaction comes
 * after it), and `postId`, the post the row reports written (null when it wrote none). All come
 * with the rows, before the commit, which in the extended protocol happens at the Sync after
 * the statement's CommandComplete: nothing is asked on the way of a successful write.
 */
export function writeEvidence(postId: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`pg_current_xact_id_if_assigned() AS written_xid,
             (extract(epoch FROM now()) * 1000000)::int8 AS written_at,
             (SELECT last_value FROM post_events_seq_seq) AS written_floor,
             ${postId} AS written_post`;
}

/** What the rows of a write statement tell of its transaction: see {@link writeEvidence}. */
export interface WriteEvidence {
  /** The transaction's id (xid8, as text). */
  readonly xid: string;
  /** When it started, in microseconds since the epoch (int8, as text). */
  readonly startedAt: string;
  /** A value of `post_events.seq` at or below every event of the transaction (as text). */
  readonly floor: string;
  /** The posts whose events the transaction wrote (int8, as text); at least one. */
  readonly posts: readonly string[];
}

/**
 * The evidence the rows of a statement made with {@link writeEvidence} carry, or undefined
 * when they carry none (another statement, no row received, or a transaction that wrote no
 * post: there is then no event to find).
 */
export function evidenceIn(rows: readonly unknown[]): WriteEvidence | undefined {
  let xid: string | undefined;
  let startedAt: string | undefined;
  let floor: string | undefined;
  const posts = new Set<string>();
  for (const row of rows) {
    if (typeof row !== "object" || row === null || !("written_xid" in row)) return undefined;
    const { written_xid, written_at, written_floor, written_post } = row as Record<string, unknown>;
    if (written_post == null) continue;
    // A row reports a post written only after the write assigned the transaction its id.
    if (written_xid == null || written_at == null || written_floor == null) return undefined;
    if (xid !== undefined && (xid !== String(written_xid) || startedAt !== String(written_at)))
      return undefined;
    xid = String(written_xid);
    startedAt = String(written_at);
    floor =
      floor === undefined || BigInt(written_floor as string) < BigInt(floor) ? String(written_floor) : floor;
    posts.add(String(written_post));
  }
  if (xid === undefined || startedAt === undefined || floor === undefined) return undefined;
  return { xid, startedAt, floor, posts: [...posts] };
}

/**
 * Asks the server a connection reaches whether the transaction of `evidence` committed there:
 * parameters `[xid, startedAt, floor, posts]`. Answers `status`: "standby" on a server in
 * recovery (whose answer would say nothing of the primary: a standby behind the primary sees a
 * committed transaction as in progress, or in its future), else `pg_xact_status`'s ("committed",
 * "aborted", "in progress", or null when the server has forgotten it); and `found`, how many of
 * the posts have an event row of that transaction there: `xid` equal, `xact_start` the same
 * microsecond. `pg_xact_status` fails with "transaction ID … is in the future" (22023) when the
 * server never gave that id: the transaction never ran there.
 *
 * Why the rows prove the write's own commit when `pg_xact_status` says committed: after an
 * unplanned promotion, the new primary may give again an id whose transaction on the old
 * primary it never received, so the status alone may describe another transaction. That other
 * transaction started on the promoted server, after its promotion, so not at the microsecond the
 * write's started at on the old primary; its events would also have to name the same posts. An
 * event row that matches is written by the write's transaction and no other; and its status is
 * that of the transaction that wrote it. The id is the 64-bit one (with its epoch), so that a
 * wraparound cannot make it another's either.
 *
 * The rows found are locked (FOR KEY SHARE, which the sequencer's numbering does not conflict
 * with): the lock assigns this statement's transaction an id and a WAL record, so that its own
 * commit waits for the synchronous standby like a write's, and is confirmed only once the
 * standby has the WAL up to it, the found commit included. A commit the standby did not confirm
 * is then never acknowledged on its behalf. On a standby the lock is refused (25006).
 */
export const RESOLVE_WRITE = `
  WITH found AS (
    SELECT post_id FROM post_events
    WHERE seq >= $3::int8 AND xid = $1::xid8
      AND (extract(epoch FROM xact_start) * 1000000)::int8 = $2::int8
      AND post_id = ANY($4::int8[])
    FOR KEY SHARE
  )
  SELECT CASE WHEN pg_is_in_recovery() THEN 'standby' ELSE pg_xact_status($1::xid8) END AS status,
         (SELECT count(DISTINCT post_id) FROM found)::int4 AS found`;

/** The parameters of {@link RESOLVE_WRITE} for `evidence`. */
export function resolveParameters(evidence: WriteEvidence): unknown[] {
  return [evidence.xid, evidence.startedAt, evidence.floor, evidence.posts];
}
