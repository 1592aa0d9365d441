import { hash } from "node:crypto";
import {
  type CreatedPost,
  type ExpectedVersions,
  err,
  type IdempotencyKey,
  type IdempotentCreateFailure,
  MAX_PAGE_SIZE,
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
import { type Kysely, type NotNull, type RawBuilder, type SelectQueryBuilder, sql } from "kysely";
import {
  SQLSTATE_FOREIGN_KEY_VIOLATION,
  SQLSTATE_UNIQUE_VIOLATION,
  sqlStateOf,
} from "../connection/sql-state.js";
import { parseInt8 } from "../connection/type-parsers.js";
import type { Database } from "../schema/database.js";
import { PostCache, type PostCacheOptions, type PostCacheStats } from "./post-cache.js";
import { type PostRow, toPost } from "./post-row.js";
import { type PreparedStatement, prepare } from "./prepare.js";

/** How a {@link PostgresPostRepository} is set up beyond its database. */
export interface PostgresPostRepositoryOptions {
  /**
   * Keep posts read by pages in memory, bounded as these options say (see `PostCache`): a page
   * then reads only its posts' ids and versions while recent pages were mostly cached, and the
   * posts it lists are the same objects from one page to the next. Absent: no cache, every page
   * read in full. Only for a database whose post ids are never reused (never truncated with
   * RESTART IDENTITY while the repository lives).
   */
  readonly cache?: PostCacheOptions;
}

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

/** What a page lists when read through the cache: each post's id and version. */
interface ListedRow {
  readonly id: number;
  readonly updated_at: Date;
}

/** The statements of a page, in full and as ids and versions, by `beforeId`, then `authorId`, then search. */
interface PageStatements {
  readonly inFull: Variants<Variants<Variants<PreparedStatement<PageValues, PostRow>>>>;
  readonly listing: Variants<Variants<Variants<PreparedStatement<PageValues, ListedRow>>>>;
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

interface KeyedCreateValues extends CreateValues {
  readonly key: string;
  readonly fingerprint: Uint8Array;
  readonly expiresAt: string;
  readonly now: string;
}

/**
 * What an idempotent creation learns in its one statement: the post it made, or else the post
 * the key (remembered and unexpired when the statement began) made before and whether its text
 * is the same; and whether the author exists.
 */
interface KeyedCreateRow {
  readonly created_id: number | null;
  readonly existing_id: number | null;
  readonly same_text: boolean | null;
  readonly author_exists: boolean;
}

interface UsedKeyValues {
  readonly authorId: number;
  readonly key: string;
  readonly fingerprint: Uint8Array;
  readonly now: string;
}

/** A key this author used before and still remembered: the post it made, and whether the text is the same. */
interface UsedKeyRow {
  readonly post_id: number;
  readonly same_text: boolean;
}

/**
 * How often an idempotent creation reads its key again after a concurrent request of the same key
 * committed it (a second statement each time), before giving up: only a key that expires or is
 * forgotten in the very moments between two statements needs a second round.
 */
const KEYED_CREATE_ROUNDS = 3;

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
 * length in bytes (4 bytes, big-endian), the title and the content, all as UTF-8, so no two
 * different (title, content) pairs hash the same input. Stored instead of a second copy of a
 * content of up to 16 MiB, and identical on every instance. Computed here rather than by
 * PostgreSQL (`sha256(int4send(octet_length(…)) || …)`, the same bytes, which keys stored by
 * earlier versions hold): on two shared cores, the database's share of an idempotent creation was
 * what made it dearer than a plain one (bench/RESULTS.md).
 */
function idempotencyFingerprint(title: string, content: string): Buffer {
  const titleLength = Buffer.byteLength(title, "utf8");
  const input = Buffer.allocUnsafe(4 + titleLength + Buffer.byteLength(content, "utf8"));
  input.writeUInt32BE(titleLength, 0);
  input.write(title, 4, "utf8");
  input.write(content, 4 + titleLength, "utf8");
  // One call, without a Hash object: a third cheaper for a text of a few hundred bytes.
  return hash("sha256", input, "buffer");
}

/**
 * Inserts the post of an idempotent creation under the id its key claimed, from the CTE
 * `claimed` (`user_id`, `post_id`): nothing when the claim made no row.
 */
function insertClaimedPost(p: KeyedCreateValues): RawBuilder<unknown> {
  return sql`
    INSERT INTO posts (id, title, content, created_at, updated_at, user_id) OVERRIDING SYSTEM VALUE
    SELECT claimed.post_id, ${p.title}::text, ${p.content}::text,
           ${p.createdAt}::timestamptz, ${p.createdAt}::timestamptz, claimed.user_id
    FROM claimed
    RETURNING id`;
}

/**
 * Selects a post's columns in the shape of {@link PostRow}, the author's email as a scalar
 * subquery rather than a join: with a join, a cursor near the end of the index (few rows
 * estimated below it) made the planner hash the whole users table and sort, 0.55 ms against
 * 0.07 ms (bench/RESULTS.md); this way each row costs one users_pkey lookup whatever the
 * estimates. The foreign key guarantees the user.
 */
function withAuthorEmail(query: SelectQueryBuilder<Database, "posts", object>) {
  return query
    .select((eb) => [
      ...POST_COLUMNS_WITHOUT_AUTHOR_EMAIL,
      eb
        .selectFrom("users")
        .select("users.email")
        .whereRef("users.id", "=", "posts.user_id")
        .as("author_email"),
    ])
    .$narrowType<{ author_email: NotNull }>();
}

/** The ILIKE pattern (with `ESCAPE '\'`) of "contains `search`", its wildcards matching themselves. */
function containsPattern(search: string): string {
  return `%${search.replace(/[\\%_]/g, "\\$&")}%`;
}

/**
 * `PostRepository` on PostgreSQL (a server through `pg`, or PGlite). Every change is one
 * statement, so each is atomic without an explicit transaction (an idempotent creation whose key
 * is taken decides in a second statement). Every statement is compiled once, when the repository
 * is made. Given a cache (see {@link PostgresPostRepositoryOptions}), pages are read through it
 * while recent pages were mostly cached. Expects a `Kysely` from `createPostgresDatabase` or
 * `createPgliteDatabase` on a database migrated with `migrateToLatest`, not a transaction: a
 * statement that fails on a taken idempotency key would abort it.
 */
export class PostgresPostRepository implements PostRepository {
  readonly #create: PreparedStatement<CreateValues, PostRow>;
  readonly #findById: PreparedStatement<{ id: number }, PostRow>;
  readonly #exists: PreparedStatement<{ id: number }, { readonly id: number }>;
  /** The page statements with this limit written into them (see {@link pageStatements}). */
  readonly #pageStatements: (limit: number) => PageStatements;
  readonly #byIds: PreparedStatement<{ ids: readonly number[] }, PostRow>;
  readonly #cache: PostCache | undefined;
  /** With or without a new title, then a new content, then expected versions. */
  readonly #updates: Variants<Variants<Variants<PreparedStatement<UpdateValues, UpdateRow>>>>;
  /** With or without expected versions. */
  readonly #deletes: Variants<PreparedStatement<DeleteValues, DeleteRow>>;
  readonly #createWithNewKey: PreparedStatement<KeyedCreateValues, { readonly created_id: number }>;
  readonly #createWithKey: PreparedStatement<KeyedCreateValues, KeyedCreateRow>;
  readonly #usedKey: PreparedStatement<UsedKeyValues, UsedKeyRow>;
  readonly #deleteExpiredKeys: PreparedStatement<
    { now: string; batch: number },
    { readonly forgotten: number }
  >;

  constructor(db: Kysely<Database>, options: PostgresPostRepositoryOptions = {}) {
    this.#cache = options.cache === undefined ? undefined : new PostCache(options.cache);
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
    // A search is answered from the trigram indexes on title and content (a bitmap of the
    // candidate rows, rechecked), whose cost follows the matches, not the table, or, for a term
    // in most posts, by walking the primary key until a page is found; which one depends on the
    // term, so a search statement is planned for its values every time (unnamed): a generic plan
    // would walk the whole table for a rare term, or build a bitmap of every post for a common one.
    const filtered = <Q extends SelectQueryBuilder<Database, "posts", object>>(
      query: Q,
      p: Required<PageValues>,
      before: boolean,
      byAuthor: boolean,
      searching: boolean,
    ): Q =>
      query
        .$if(before, (q) => q.where("posts.id", "<", p.beforeId))
        .$if(byAuthor, (q) => q.where("posts.user_id", "=", p.authorId))
        .$if(searching, (q) =>
          q.where(
            sql<boolean>`(posts.title ILIKE ${p.pattern} ESCAPE '\\' OR posts.content ILIKE ${p.pattern} ESCAPE '\\')`,
          ),
        )
        .orderBy("posts.id", "desc") as Q;
    // The limit is written into the statement, not bound: with LIMIT $n PostgreSQL cannot price
    // a generic plan (it assumes a tenth of the table) and plans the statement afresh at every
    // execution, which cost a page statement a third of its CPU there (bench/RESULTS.md). So
    // there is a set of statements per page size, made on first use; sizes are few (1 to 100).
    const pageStatementsFor = (limit: number | undefined): PageStatements => {
      const limited = <Q extends SelectQueryBuilder<Database, "posts", object>>(
        query: Q,
        p: Required<PageValues>,
      ) => (limit === undefined ? query.limit(p.limit) : query.limit(sql.lit(limit))) as Q;
      const page = (before: boolean, byAuthor: boolean, searching: boolean) =>
        prepare(
          db,
          (p: Required<PageValues>) =>
            limited(
              filtered(withAuthorEmail(db.selectFrom("posts")), p, before, byAuthor, searching),
              p,
            ).compile(),
          { named: !searching },
        );
      const listing = (before: boolean, byAuthor: boolean, searching: boolean) =>
        prepare(
          db,
          (p: Required<PageValues>) =>
            limited(
              filtered(
                db.selectFrom("posts").select(["posts.id", "posts.updated_at"]),
                p,
                before,
                byAuthor,
                searching,
              ),
              p,
            ).compile(),
          { named: !searching },
        );
      return {
        inFull: bothVariants((before) =>
          bothVariants((byAuthor) => bothVariants((searching) => page(before, byAuthor, searching))),
        ),
        listing: bothVariants((before) =>
          bothVariants((byAuthor) => bothVariants((searching) => listing(before, byAuthor, searching))),
        ),
      };
    };
    const bySize = new Map<number, PageStatements>();
    const anySize = pageStatementsFor(undefined);
    this.#pageStatements = (limit) => {
      if (!(Number.isSafeInteger(limit) && limit >= 1 && limit <= MAX_PAGE_SIZE + 1)) return anySize;
      let statements = bySize.get(limit);
      if (statements === undefined) {
        statements = pageStatementsFor(limit);
        bySize.set(limit, statements);
      }
      return statements;
    };
    this.#byIds = prepare(db, (p: { ids: readonly number[] }) =>
      withAuthorEmail(db.selectFrom("posts")).where(sql<boolean>`posts.id = ANY(${p.ids}::int8[])`).compile(),
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

    // The common case, a key never used: the key and the post in one statement, two plain
    // inserts. A key its author used before (or is using in a concurrent request) fails it on the
    // primary key, a gone author on a foreign key, and nothing of it stays; only then does the
    // general statement below run. Compared with that statement alone, this spares PostgreSQL
    // the speculative insertion of ON CONFLICT, the author's lookup and the second look at the
    // key: about half of the 0.040 ms of PostgreSQL's CPU that the key added to a creation
    // (bench/RESULTS.md, change 7). A replay costs an error (which PostgreSQL logs) and one
    // statement more; replays are retries, and rare. The error would abort an enclosing
    // transaction: this repository runs its statements outside any (see the class).
    this.#createWithNewKey = prepare(db, (p: KeyedCreateValues) =>
      sql<{ created_id: number }>`
        WITH claimed AS (
          INSERT INTO idempotency_keys (user_id, key, expires_at, post_id, fingerprint)
          VALUES (${p.authorId}, ${p.key}::text, ${p.expiresAt}::timestamptz,
                  nextval(pg_get_serial_sequence('posts', 'id')), ${p.fingerprint}::bytea)
          RETURNING user_id, post_id
        ), inserted AS (
          ${insertClaimedPost(p)}
        )
        SELECT id AS created_id FROM inserted`.compile(db),
    );

    // One statement, atomic on its own: the key is claimed (inserted, or an expired use of it
    // taken over) together with the post's id drawn from the posts' sequence, and the post is
    // inserted under that id only if the claim succeeded. A claim of a key another statement has
    // just inserted waits on the primary key until that one ends, then takes it over if it rolled
    // back, or answers no row if it committed: the key's row as this statement's snapshot saw it
    // then tells nothing about that one, and a second statement reads it (see createIdempotently).
    // The key's earlier use is looked up only when nothing was created (a gating condition on the
    // outcome), so a first use, the common case, reads the key's index once. A gone author claims
    // and inserts nothing (nothing to select the claim from).
    this.#createWithKey = prepare(db, (p: KeyedCreateValues) =>
      sql<KeyedCreateRow>`
        WITH author AS (
          SELECT id FROM users WHERE id = ${p.authorId}
        ), claimed AS (
          INSERT INTO idempotency_keys (user_id, key, expires_at, post_id, fingerprint)
          SELECT author.id, ${p.key}::text, ${p.expiresAt}::timestamptz,
                 nextval(pg_get_serial_sequence('posts', 'id')), ${p.fingerprint}::bytea
          FROM author
          ON CONFLICT (user_id, key) DO UPDATE
            SET post_id = excluded.post_id, fingerprint = excluded.fingerprint, expires_at = excluded.expires_at
            WHERE idempotency_keys.expires_at <= ${p.now}::timestamptz
          RETURNING user_id, post_id
        ), inserted AS (
          ${insertClaimedPost(p)}
        )
        SELECT made.id AS created_id,
               k.post_id AS existing_id,
               k.same_text,
               EXISTS (SELECT 1 FROM author) AS author_exists
        FROM (SELECT (SELECT id FROM inserted) AS id) AS made
        LEFT JOIN LATERAL (
          SELECT post_id, fingerprint = ${p.fingerprint}::bytea AS same_text
          FROM idempotency_keys
          WHERE made.id IS NULL
            AND user_id = ${p.authorId} AND key = ${p.key}::text AND expires_at > ${p.now}::timestamptz
        ) AS k ON true`.compile(db),
    );

    this.#usedKey = prepare(db, (p: UsedKeyValues) =>
      sql<UsedKeyRow>`
        SELECT post_id, fingerprint = ${p.fingerprint}::bytea AS same_text
        FROM idempotency_keys
        WHERE user_id = ${p.authorId} AND key = ${p.key}::text AND expires_at > ${p.now}::timestamptz`.compile(
        db,
      ),
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
    const now = post.createdAt.toISOString();
    const fingerprint = idempotencyFingerprint(post.title, post.content);
    // Spelled out rather than spread from createValues: a literal of one shape is built in one
    // step, where a spread followed by more properties cost more than the SHA-256 (a CPU profile).
    const values: KeyedCreateValues = {
      authorId: post.authorId,
      title: post.title,
      content: post.content,
      createdAt: now,
      key: key.key,
      fingerprint,
      expiresAt: key.expiresAt.toISOString(),
      now,
    };
    try {
      try {
        const [created] = await this.#createWithNewKey(values);
        if (created === undefined) throw new Error("an idempotent creation answered no row");
        return ok({ id: parseInt8(created.created_id), replayed: false });
      } catch (error) {
        // The key is taken, or was until the statement ended: the general statement decides.
        if (!isKeyTaken(error)) throw error;
      }
      for (let round = 1; ; round++) {
        const [row] = await this.#createWithKey(values);
        if (row === undefined) throw new Error("an idempotent creation answered no row");
        if (row.created_id !== null) return ok({ id: parseInt8(row.created_id), replayed: false });
        if (!row.author_exists) return err("author-gone");
        if (row.existing_id !== null) return used(row.existing_id, row.same_text === true);
        // The key was committed by a concurrent request after this statement began: a new
        // statement sees it.
        const [again] = await this.#usedKey({
          authorId: post.authorId,
          key: key.key,
          fingerprint,
          now,
        });
        if (again !== undefined) return used(again.post_id, again.same_text);
        // Gone again already (expired, or its author deleted): claim it afresh.
        if (round === KEYED_CREATE_ROUNDS)
          throw new Error("an idempotency key kept changing under its creation");
      }
    } catch (error) {
      // The author was deleted after the statement read the users table.
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
    if (row === undefined) return undefined;
    // The cached object when it is this version, so that what callers keep beside it (the
    // HTTP adapter's JSON) serves again; a post read alone is not cached, so that reading many
    // posts once each does not churn the pages' cache.
    return this.#cache?.peek(parseInt8(row.id), row.updated_at.getTime()) ?? toPost(row);
  }

  async listPage(query: PostPageQuery): Promise<readonly Post[]> {
    const { search, ...rest } = query;
    const values: PageValues = search === undefined ? rest : { ...rest, pattern: containsPattern(search) };
    const before = variant(query.beforeId);
    const byAuthor = variant(query.authorId);
    const searching = variant(search);
    const cache = this.#cache;
    const statements = this.#pageStatements(query.limit);
    const inFull = statements.inFull[before][byAuthor][searching];
    if (cache === undefined) return (await inFull(values)).map(toPost);
    // U+0000 cannot occur in a search, so the key tells every page apart.
    const admitted = cache.admits(
      `${query.limit}\u0000${query.beforeId}\u0000${query.authorId}\u0000${search}`,
    );
    if (!cache.readsThrough) return adopt(cache, await inFull(values), admitted);

    const listed = await statements.listing[before][byAuthor][searching](values);
    const posts: (Post | undefined)[] = [];
    let missing: number[] | undefined;
    for (const row of listed) {
      const id = parseInt8(row.id);
      const post = cache.lookUp(id, row.updated_at.getTime());
      if (post === undefined) {
        missing ??= [];
        missing.push(id);
      }
      posts.push(post);
    }
    cache.notePage(missing === undefined);
    if (missing === undefined) return posts as Post[];
    const rows = await this.#byIds({ ids: missing });
    // A post deleted between the two statements leaves a hole: read the page again, whole.
    if (rows.length < missing.length) return (await inFull(values)).map(toPost);
    const read = new Map<number, Post>();
    for (const row of rows) {
      // Possibly a newer version than listed, if it changed in between: as a page read a moment later.
      const post = toPost(row);
      if (admitted) cache.store(post);
      read.set(post.id, post);
    }
    return posts.map((post, i) => post ?? (read.get(parseInt8((listed[i] as ListedRow).id)) as Post));
  }

  /** What the cache has done and holds; `undefined` without one. */
  cacheStats(): PostCacheStats | undefined {
    return this.#cache?.stats();
  }

  /**
   * Whether `post` is the object this repository's cache holds for its id, which it answers
   * again for as long as that version is current: what a caller keeps beside such a post (its
   * JSON) serves again. False without a cache.
   */
  holdsCached(post: Post): boolean {
    return this.#cache?.holds(post) ?? false;
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
    const post = toPost(row);
    // The next page that lists a post it holds finds this version here.
    this.#cache?.replace(post);
    return ok(post);
  }

  async delete(target: PostDeletion): Promise<Result<void, OwnedWriteFailure>> {
    const versions = isoInstants(target.expectedVersions);
    const [row] = await this.#deletes[variant(versions)]({
      id: target.id,
      authorId: target.authorId,
      versions,
    });
    if (row === undefined) return err("not-found");
    if (row.deleted_id !== null) {
      this.#cache?.forget(target.id);
      return ok(undefined);
    }
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

/**
 * The posts of a page read in full, each the cached object when the cache holds that version;
 * the others are stored when the page is `admitted` (see `PostCache.admits`).
 */
function adopt(cache: PostCache, rows: readonly PostRow[], admitted: boolean): Post[] {
  let allCached = true;
  const posts = rows.map((row) => {
    const cached = cache.lookUp(parseInt8(row.id), row.updated_at.getTime());
    if (cached !== undefined) return cached;
    allCached = false;
    const post = toPost(row);
    if (admitted) cache.store(post);
    return post;
  });
  cache.notePage(allCached);
  return posts;
}

/** The answer of a key used before: its post again when the text is the same, else "key-reused". */
function used(postId: number, sameText: boolean): Result<CreatedPost, IdempotentCreateFailure> {
  return sameText ? ok({ id: parseInt8(postId), replayed: true }) : err("key-reused");
}

/** Whether a statement failed because the idempotency key it inserted exists already. */
function isKeyTaken(error: unknown): boolean {
  return (
    sqlStateOf(error) === SQLSTATE_UNIQUE_VIOLATION &&
    (error as { constraint?: unknown }).constraint === "idempotency_keys_pkey"
  );
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
