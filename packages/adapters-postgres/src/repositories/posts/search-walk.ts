import { MAX_PAGE_SIZE, type Post, type SearchPageQuery } from "@posts/domain";
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { RunStatement } from "../../connection/direct-statements.js";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { PostRow } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { containsPattern } from "./read-statements.js";
import { bothVariants, type Variants, variant } from "./variants.js";

/** The values of one search page statement. */
interface SearchValues {
  readonly beforeId?: number;
  readonly authorId?: number;
  readonly pattern: string;
}

/**
 * A row of a search page statement: a match (`scanned` null), or the one row that says how many
 * posts the page read (`scanned`) and the oldest of them (`id`, null when it read none).
 */
type SearchRow = { readonly scanned: null } & PostRow;
type ScanRow = { readonly scanned: number | string; readonly id: number | string | null };

/** The statements of one page size and budget, by `beforeId`, then `authorId`. */
type SizeStatements = Variants<Variants<PreparedStatement<SearchValues, SearchRow | ScanRow>>>;

/** What one walk found: its matches, and the oldest post it read while older ones remain unread. */
export interface Walked {
  readonly posts: Post[];
  /** Absent when the walk read every post below its start (there is nothing older to read). */
  readonly stoppedAt?: number;
}

/**
 * The walk of a search page (see `SearchPages`): the matches among at most `budget` posts below
 * the cursor, newest first, along the primary key (or the author's index with an author), in one
 * named statement per budget, page size and shape, which also tells where the walk stopped.
 */
export class SearchWalk {
  readonly #db: Kysely<Database>;
  readonly #run: RunStatement | undefined;
  readonly #post: (row: PostRow) => Post;
  /** By budget, then page size. */
  readonly #forBudget = new Map<number, Map<number, SizeStatements>>();

  /** `run`: where the statements go (a standby's pool), the database's own pool when absent. `post`: a matching row as a post. */
  constructor(db: Kysely<Database>, run: RunStatement | undefined, post: (row: PostRow) => Post) {
    this.#db = db;
    this.#run = run;
    this.#post = post;
  }

  /**
   * One walk: the matches among the `budget` newest posts below `query.beforeId`, up to `limit`,
   * and where it stopped when it read its whole budget (older posts may remain).
   */
  async walk(query: SearchPageQuery, budget: number, limit: number): Promise<Walked> {
    const { beforeId, authorId, search } = query;
    const statement = this.#statements(budget, limit)[variant(beforeId)][variant(authorId)];
    const rows = await statement({
      pattern: containsPattern(search),
      ...(beforeId === undefined ? {} : { beforeId }),
      ...(authorId === undefined ? {} : { authorId }),
    });
    const posts: Post[] = [];
    let scan: ScanRow | undefined;
    for (const row of rows) {
      if (row.scanned === null) posts.push(this.#post(row as SearchRow));
      else scan = row as ScanRow;
    }
    // Fewer posts read than the budget: the walk reached the oldest post there is.
    if (scan === undefined || scan.id === null || Number(scan.scanned) < budget) return { posts };
    return { posts, stoppedAt: parseInt8(scan.id) };
  }

  #statements(budget: number, limit: number): SizeStatements {
    if (!(Number.isSafeInteger(limit) && limit >= 1 && limit <= MAX_PAGE_SIZE + 1)) {
      throw new RangeError(`a search page holds 1 to ${MAX_PAGE_SIZE + 1} posts`);
    }
    let forLimit = this.#forBudget.get(budget);
    if (forLimit === undefined) {
      forLimit = new Map();
      this.#forBudget.set(budget, forLimit);
    }
    let statements = forLimit.get(limit);
    if (statements === undefined) {
      statements = bothVariants((before) =>
        bothVariants((byAuthor) => this.#statement(budget, limit, before, byAuthor)),
      );
      forLimit.set(limit, statements);
    }
    return statements;
  }

  // The limit and the budget are written into the statement, not bound: with LIMIT $n
  // PostgreSQL cannot price a generic plan and plans afresh at every execution.
  #statement(budget: number, limit: number, before: boolean, byAuthor: boolean) {
    const db = this.#db;
    const posts = sql.lit(budget);
    return prepare(
      db,
      (p: Required<SearchValues>) => {
        const conditions: RawBuilder<unknown>[] = [];
        if (before) conditions.push(sql`id < ${p.beforeId}`);
        if (byAuthor) conditions.push(sql`user_id = ${p.authorId}`);
        const where = conditions.length === 0 ? sql`` : sql`WHERE ${sql.join(conditions, sql` AND `)}`;
        // The posts the page may read: the newest `budget` below the cursor.
        const read = (columns: RawBuilder<unknown>) =>
          sql`SELECT ${columns} FROM posts ${where} ORDER BY id DESC LIMIT ${posts}`;
        return sql<SearchRow | ScanRow>`
          (SELECT r.id, r.title, r.content, r.created_at, r.updated_at, r.user_id AS author_id,
                  (SELECT u.email FROM users u WHERE u.id = r.user_id) AS author_email,
                  NULL::int8 AS scanned
             FROM (${read(sql`id, title, content, created_at, updated_at, user_id`)}) r
            WHERE r.title COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'
               OR r.content COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'
            ORDER BY r.id DESC
            LIMIT ${sql.lit(limit)})
          UNION ALL
          SELECT min(s.id), NULL, NULL, NULL, NULL, NULL, NULL, count(*)
            FROM (${read(sql`id`)}) s`.compile(db);
      },
      { run: this.#run },
    );
  }
}
