import {
  type CreatedPost,
  type ExpectedVersions,
  err,
  type IdempotencyKey,
  type IdempotentCreateFailure,
  type NewPost,
  type OwnedWriteFailure,
  ok,
  type Post,
  type PostDeletion,
  type PostPageQuery,
  type PostRepository,
  type PostUpdate,
  type Result,
} from "@posts/domain";
import { type Kysely, type NotNull, type RawBuilder, sql } from "kysely";
import { SQLSTATE_FOREIGN_KEY_VIOLATION, sqlStateOf } from "../connection/sql-state.js";
import { parseInt8 } from "../connection/type-parsers.js";
import type { Database } from "../schema/database.js";
import { type PostRow, toPost } from "./post-row.js";
import { type PreparedStatement, prepare } from "./prepare.js";

/** What a post statement selects of the post itself, in the shape of {@link PostRow}. */
const POST_COLUMNS_WITHOUT_AUTHOR_EMAIL = [
  "posts.id",
  "posts.title",
  "posts.content",
  "posts.created_at",
  "posts.updated_at",
  "posts.user_id as author_id",
] as const;

/** What a post statement joined with users selects, in the shape of {@link PostRow}. */
const POST_COLUMNS = [...POST_COLUMNS_WITHOUT_AUTHOR_EMAIL, "users.email as author_email"] as const;

/** What an owned write (update, delete) learns in its one statement; no row when no post had the id. */
interface OwnedWriteRow {
  /** The author of the post the id named when the statement started. */
  readonly owner_id: number;
  /** The post's version (updated_at) when the statement started. */
  readonly seen_version: Date;
}

/** An update's answer: the post as changed, or nulls when it did not change. */
type UpdateRow = OwnedWriteRow & { readonly [K in keyof PostRow]: PostRow[K] | null };

/** A delete's answer: the id of the post removed, or null when none was. */
type DeleteRow = OwnedWriteRow & { readonly deleted_id: number | null };

interface CreateValues {
  readonly authorId: number;
  readonly title: string;
  readonly content: string;
  readonly createdAt: string;
}

/** A page query with the search turned into an ILIKE pattern. */
interface PageValues {
  readonly limit: number;
  readonly beforeId?: number;
  readonly authorId?: number;
  readonly pattern?: string;
}

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

interface ClaimValues {
  readonly authorId: number;
  readonly key: string;
  readonly expiresAt: string;
  readonly now: string;
}

interface KeyedPostValues extends CreateValues {
  readonly key: string;
}

interface UsedKeyValues {
  readonly authorId: number;
  readonly key: string;
  readonly title: string;
  readonly content: string;
}

/** A key this author used before and still remembered: the post it made, and whether the text is the same. */
interface UsedKeyRow {
  readonly post_id: number;
  readonly same_text: boolean;
}

/** How many expired idempotency keys one statement of a sweep deletes at most. */
const SWEEP_BATCH = 5000;

/** Statements that come in variants, by whether some part of the query is there. */
type Variants<T> = Readonly<Record<"with" | "without", T>>;

/** Makes both variants of a statement (or of a group of them). */
function bothVariants<T>(make: (present: boolean) => T): Variants<T> {
  return { with: make(true), without: make(false) };
}

/**
 * The fingerprint an idempotency key keeps of the text it was used with: SHA-256 over the title's
 * length in bytes, the title and the content, all as UTF-8, so no two different (title, content)
 * pairs hash the same input. Computed by the server, identically on every instance, and stored
 * instead of a second copy of a content of up to 16 MiB.
 */
function fingerprint(title: RawBuilder<unknown>, content: RawBuilder<unknown>): RawBuilder<Uint8Array> {
  return sql`sha256(
    int4send(octet_length(convert_to(${title}, 'UTF8'))) || convert_to(${title}, 'UTF8') || convert_to(${content}, 'UTF8')
  )`;
}

/** The ILIKE pattern (with `ESCAPE '\'`) of "contains `search`", its wildcards matching themselves. */
function containsPattern(search: string): string {
  return `%${search.replace(/[\\%_]/g, "\\$&")}%`;
}

