import {
  type ExpectedVersions,
  err,
  type OwnedWriteFailure,
  ok,
  type PostDeletion,
  type PostUpdate,
  type ReadPost,
  type Result,
} from "@posts/domain";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import { writeEvidence } from "../../connection/write-evidence.js";
import { type ReadRow, toReadPost } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { contentOrSizeOf } from "./read-statements.js";
import { loadError } from "./turn-batches.js";
import { writesTogether } from "./writes-together.js";

/** What an owned write (update, delete) learns in its one statement; no row when no post had the id. */
interface OwnedWriteRow {
  /** The author of the post the id named when the statement started. */
  readonly owner_id: number;
  /** The post's version (updated_at) when the statement started. */
  readonly seen_version: Date;
  /**
   * Whether the post was still there after a conditional write of its author, at an expected
   * version when the statement started, lost the row to a concurrent write (which then moved its
   * version on); false in every other case.
   */
  readonly remains: boolean;
}

/**
 * An update's answer: the post as changed, its content only up to `OUTLINE_ABOVE_BYTES` (as the
 * reads select it), or nulls when it did not change.
 */
type UpdateRow = OwnedWriteRow & { readonly [K in keyof ReadRow]: ReadRow[K] | null };

/** A delete's answer: the id of the post removed, or null when none was. */
type DeleteRow = OwnedWriteRow & { readonly deleted_id: number | null };

/** An update's values; an absent field or no expected versions is `null`. */
interface UpdateValues {
  readonly id: number;
  readonly authorId: number;
  readonly title: string | null;
  readonly content: string | null;
  readonly now: string;
  /** The expected versions, as ISO 8601 instants; `null` for an unconditional update. */
  readonly versions: readonly string[] | null;
}

/** The updates of one statement, one array element each: {@link UpdateValues} as columns. */
interface ManyUpdateValues {
  readonly ids: readonly number[];
  readonly authorIds: readonly number[];
  readonly titles: readonly (string | null)[];
  readonly contents: readonly (string | null)[];
  readonly nows: readonly string[];
  /** Each update's expected versions as an array literal (`{…,…}`), or null. */
  readonly versions: readonly (string | null)[];
}

/**
 * What an update answers of the content: the content when it is at most `OUTLINE_ABOVE_BYTES`,
 * else `null` (an outline), and its size either way, as the reads answer it. Why: a change of the
 * title of a post of megabytes would otherwise send the whole content back, which the service
 * then holds outside the budget of large posts; `octet_length` of a stored (TOASTed) content
 * reads only its header, and a content the update did not change stays where it was stored.
 */
const CONTENT_OR_SIZE = contentOrSizeOf("p");

/** A deletion's values; `versions` as in {@link UpdateValues}. */
interface DeleteValues {
  readonly id: number;
  readonly authorId: number;
  readonly versions: readonly string[] | null;
}

/**
 * The writes of one author to one existing post (update, delete), each atomic on its own, and
 * the diagnosis of one that changed nothing. Never routed to a standby: a write and what decides
 * it read the primary. Change events need nothing here: the posts table's trigger writes each
 * write's event in the write's own transaction, so a write and its event commit together or not
 * at all.
 *
 * A delete is one statement. Updates asked for in one turn of the event loop go to the database
 * as one statement, a lone one as the statement of one update, for the reason creations do
 * (`plain-creation.ts`: a statement's and a commit's fixed costs outweigh the write of a row).
 * Each update in it is checked and diagnosed exactly as alone: the statement is the one-update
 * statement with every value a column of the updates' arrays. Two updates of one post never
 * share a statement (the later ones each go alone, after it), since one statement changes a row
 * once. The statement locks its posts in the order of their ids before it changes any, so that
 * two such statements, in this process or another, never wait for each other in a circle; an
 * account's deletion still can (its cascade locks its posts in another order), and then, as on
 * any failure of the statement, its updates are retried one by one (`writesTogether`).
 */
