import type { NewPost, Post } from "@posts/domain";
import { type Kysely, sql } from "kysely";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import { SQLSTATE_FOREIGN_KEY_VIOLATION, sqlStateOf } from "../../connection/sql-state.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import { writeEvidence } from "../../connection/write-evidence.js";
import { type PostRow, toPost } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { writesTogether } from "./writes-together.js";

interface CreateValues {
  readonly authorId: number;
  readonly title: string;
  readonly content: string;
  readonly createdAt: string;
}

/** The new posts of one statement, column by column, as its array parameters take them. */
export interface NewPostColumns {
  readonly authorIds: readonly number[];
  readonly titles: readonly string[];
  readonly contents: readonly string[];
  readonly createdAts: readonly string[];
}

/** `asked`'s new posts as the columns of a statement that inserts them all (keyed ones too). */
export function newPostColumns(asked: readonly CreateValues[]): NewPostColumns {
  return {
    authorIds: asked.map((values) => values.authorId),
    titles: asked.map((values) => values.title),
    contents: asked.map((values) => values.content),
    createdAts: asked.map((values) => values.createdAt),
  };
}

/**
 * Creates posts without an idempotency key, on the primary. The post's change event needs
 * nothing here: the posts table's trigger writes it in the statement's own transaction, so a
 * post and its event commit together or not at all.
 *
 * Creations asked for in one turn of the event loop go to the database as one statement, a lone
 * one as the plain insert: each statement costs PostgreSQL its round trip, parse of the message,
 * executor start-up and a commit (with its WAL flush), which outweigh the insert of a row, and
 * under concurrent creates one statement and one commit serve many. A post is still answered only
 * once its commit is durable; the posts of one statement commit together, each with its own id,
 * timestamps and event; a failed statement is retried creation by creation (`writesTogether`).
 */
export class PlainCreation {
  readonly #one: PreparedStatement<CreateValues, PostRow>;
  readonly #many: PreparedStatement<NewPostColumns, PostRow & { readonly ord: number }>;
  readonly #create: (values: CreateValues) => Promise<PostRow | undefined>;

  constructor(db: Kysely<Database>) {
    // The author's row is read in the same statement that inserts, so a gone author inserts
    // nothing; the foreign key still guards a delete that commits in between (see #createOne).
    this.#one = prepare(db, (p: CreateValues) =>
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
               author.id AS author_id, author.email AS author_email, ${writeEvidence(sql`inserted.id`)}
        FROM inserted JOIN author ON author.id = inserted.user_id`.compile(db),
    );
    // The ids are taken before the insert, in the creations' order, so that each row returned
    // names the creation it answers (`ord`, its place in the arrays) and the posts of one
    // statement are numbered in the order they were asked for. A creation whose author is gone
    // takes no id and inserts nothing.
    this.#many = prepare(db, (p: NewPostColumns) =>
      sql<PostRow & { readonly ord: number }>`
        WITH wanted AS MATERIALIZED (
          SELECT nextval(pg_get_serial_sequence('posts', 'id')) AS id, asked.*
          FROM (
            SELECT i.ord, i.title, i.content, i.created_at, users.id AS author_id, users.email AS author_email
            FROM unnest(${p.authorIds}::int8[], ${p.titles}::text[], ${p.contents}::text[], ${p.createdAts}::timestamptz[])
              WITH ORDINALITY AS i(author_id, title, content, created_at, ord)
            JOIN users ON users.id = i.author_id
            ORDER BY i.ord
          ) AS asked
        ), inserted AS (
          INSERT INTO posts (id, title, content, created_at, updated_at, user_id)
          OVERRIDING SYSTEM VALUE
          SELECT id, title, content, created_at, created_at, author_id FROM wanted ORDER BY ord
          RETURNING id, title, content, created_at, updated_at
        )
        SELECT wanted.ord, inserted.id, inserted.title, inserted.content, inserted.created_at,
               inserted.updated_at, wanted.author_id, wanted.author_email, ${writeEvidence(sql`inserted.id`)}
        FROM inserted JOIN wanted ON wanted.id = inserted.id`.compile(db),
    );
    this.#create = writesTogether<CreateValues, PostRow | undefined>({
      alone: (values) => this.#createOne(values),
      together: (asked) => this.#createMany(asked),
      contentOf: (values) => values.content,
    });
  }

  /** `PostRepository.create`: the new post, or `undefined` when the author no longer exists. */
  async create(post: NewPost): Promise<Post | undefined> {
    const values: CreateValues = {
      authorId: post.authorId,
      title: post.title,
      content: post.content,
      createdAt: post.createdAt.toISOString(),
    };
    const row = await this.#create(values);
    return row === undefined ? undefined : toPost(row);
  }

  async #createOne(values: CreateValues): Promise<PostRow | undefined> {
    try {
      const [row] = await this.#one(values);
      return row;
    } catch (error) {
      // The author was deleted after this statement read the users table.
      if (sqlStateOf(error) === SQLSTATE_FOREIGN_KEY_VIOLATION) return undefined;
      throw error;
    }
  }

  async #createMany(asked: readonly CreateValues[]): Promise<(PostRow | undefined)[]> {
    const rows = await this.#many(newPostColumns(asked));
    const answers: (PostRow | undefined)[] = asked.map(() => undefined);
    for (const row of rows) answers[parseInt8(row.ord) - 1] = row;
    return answers;
  }
}