/**
 * `PostRepository` on PostgreSQL (a server through `pg`, or PGlite). Every operation but an
 * idempotent creation is one statement, so each is atomic without an explicit transaction; an
 * idempotent creation is one transaction. Every statement is compiled once, when the repository
 * is made. Expects a `Kysely` from `createPostgresDatabase` or `createPgliteDatabase` on a
 * database migrated with `migrateToLatest`.
 */
export class PostgresPostRepository implements PostRepository {
  readonly #db: Kysely<Database>;
  readonly #create: PreparedStatement<CreateValues, PostRow>;
  readonly #findById: PreparedStatement<{ id: number }, PostRow>;
  readonly #exists: PreparedStatement<{ id: number }, { readonly id: number }>;
  /** With or without `beforeId`, then `authorId`, then a search pattern. */
  readonly #pages: Variants<Variants<Variants<PreparedStatement<PageValues, PostRow>>>>;
  /** With or without a new title, then a new content, then expected versions. */
  readonly #updates: Variants<Variants<Variants<PreparedStatement<UpdateValues, UpdateRow>>>>;
  /** With or without expected versions. */
  readonly #deletes: Variants<PreparedStatement<DeleteValues, DeleteRow>>;
  readonly #claimKey: PreparedStatement<ClaimValues, { readonly claimed: boolean }>;
  readonly #createUnderKey: PreparedStatement<KeyedPostValues, { readonly id: number }>;
  readonly #usedKey: PreparedStatement<UsedKeyValues, UsedKeyRow>;
  readonly #deleteExpiredKeys: PreparedStatement<
    { now: string; batch: number },
    { readonly forgotten: number }
  >;

  constructor(db: Kysely<Database>) {
    this.#db = db;
    // The author's row is read in the same statement that inserts, so a gone author inserts
    // nothing; the foreign key still guards a delete that commits in between (see create()).
    this.#create = prepare(db, (p: CreateValues) =>
      sql<PostRow>`
        WITH author AS (
          SELECT id, email FROM users WHERE id = ${p.authorId}
        ), inserted AS (
          INSERT INTO posts (title, content, created_at, updated_at, user_id)
          SELECT ${p.title}::text, ${p.content}::text, ${p.createdAt}::timestamptz, ${p.createdAt}::timestamptz, author.id
          FROM author
          RETURNING id, title, content, created_at, updated_at, user_id
        )
        SELECT inserted.id, inserted.title, inserted.content, inserted.created_at, inserted.updated_at,
               author.id AS author_id, author.email AS author_email
        FROM inserted JOIN author ON author.id = inserted.user_id`.compile(db),
    );

