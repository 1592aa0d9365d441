import {
  err,
  type NewPost,
  type OwnedWriteFailure,
  ok,
  type Post,
  type PostPageQuery,
  type PostRepository,
  type PostUpdate,
  type Result,
} from "@posts/domain";
import { type Kysely, type NotNull, sql } from "kysely";
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

interface UpdateValues {
  readonly id: number;
  readonly authorId: number;
  readonly title?: string;
  readonly content?: string;
  readonly now: string;
}

/** Statements that come in variants, by whether some part of the query is there. */
type Variants<T> = Readonly<Record<"with" | "without", T>>;

/**
 * `PostRepository` on PostgreSQL (a server through `pg`, or PGlite). Every operation is one
 * statement, so each is atomic without an explicit transaction, and every statement is compiled
 * once, when the repository is made. Expects a `Kysely` from `createPostgresDatabase` or
 * `createPgliteDatabase` on a database migrated with `migrateToLatest`.
 */
export class PostgresPostRepository implements PostRepository {
  readonly #create: PreparedStatement<CreateValues, PostRow>;
  readonly #findById: PreparedStatement<{ id: number }, PostRow>;
  /** With or without `beforeId`, then with or without `authorId`. */
  readonly #pages: Variants<Variants<PreparedStatement<PostPageQuery, PostRow>>>;
  /** With or without a new title, then with or without a new content. */
  readonly #updates: Variants<Variants<PreparedStatement<UpdateValues, UpdateRow>>>;
  readonly #delete: PreparedStatement<{ id: number; authorId: number }, DeleteRow>;

  constructor(db: Kysely<Database>) {
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

    // Keyset pagination: the primary key (or the (user_id, id desc) index with an author)
    // finds the first row below the cursor directly, so a deep page costs what the first does.
    // The author's email is a scalar subquery, not a join: with a join, a cursor near the end
    // of the index (few rows estimated below it) made the planner hash the whole users table
    // and sort, 0.55 ms against 0.07 ms (bench/RESULTS.md); this way each of the page's rows
    // costs one users_pkey lookup whatever the estimates. The foreign key guarantees the user.
    const page = (before: boolean, byAuthor: boolean) =>
      prepare(db, (p: Required<PostPageQuery>) =>
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
          .orderBy("posts.id", "desc")
          .limit(p.limit)
          .compile(),
      );
    this.#pages = {
      with: { with: page(true, true), without: page(true, false) },
      without: { with: page(false, true), without: page(false, false) },
    };

    const update = (title: boolean, content: boolean) =>
      prepare(db, (p: Required<UpdateValues>) => {
        // Only the given fields are assigned. UPDATE locks the row and, under concurrency,
        // re-reads its newest version before assigning, so a concurrent change of the other
        // field survives: there is no read-modify-write of the whole post.
        const assignments = [
          ...(title ? [sql`title = ${p.title}::text`] : []),
          ...(content ? [sql`content = ${p.content}::text`] : []),
          // nextUpdatedAt(previous, now) from the domain, on the locked row. Stored timestamps
          // have millisecond precision, so "now if later, else previous + 1 ms" is this GREATEST.
          sql`updated_at = GREATEST(${p.now}::timestamptz, p.updated_at + interval '1 millisecond')`,
        ];
        return sql<UpdateRow>`
          WITH target AS (
            SELECT id, user_id FROM posts WHERE id = ${p.id}
          ), updated AS (
            UPDATE posts AS p SET ${sql.join(assignments)}
            FROM target
            WHERE p.id = target.id AND target.user_id = ${p.authorId}
            RETURNING p.id, p.title, p.content, p.created_at, p.updated_at, p.user_id
          )
          SELECT target.user_id AS owner_id,
                 updated.id, updated.title, updated.content, updated.created_at, updated.updated_at,
                 users.id AS author_id, users.email AS author_email
          FROM target
          LEFT JOIN updated ON true
          LEFT JOIN users ON users.id = updated.user_id`.compile(db);
      });
    this.#updates = {
      with: { with: update(true, true), without: update(true, false) },
      without: { with: update(false, true), without: update(false, false) },
    };

    this.#delete = prepare(db, (p: { id: number; authorId: number }) =>
      sql<DeleteRow>`
        WITH target AS (
          SELECT id, user_id FROM posts WHERE id = ${p.id}
        ), deleted AS (
          DELETE FROM posts AS p USING target
          WHERE p.id = target.id AND target.user_id = ${p.authorId}
          RETURNING p.id
        )
        SELECT target.user_id AS owner_id, deleted.id AS deleted_id
        FROM target LEFT JOIN deleted ON true`.compile(db),
    );
  }

  async create(post: NewPost): Promise<Post | undefined> {
    let rows: PostRow[];
    try {
      rows = await this.#create({
        authorId: post.authorId,
        title: post.title,
        content: post.content,
        createdAt: post.createdAt.toISOString(),
      });
    } catch (error) {
      // The author was deleted after this statement read the users table.
      if (sqlStateOf(error) === SQLSTATE_FOREIGN_KEY_VIOLATION) return undefined;
      throw error;
    }
    const [row] = rows;
    return row === undefined ? undefined : toPost(row);
  }

  async findById(id: number): Promise<Post | undefined> {
    const [row] = await this.#findById({ id });
    return row === undefined ? undefined : toPost(row);
  }

  async listPage(query: PostPageQuery): Promise<readonly Post[]> {
    const rows = await this.#pages[variant(query.beforeId)][variant(query.authorId)](query);
    return rows.map(toPost);
  }

  async update(update: PostUpdate): Promise<Result<Post, OwnedWriteFailure>> {
    const { title, content } = update.changes;
    const [row] = await this.#updates[variant(title)][variant(content)]({
      id: update.id,
      authorId: update.authorId,
      title,
      content,
      now: update.now.toISOString(),
    });
    if (row === undefined) return err("not-found");
    if (!changed(row)) {
      // The post existed when the statement began. Its author did not ask, or it was deleted
      // before the update could lock it, which is the same as never having found it.
      return err(parseInt8(row.owner_id) === update.authorId ? "not-found" : "not-author");
    }
    return ok(toPost(row));
  }

  async delete(target: {
    readonly id: number;
    readonly authorId: number;
  }): Promise<Result<void, OwnedWriteFailure>> {
    const [row] = await this.#delete(target);
    if (row === undefined) return err("not-found");
    if (row.deleted_id !== null) return ok(undefined);
    // As in update(): someone else's post, or deleted by a concurrent statement.
    return err(parseInt8(row.owner_id) === target.authorId ? "not-found" : "not-author");
  }
}

function changed(row: UpdateRow): row is UpdateRow & PostRow {
  return row.id !== null;
}

function variant(part: unknown): "with" | "without" {
  return part === undefined ? "without" : "with";
}
