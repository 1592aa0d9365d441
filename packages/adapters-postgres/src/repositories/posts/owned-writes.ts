import {
  type ExpectedVersions,
  err,
  type OwnedWriteFailure,
  ok,
  type Post,
  type PostDeletion,
  type PostUpdate,
  type Result,
} from "@posts/domain";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { Database } from "../../schema/database.js";
import { type PostRow, toPost } from "../post-row.js";
import { type PreparedStatement, prepare } from "../prepare.js";
import { bothVariants, type Variants, variant } from "./variants.js";

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

/** An update's answer: the post as changed, or nulls when it did not change. */
type UpdateRow = OwnedWriteRow & { readonly [K in keyof PostRow]: PostRow[K] | null };

/** A delete's answer: the id of the post removed, or null when none was. */
type DeleteRow = OwnedWriteRow & { readonly deleted_id: number | null };

interface UpdateValues {
  readonly id: number;
  readonly authorId: number;
  readonly title?: string;
  readonly content?: string;
  readonly now: string;
  /** The expected versions, as ISO 8601 instants; only conditional variants use them. */
  readonly versions?: readonly string[];
}

interface DeleteValues {
  readonly id: number;
  readonly authorId: number;
  readonly versions?: readonly string[];
}

/**
 * The writes of one author to one existing post (update, delete), each one statement on the
 * primary, atomic on its own, and the diagnosis of one that changed nothing. Never routed to a
 * standby: a write and what decides it read the primary. Change events need nothing here: the
 * posts table's trigger writes each write's event in the write's own transaction, so a write and
 * its event commit together or not at all.
 */
export class OwnedWrites {
  /** With or without a new title, then a new content, then expected versions. */
  readonly #updates: Variants<Variants<Variants<PreparedStatement<UpdateValues, UpdateRow>>>>;
  /** With or without expected versions. */
  readonly #deletes: Variants<PreparedStatement<DeleteValues, DeleteRow>>;

  constructor(db: Kysely<Database>) {
    const update = (title: boolean, content: boolean, conditional: boolean) =>
      prepare(db, (p: Required<UpdateValues>) => {
        // Only the given fields are assigned. UPDATE locks the row and, under concurrency,
        // re-reads its newest version and re-checks the WHERE on it before assigning, so a
        // concurrent change of the other field survives (there is no read-modify-write of the
        // whole post), and of several writers expecting one version exactly one finds it.
        const assignments = [
          ...(title ? [sql`title = ${p.title}::text`] : []),
          ...(content ? [sql`content = ${p.content}::text`] : []),
          // nextUpdatedAt(previous, now) from the domain, on the locked row. Stored timestamps
          // have millisecond precision, so "now if later, else previous + 1 ms" is this GREATEST.
          sql`updated_at = GREATEST(${p.now}::timestamptz, p.updated_at + interval '1 millisecond')`,
        ];
        const versionCheck = conditional ? sql`AND p.updated_at = ANY(${p.versions}::timestamptz[])` : sql``;
        return sql<UpdateRow>`
          WITH target AS (
            SELECT id, user_id, updated_at FROM posts WHERE id = ${p.id}
          ), updated AS (
            UPDATE posts AS p SET ${sql.join(assignments)}
            FROM target
            WHERE p.id = target.id AND target.user_id = ${p.authorId} ${versionCheck}
            RETURNING p.id, p.title, p.content, p.created_at, p.updated_at, p.user_id
          )${remainsAfterLostRace(conditional, p, sql`updated`)}
          SELECT target.user_id AS owner_id, target.updated_at AS seen_version,
                 ${remainsColumn(conditional)},
                 updated.id, updated.title, updated.content, updated.created_at, updated.updated_at,
                 users.id AS author_id, users.email AS author_email
          FROM target
          LEFT JOIN updated ON true
          LEFT JOIN users ON users.id = updated.user_id`.compile(db);
      });
    this.#updates = bothVariants((title) =>
      bothVariants((content) => bothVariants((conditional) => update(title, content, conditional))),
    );

    this.#deletes = bothVariants((conditional) =>
      prepare(db, (p: Required<DeleteValues>) => {
        const versionCheck = conditional ? sql`AND p.updated_at = ANY(${p.versions}::timestamptz[])` : sql``;
        return sql<DeleteRow>`
          WITH target AS (
            SELECT id, user_id, updated_at FROM posts WHERE id = ${p.id}
          ), deleted AS (
            DELETE FROM posts AS p USING target
            WHERE p.id = target.id AND target.user_id = ${p.authorId} ${versionCheck}
            RETURNING p.id
          )${remainsAfterLostRace(conditional, p, sql`deleted`)}
          SELECT target.user_id AS owner_id, target.updated_at AS seen_version,
                 ${remainsColumn(conditional)}, deleted.id AS deleted_id
          FROM target LEFT JOIN deleted ON true`.compile(db);
      }),
    );
  }

  /** `PostRepository.update`. */
  async update(update: PostUpdate): Promise<Result<Post, OwnedWriteFailure>> {
    const { title, content } = update.changes;
    const versions = isoInstants(update.expectedVersions);
    const [row] = await this.#updates[variant(title)][variant(content)][variant(versions)]({
      id: update.id,
      authorId: update.authorId,
      title,
      content,
      now: update.now.toISOString(),
      versions,
    });
    if (row === undefined) return err("not-found");
    if (!changed(row)) return err(whyNot(row, update));
    return ok(toPost(row));
  }

  /** `PostRepository.delete`. */
  async delete(target: PostDeletion): Promise<Result<void, OwnedWriteFailure>> {
    const versions = isoInstants(target.expectedVersions);
    const [row] = await this.#deletes[variant(versions)]({
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

/**
 * The CTE `remains` of a conditional owned write: after the write (`written`, its CTE) changed
 * nothing although the author's post was at an expected version when the statement began (it
 * lost the row lock to a concurrent write, committed by now), the post as it stands once that
 * write committed, if it still exists. Locking the row (the weakest lock) is what makes this read
 * see past the statement's snapshot, the way the write itself did; in every other case it reads
 * nothing. So the statement alone tells a post deleted under the write from one moved on.
 */
function remainsAfterLostRace(
  conditional: boolean,
  p: { readonly id: number; readonly authorId: number; readonly versions: readonly string[] },
  written: RawBuilder<unknown>,
): RawBuilder<unknown> {
  if (!conditional) return sql``;
  return sql`, remains AS (
            SELECT posts.id FROM posts
            WHERE posts.id = ${p.id}
              AND NOT EXISTS (SELECT FROM ${written})
              AND EXISTS (SELECT FROM target WHERE target.user_id = ${p.authorId}
                                               AND target.updated_at = ANY(${p.versions}::timestamptz[]))
            FOR KEY SHARE
          )`;
}

/** The `remains` column of {@link OwnedWriteRow}. */
function remainsColumn(conditional: boolean): RawBuilder<unknown> {
  return conditional ? sql`EXISTS (SELECT FROM remains) AS remains` : sql`false AS remains`;
}

/** The expected versions as parameters, `undefined` for an unconditional write. */
function isoInstants(versions: ExpectedVersions | undefined): readonly string[] | undefined {
  return versions?.map((version) => version.toISOString());
}

function changed(row: UpdateRow): row is UpdateRow & PostRow {
  return row.id !== null;
}