export class OwnedWrites {
  readonly #update: PreparedStatement<UpdateValues, UpdateRow>;
  readonly #updateMany: PreparedStatement<ManyUpdateValues, UpdateRow & { readonly ord: number }>;
  readonly #updates: (values: UpdateValues) => Promise<UpdateRow | undefined>;
  readonly #delete: PreparedStatement<DeleteValues, DeleteRow>;

  // One statement each, whichever fields change and whether versions are expected: an absent
  // field keeps its value (COALESCE) and no versions match any; for an update by primary key
  // this plans and runs as a statement written for that one case would.
  constructor(db: Kysely<Database>) {
    this.#update = prepare(db, (p: UpdateValues) =>
      // UPDATE locks the row and, under concurrency, re-reads its newest version and re-checks the
      // WHERE on it before assigning, with the newest values of the fields it keeps: so a
      // concurrent change of the other field survives (there is no read-modify-write of the whole
      // post), and of several writers expecting one version exactly one finds it.
      // updated_at is nextUpdatedAt(previous, now) from the domain, on the locked row: stored
      // timestamps have millisecond precision, so "now if later, else previous + 1 ms".
      sql<UpdateRow>`
        WITH target AS (
          SELECT id, user_id, updated_at FROM posts WHERE id = ${p.id}
        ), updated AS (
          UPDATE posts AS p
          SET title = COALESCE(${p.title}::text, p.title),
              content = COALESCE(${p.content}::text, p.content),
              updated_at = GREATEST(${p.now}::timestamptz, p.updated_at + interval '1 millisecond')
          FROM target
          WHERE p.id = target.id AND target.user_id = ${p.authorId} AND ${versionMatches(p.versions)}
          RETURNING p.id, p.title, ${CONTENT_OR_SIZE}, p.created_at, p.updated_at, p.user_id
        ), ${remainsAfterLostRace(p, sql`updated`)}
        SELECT target.user_id AS owner_id, target.updated_at AS seen_version,
               EXISTS (SELECT FROM remains) AS remains,
               updated.id, updated.title, updated.content, updated.content_bytes,
               updated.created_at, updated.updated_at,
               users.id AS author_id, users.email AS author_email, ${writeEvidence(sql`updated.id`)}
        FROM target
        LEFT JOIN updated ON true
        LEFT JOIN users ON users.id = updated.user_id`.compile(db),
    );