    this.#findById = prepare(db, (p: { id: number }) =>
      db
        .selectFrom("posts")
        .innerJoin("users", "users.id", "posts.user_id")
        .select(POST_COLUMNS)
        .where("posts.id", "=", p.id)
        .compile(),
    );

    this.#exists = prepare(db, (p: { id: number }) =>
      db.selectFrom("posts").select("id").where("id", "=", p.id).compile(),
    );

    // Keyset pagination: the primary key (or the (user_id, id desc) index with an author)
    // finds the first row below the cursor directly, so a deep page costs what the first does.
    // The author's email is a scalar subquery, not a join: with a join, a cursor near the end
    // of the index (few rows estimated below it) made the planner hash the whole users table
    // and sort, 0.55 ms against 0.07 ms (bench/RESULTS.md); this way each of the page's rows
    // costs one users_pkey lookup whatever the estimates. The foreign key guarantees the user.
    // A search is answered from the trigram indexes on title and content (a bitmap of the
    // candidate rows, rechecked), whose cost follows the matches, not the table.
    const page = (before: boolean, byAuthor: boolean, searching: boolean) =>
      prepare(db, (p: Required<PageValues>) =>
        db
          .selectFrom("posts")
          .select((eb) => [
            ...POST_COLUMNS_WITHOUT_AUTHOR_EMAIL,
            eb
              .selectFrom("users")
              .select("users.email")
              .whereRef("users.id", "=", "posts.user_id")
              .as("author_email"),
          ])
          .$narrowType<{ author_email: NotNull }>()
          .$if(before, (query) => query.where("posts.id", "<", p.beforeId))
          .$if(byAuthor, (query) => query.where("posts.user_id", "=", p.authorId))
          .$if(searching, (query) =>
            query.where(
              sql<boolean>`(posts.title ILIKE ${p.pattern} ESCAPE '\\' OR posts.content ILIKE ${p.pattern} ESCAPE '\\')`,
            ),
          )
          .orderBy("posts.id", "desc")
          .limit(p.limit)
          .compile(),
      );
    this.#pages = bothVariants((before) =>
      bothVariants((byAuthor) => bothVariants((searching) => page(before, byAuthor, searching))),
    );

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
          )
          SELECT target.user_id AS owner_id, target.updated_at AS seen_version,
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
          )
          SELECT target.user_id AS owner_id, target.updated_at AS seen_version, deleted.id AS deleted_id
          FROM target LEFT JOIN deleted ON true`.compile(db);
      }),
    );

    // Claims the author's key: inserts it, or takes over a use of it that has expired. A claim
    // of a key another transaction has just inserted waits on the primary key until that one
    // ends, then takes it over if it rolled back, or locks its committed row and answers no
    // row. So is a gone author answered (nothing to select the insert from).
    this.#claimKey = prepare(db, (p: ClaimValues) =>
      sql<{ claimed: boolean }>`
        INSERT INTO idempotency_keys (user_id, key, expires_at)
        SELECT id, ${p.key}::text, ${p.expiresAt}::timestamptz FROM users WHERE id = ${p.authorId}
        ON CONFLICT (user_id, key) DO UPDATE
          SET post_id = NULL, fingerprint = NULL, expires_at = excluded.expires_at
          WHERE idempotency_keys.expires_at <= ${p.now}::timestamptz
        RETURNING true AS claimed`.compile(db),
    );

    // The fingerprint is taken of the stored row, so that the content travels once.
    this.#createUnderKey = prepare(db, (p: KeyedPostValues) =>
      sql<{ id: number }>`
        WITH inserted AS (
          INSERT INTO posts (title, content, created_at, updated_at, user_id)
          VALUES (${p.title}::text, ${p.content}::text, ${p.createdAt}::timestamptz, ${p.createdAt}::timestamptz, ${p.authorId})
          RETURNING id, title, content
        ), linked AS (
          UPDATE idempotency_keys AS k
          SET post_id = inserted.id,
              fingerprint = ${fingerprint(sql.ref("inserted.title"), sql.ref("inserted.content"))}
          FROM inserted
          WHERE k.user_id = ${p.authorId} AND k.key = ${p.key}::text
          RETURNING k.post_id
        )
        SELECT post_id AS id FROM linked`.compile(db),
    );

    this.#usedKey = prepare(db, (p: UsedKeyValues) =>
      sql<UsedKeyRow>`
        WITH given AS (
          SELECT ${p.title}::text AS title, ${p.content}::text AS content
        )
        SELECT k.post_id, k.fingerprint = ${fingerprint(sql.ref("given.title"), sql.ref("given.content"))} AS same_text
        FROM idempotency_keys AS k, given
        WHERE k.user_id = ${p.authorId} AND k.key = ${p.key}::text`.compile(db),
    );

    // In batches, so that no statement of a long-overdue sweep runs into the statement timeout;
    // rows locked by a creation taking an expired key over are skipped, as are those another
    // instance's sweep is deleting.
    this.#deleteExpiredKeys = prepare(db, (p: { now: string; batch: number }) =>
      sql<{ forgotten: number }>`
        WITH forgotten AS (
          DELETE FROM idempotency_keys
          WHERE (user_id, key) IN (
            SELECT user_id, key FROM idempotency_keys WHERE expires_at <= ${p.now}::timestamptz
            LIMIT ${p.batch} FOR UPDATE SKIP LOCKED
          )
          RETURNING 1
        )
        SELECT count(*)::int4 AS forgotten FROM forgotten`.compile(db),
    );
  }

  async create(post: NewPost): Promise<Post | undefined> {
    let rows: PostRow[];
    try {
      rows = await this.#create(createValues(post));
    } catch (error) {
      // The author was deleted after this statement read the users table.
      if (sqlStateOf(error) === SQLSTATE_FOREIGN_KEY_VIOLATION) return undefined;
      throw error;
    }
    const [row] = rows;
    return row === undefined ? undefined : toPost(row);
  }

  async createIdempotently(
    post: NewPost,
    key: IdempotencyKey,
  ): Promise<Result<CreatedPost, IdempotentCreateFailure>> {
    try {
      // Every statement runs on `trx`: on PGlite, the one connection is the transaction's until it ends.
      return await this.#db.transaction().execute(async (trx) => {
        const [claim] = await this.#claimKey(
          {
            authorId: post.authorId,
            key: key.key,
            expiresAt: key.expiresAt.toISOString(),
            now: post.createdAt.toISOString(),
          },
          trx,
        );
        if (claim !== undefined) {
          const [created] = await this.#createUnderKey({ ...createValues(post), key: key.key }, trx);
          if (created === undefined)
            throw new Error("the claimed idempotency key vanished before its post was linked");
          return ok({ id: parseInt8(created.id), replayed: false });
        }
        // A new statement sees the row the claim found committed; the claim's lock keeps it there.
        const [used] = await this.#usedKey(
          { authorId: post.authorId, key: key.key, title: post.title, content: post.content },
          trx,
        );
        // Without a row to conflict with, only a gone author makes the claim insert nothing.
        if (used === undefined) return err("author-gone");
        return used.same_text ? ok({ id: parseInt8(used.post_id), replayed: true }) : err("key-reused");
      });
    } catch (error) {
      // The author was deleted after the claim read the users table.
      if (sqlStateOf(error) === SQLSTATE_FOREIGN_KEY_VIOLATION) return err("author-gone");
      throw error;
    }
  }

  async deleteExpiredIdempotencyKeys(now: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const [row] = await this.#deleteExpiredKeys({ now: now.toISOString(), batch: SWEEP_BATCH });
      const forgotten = row?.forgotten ?? 0;
      total += forgotten;
      if (forgotten < SWEEP_BATCH) return total;
    }
  }

  async findById(id: number): Promise<Post | undefined> {
    const [row] = await this.#findById({ id });
    return row === undefined ? undefined : toPost(row);
  }

  async listPage(query: PostPageQuery): Promise<readonly Post[]> {
    const { search, ...rest } = query;
    const values: PageValues = search === undefined ? rest : { ...rest, pattern: containsPattern(search) };
    const rows = await this.#pages[variant(query.beforeId)][variant(query.authorId)][variant(search)](values);
    return rows.map(toPost);
  }

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
    if (!changed(row)) return err(await this.#whyNot(row, update));
    return ok(toPost(row));
  }

  async delete(target: PostDeletion): Promise<Result<void, OwnedWriteFailure>> {
    const versions = isoInstants(target.expectedVersions);
    const [row] = await this.#deletes[variant(versions)]({
      id: target.id,
      authorId: target.authorId,
      versions,
    });
    if (row === undefined) return err("not-found");
    if (row.deleted_id !== null) return ok(undefined);
    return err(await this.#whyNot(row, target));
  }

  /**
   * Why an owned write that found the post changed nothing: someone else's post; or, for the
   * author, a version none of the expected ones, or a concurrent write that got the row lock
   * first and deleted the post (which is the same as never having found it) or moved its version.
   */
  async #whyNot(
    row: OwnedWriteRow,
    target: { readonly id: number; readonly authorId: number; readonly expectedVersions?: ExpectedVersions },
  ): Promise<OwnedWriteFailure> {
    if (parseInt8(row.owner_id) !== target.authorId) return "not-author";
    const expected = target.expectedVersions;
    // Nothing but a deletion stops an unconditional write of the author.
    if (expected === undefined) return "not-found";
    const seen = row.seen_version.getTime();
    if (!expected.some((version) => version.getTime() === seen)) return "version-mismatch";
    // The version matched when the statement began, and a concurrent write came first: a
    // version only moves forward, so a post still there is at another version now.
    const [still] = await this.#exists({ id: target.id });
    return still === undefined ? "not-found" : "version-mismatch";
  }
}

function createValues(post: NewPost): CreateValues {
  return {
    authorId: post.authorId,
    title: post.title,
    content: post.content,
    createdAt: post.createdAt.toISOString(),
  };
}

/** The expected versions as parameters, `undefined` for an unconditional write. */
function isoInstants(versions: ExpectedVersions | undefined): readonly string[] | undefined {
  return versions?.map((version) => version.toISOString());
}

function changed(row: UpdateRow): row is UpdateRow & PostRow {
  return row.id !== null;
}

function variant(part: unknown): "with" | "without" {
  return part === undefined ? "without" : "with";
}
