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
  /** The most bytes of text the walk reads, but for its first `least` posts. */
  readonly bytes: number;
  /** 1: the walk reads its first post whatever its size; 0: only within `bytes`. */
  readonly least: number;
}

/**
 * A row of a search page statement: a match (`scanned` null), or the one row that says, when the
 * page is short of its limit, how many posts the walk read (`scanned`), how many bytes of text
 * (`bytes`), the oldest of them (`id`, null when it read none), and how many posts below the
 * cursor it looked at within its budget of posts (`within`).
 */
type SearchRow = { readonly scanned: null } & PostRow;
type ScanRow = {
  readonly scanned: number | string;
  readonly id: number | string | null;
  readonly bytes: number | string | null;
  readonly within: number | string;
};

/** The statements of one page size and budget, by `beforeId`, then `authorId`. */
type SizeStatements = Variants<Variants<PreparedStatement<SearchValues, SearchRow | ScanRow>>>;

/** What one walk found: its matches, and the oldest post it read while older ones remain unread. */
export interface Walked {
  readonly posts: Post[];
  /**
   * Absent when the walk read every post below its start (there is nothing older to read), and
   * when its page is full. When it read none (its first post alone was past its bytes), where it
   * started.
   */
  readonly stoppedAt?: number;
  /** Bytes of text the walk read (title and content, as `octet_length` counts them); 0 for a full page. */
  readonly bytes: number;
  /** Whether the walk stopped because its next post would have taken it past its bytes. */
  readonly outOfBytes: boolean;
}

/** The bytes a walk may read: at most `bytes`, and its first post whatever its size when `least`. */
export interface WalkBytes {
  readonly bytes: number;
  readonly least: boolean;
}

/**
 * The walk of a search page (see `SearchPages`): the matches among at most `budget` posts below
 * the cursor, newest first, along the primary key (or the author's index with an author), and
 * among those only while their text (title and content) adds up to at most the walk's bytes, in
 * one named statement per budget, page size and shape, which also tells where the walk stopped.
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
   * read while their text adds up to at most `bytes.bytes` (the first whatever its size when
   * `bytes.least`), and where it stopped when it read its whole budget or its bytes (older posts
   * may remain).
   */
  async walk(query: SearchPageQuery, budget: number, bytes: WalkBytes, limit: number): Promise<Walked> {
    const { beforeId, authorId, search } = query;
    const statement = this.#statements(budget, limit)[variant(beforeId)][variant(authorId)];
    const rows = await statement({
      pattern: containsPattern(search),
      bytes: bytes.bytes,
      least: bytes.least ? 1 : 0,
      ...(beforeId === undefined ? {} : { beforeId }),
      ...(authorId === undefined ? {} : { authorId }),
    });
    const posts: Post[] = [];
    let scan: ScanRow | undefined;
    for (const row of rows) {
      if (row.scanned === null) posts.push(this.#post(row as SearchRow));
      else scan = row as ScanRow;
    }
    if (posts.length >= limit || scan === undefined) return { posts, bytes: 0, outOfBytes: false };
    const read = Number(scan.scanned);
    const within = Number(scan.within);
    const readBytes = Number(scan.bytes ?? 0);
    if (read < within) {
      // Older posts remain within the budget of posts: the next one was past the bytes.
      const stoppedAt = scan.id === null ? beforeId : parseInt8(scan.id);
      if (stoppedAt === undefined) throw new Error("a walk from the newest post read none of them");
      return { posts, stoppedAt, bytes: readBytes, outOfBytes: true };
    }
    // Fewer posts read than the budget: the walk reached the oldest post there is.
    if (scan.id === null || read < budget) return { posts, bytes: readBytes, outOfBytes: false };
    return { posts, stoppedAt: parseInt8(scan.id), bytes: readBytes, outOfBytes: false };
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
  // PostgreSQL cannot price a generic plan and plans afresh at every execution. The bytes are
  // bound: a comparison prices the same whatever the value.
  //
  // The bytes a post takes are `octet_length` of its title and content, which reads the size
  // from the value's header (a TOASTed value is not fetched nor decompressed for it), so a
  // running sum decides which posts the walk reads before the match reads their text. The
  // window's frame ends at the current row, so the window passes each post on as it comes and
  // the `LIMIT` of the matches still stops the index walk at the page's last match. Past the
  // bytes, the rest of the budget's posts are looked at (a heap visit and a header each) but not
  // matched: a window cannot stop its input. The row that says where the walk stopped is
  // computed only when the page is short: a full page continues after its last post.
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
        // The posts the page may read, the newest `budget` below the cursor, each with the bytes
        // of text up to and including it (`upto`), and whether the walk reads it (`reads`).
        const read = (columns: RawBuilder<unknown>) => sql`
          SELECT ${columns}, upto, upto <= ${p.bytes}::int8 OR n <= ${p.least}::int8 AS reads
            FROM (SELECT ${columns},
                         sum(octet_length(title) + octet_length(content)) OVER w AS upto,
                         row_number() OVER w AS n
                    FROM (SELECT id, title, content, created_at, updated_at, user_id
                            FROM posts ${where} ORDER BY id DESC LIMIT ${posts}) b
                  WINDOW w AS (ORDER BY id DESC ROWS UNBOUNDED PRECEDING)) a`;
        return sql<SearchRow | ScanRow>`
          WITH m AS MATERIALIZED (
            SELECT r.id, r.title, r.content, r.created_at, r.updated_at, r.user_id AS author_id,
                   (SELECT u.email FROM users u WHERE u.id = r.user_id) AS author_email,
                   NULL::int8 AS scanned, NULL::int8 AS bytes, NULL::int8 AS within
              FROM (${read(sql`id, title, content, created_at, updated_at, user_id`)}) r
             WHERE CASE WHEN r.reads
                        THEN r.title COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'
                          OR r.content COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'
                        ELSE false END
             ORDER BY r.id DESC
             LIMIT ${sql.lit(limit)})
          SELECT * FROM m
          UNION ALL
          SELECT min(s.id) FILTER (WHERE s.reads), NULL, NULL, NULL, NULL, NULL, NULL,
                 count(*) FILTER (WHERE s.reads), max(s.upto) FILTER (WHERE s.reads), count(*)
            FROM (${read(sql`id`)}) s
           WHERE (SELECT count(*) FROM m) < ${sql.lit(limit)}`.compile(db);
      },
      { run: this.#run },
    );
  }
}