    // The statement above for many updates. `ord` is an update's place in the arrays. `locked`
    // takes the row locks of the posts whose author asks, in the order of their ids, before the
    // update changes any (an ARRAY(...) subquery runs whole, once, before the scan that uses
    // it): what the one-update statement's UPDATE does for its one row, row by row here. A post
    // changed meanwhile is locked at its newest version, which the update then checks again.
    this.#updateMany = prepare(db, (p: ManyUpdateValues) =>
      sql<UpdateRow & { readonly ord: number }>`
        WITH asked AS (
          SELECT * FROM unnest(${p.ids}::int8[], ${p.authorIds}::int8[], ${p.titles}::text[],
                               ${p.contents}::text[], ${p.nows}::timestamptz[], ${p.versions}::text[])
            WITH ORDINALITY AS a(id, author_id, title, content, now, versions, ord)
        ), target AS (
          SELECT asked.ord, asked.author_id, asked.title, asked.content, asked.now,
                 asked.versions::timestamptz[] AS versions, posts.id, posts.user_id, posts.updated_at
          FROM asked JOIN posts ON posts.id = asked.id
        ), locked AS (
          SELECT posts.id FROM posts
          WHERE posts.id IN (SELECT target.id FROM target WHERE target.user_id = target.author_id)
          ORDER BY posts.id
          FOR NO KEY UPDATE
        ), updated AS (
          UPDATE posts AS p
          SET title = COALESCE(target.title, p.title),
              content = COALESCE(target.content, p.content),
              updated_at = GREATEST(target.now, p.updated_at + interval '1 millisecond')
          FROM target
          WHERE p.id = target.id AND target.user_id = target.author_id
            AND p.id = ANY(ARRAY(SELECT id FROM locked))
            AND (target.versions IS NULL OR p.updated_at = ANY(target.versions))
          RETURNING target.ord, p.id, p.title, ${CONTENT_OR_SIZE}, p.created_at, p.updated_at, p.user_id
        ), remains AS (
          SELECT target.ord FROM target JOIN posts ON posts.id = target.id
          WHERE NOT EXISTS (SELECT FROM updated WHERE updated.ord = target.ord)
            AND target.user_id = target.author_id AND target.updated_at = ANY(target.versions)
          FOR KEY SHARE OF posts
        )
        SELECT target.ord, target.user_id AS owner_id, target.updated_at AS seen_version,
               EXISTS (SELECT FROM remains WHERE remains.ord = target.ord) AS remains,
               updated.id, updated.title, updated.content, updated.content_bytes,
               updated.created_at, updated.updated_at,
               users.id AS author_id, users.email AS author_email, ${writeEvidence(sql`updated.id`)}
        FROM target
        LEFT JOIN updated ON updated.ord = target.ord
        LEFT JOIN users ON users.id = updated.user_id`.compile(db),
    );
    this.#updates = writesTogether<UpdateValues, UpdateRow | undefined>({
      alone: (values) => this.#updateOne(values),
      together: (asked) => this.#updateAll(asked),
      contentOf: (values) => values.content,
    });

    this.#delete = prepare(db, (p: DeleteValues) =>
      sql<DeleteRow>`
        WITH target AS (
          SELECT id, user_id, updated_at FROM posts WHERE id = ${p.id}
        ), deleted AS (
          DELETE FROM posts AS p USING target
          WHERE p.id = target.id AND target.user_id = ${p.authorId} AND ${versionMatches(p.versions)}
          RETURNING p.id
        ), ${remainsAfterLostRace(p, sql`deleted`)}
        SELECT target.user_id AS owner_id, target.updated_at AS seen_version,
               EXISTS (SELECT FROM remains) AS remains, deleted.id AS deleted_id,
               ${writeEvidence(sql`deleted.id`)}
        FROM target LEFT JOIN deleted ON true`.compile(db),
    );
  }

  /** `PostRepository.update`. */
  async update(update: PostUpdate): Promise<Result<ReadPost, OwnedWriteFailure>> {
    const { title, content } = update.changes;
    const values: UpdateValues = {
      id: update.id,
      authorId: update.authorId,
      title: title ?? null,
      content: content ?? null,
      now: update.now.toISOString(),
      versions: isoInstants(update.expectedVersions),
    };
    const row = await this.#updates(values);
    if (row === undefined) return err("not-found");
    if (!changed(row)) return err(whyNot(row, update));
    return ok(toReadPost(row));
  }

  async #updateOne(values: UpdateValues): Promise<UpdateRow | undefined> {
    const [row] = await this.#update(values);
    return row;
  }

  /**
   * The rows of `asked`, in its order: the first update of each post in one statement, the
   * others alone after it. A failure of the statement fails the call (and `writesTogether` then
   * retries each update alone); a later update's own failure is its answer.
   */
  async #updateAll(asked: readonly UpdateValues[]): Promise<(UpdateRow | Error | undefined)[]> {
    const seen = new Set<number>();
    const together: number[] = [];
    const after: number[] = [];
    for (const [i, values] of asked.entries()) {
      (seen.has(values.id) ? after : together).push(i);
      seen.add(values.id);
    }
    const answers: (UpdateRow | Error | undefined)[] = asked.map(() => undefined);
    const alone = async (i: number) => {
      answers[i] = await this.#updateOne(asked[i] as UpdateValues).catch(loadError);
    };
    if (together.length === 1) {
      await alone(together[0] as number);
    } else {
      const batch = together.map((i) => asked[i] as UpdateValues);
      const rows = await this.#updateMany({
        ids: batch.map((values) => values.id),
        authorIds: batch.map((values) => values.authorId),
        titles: batch.map((values) => values.title),
        contents: batch.map((values) => values.content),
        nows: batch.map((values) => values.now),
        versions: batch.map((values) => arrayLiteral(values.versions)),
      });
      for (const row of rows) answers[together[parseInt8(row.ord) - 1] as number] = row;
    }
    // The later updates of a post go after the statement, each on its own, as requests of their
    // own would have waited for its row lock.
    await Promise.all(after.map(alone));
    return answers;
  }

  /** `PostRepository.delete`. */
  async delete(target: PostDeletion): Promise<Result<void, OwnedWriteFailure>> {
    const versions = isoInstants(target.expectedVersions);
    const [row] = await this.#delete({
      id: target.id,
      authorId: target.authorId,
      versions,
    });
    if (row === undefined) return err("not-found");
    if (row.deleted_id !== null) return ok(undefined);
    return err(whyNot(row, target));
  }
}

