import type { NewPost, Post } from "@posts/domain";
import { type Kysely, sql } from "kysely";
import { SQLSTATE_FOREIGN_KEY_VIOLATION, sqlStateOf } from "../../connection/sql-state.js";
import type { Database } from "../../schema/database.js";
import { type PostRow, toPost } from "../post-row.js";
import { type PreparedStatement, prepare } from "../prepare.js";

interface CreateValues {
  readonly authorId: number;
  readonly title: string;
  readonly content: string;
  readonly createdAt: string;
}

/**
 * Creates a post without an idempotency key, in one statement on the primary. The post's change
 * event needs nothing here: the posts table's trigger writes it in the statement's own
 * transaction, so a post and its event commit together or not at all.
 */
export class PlainCreation {
  readonly #create: PreparedStatement<CreateValues, PostRow>;

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
  }

  /** `PostRepository.create`: the new post, or `undefined` when the author no longer exists. */
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
}