/**
 * Why an owned write that found the post changed nothing, from its statement's one row: someone
 * else's post; or, for the author, a version none of the expected ones, or a concurrent write that
 * got the row lock first and deleted the post (which is the same as never having found it) or
 * moved its version.
 */
function whyNot(
  row: OwnedWriteRow,
  target: { readonly authorId: number; readonly expectedVersions?: ExpectedVersions },
): OwnedWriteFailure {
  if (parseInt8(row.owner_id) !== target.authorId) return "not-author";
  const expected = target.expectedVersions;
  // Nothing but a deletion stops an unconditional write of the author.
  if (expected === undefined) return "not-found";
  const seen = row.seen_version.getTime();
  if (!expected.some((version) => version.getTime() === seen)) return "version-mismatch";
  // The version matched when the statement began, and a concurrent write came first.
  return row.remains ? "version-mismatch" : "not-found";
}

/** The version check of an owned write: none without expected versions, else one of them. */
function versionMatches(versions: readonly string[] | null): RawBuilder<boolean> {
  return sql<boolean>`(${versions}::timestamptz[] IS NULL OR p.updated_at = ANY(${versions}::timestamptz[]))`;
}

/**
 * The CTE `remains` of an owned write: after the write (`written`, its CTE) changed nothing
 * although the author's post was at an expected version when the statement began (it lost the
 * row lock to a concurrent write, committed by now), the post as it stands once that write
 * committed, if it still exists. Locking the row (the weakest lock) is what makes this read see
 * past the statement's snapshot, the way the write itself did; in every other case its scan never
 * runs. So the statement alone tells a post deleted under the write from one moved on.
 */
function remainsAfterLostRace(
  p: { readonly id: number; readonly authorId: number; readonly versions: readonly string[] | null },
  written: RawBuilder<unknown>,
): RawBuilder<unknown> {
  return sql`remains AS (
          SELECT posts.id FROM posts
          WHERE posts.id = ${p.id}
            AND NOT EXISTS (SELECT FROM ${written})
            AND EXISTS (SELECT FROM target WHERE target.user_id = ${p.authorId}
                                             AND target.updated_at = ANY(${p.versions}::timestamptz[]))
          FOR KEY SHARE
        )`;
}

/** The expected versions as parameters, `null` for an unconditional write. */
function isoInstants(versions: ExpectedVersions | undefined): readonly string[] | null {
  return versions === undefined ? null : versions.map((version) => version.toISOString());
}

/** Expected versions as a PostgreSQL array literal, one element of a `text[]` parameter. */
function arrayLiteral(versions: readonly string[] | null): string | null {
  // ISO 8601 instants hold no character an array literal would need escaped.
  return versions === null ? null : `{${versions.join(",")}}`;
}

function changed(row: UpdateRow): row is UpdateRow & ReadRow {
  return row.id !== null;
}
