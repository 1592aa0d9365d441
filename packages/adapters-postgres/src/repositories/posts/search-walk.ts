import { MAX_PAGE_SIZE, type ReadPost, type SearchPageQuery } from "@posts/domain";
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { RunStatement } from "../../connection/direct-statements.js";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { ReadRow } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { containsPattern, contentOrSizeOf } from "./read-statements.js";
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
 * A row of a search page statement: a match (`matched`, as a {@link ReadRow}: its content only
 * when small), or one that says where the walk stopped, without its text: the first post it did
 * not read for its bytes (`reads` false), or the last post of its budget, read. `n` is the post's
 * place in the walk from 1, `upto` the bytes of text up to and including it, `size` its own,
 * `previous` the id of the post before it.
 */
type WalkRow = Omit<ReadRow, "title" | "author_email"> & {
  readonly title: string | null;
  readonly author_email: string | null;
  readonly matched: boolean;
  readonly reads: boolean;
  readonly n: number | string;
  readonly upto: number | string;
  readonly size: number | string;
  readonly previous: number | string | null;
};

/** The statements of one page size and budget, by `beforeId`, then `authorId`. */
type SizeStatements = Variants<Variants<PreparedStatement<SearchValues, WalkRow>>>;

/** What one walk found: its matches, and the oldest post it read while older ones remain unread. */
export interface Walked {
  readonly posts: ReadPost[];
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
  readonly #post: (row: ReadRow) => ReadPost;
  /** By budget, then page size. */
  readonly #forBudget = new Map<number, Map<number, SizeStatements>>();

  /**
   * `run`: where the statements go (a standby's pool), the database's own pool when absent.
   * `post`: a matching row as a post, or an outline when its content is large.
   */
  constructor(db: Kysely<Database>, run: RunStatement | undefined, post: (row: ReadRow) => ReadPost) {
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
    const posts: ReadPost[] = [];
    let stop: WalkRow | undefined;
    let end: WalkRow | undefined;
    for (const row of rows) {
      if (row.matched) posts.push(this.#post(row as ReadRow));
      if (!row.reads) stop = row;
      else if (Number(row.n) === budget) end = row;
    }
    if (posts.length >= limit) return { posts, bytes: 0, outOfBytes: false };
    if (stop !== undefined) {
      // Older posts remain: the next one was past the bytes. The walk stopped at the one before.
      const stoppedAt = stop.previous === null ? beforeId : parseInt8(stop.previous);
      if (stoppedAt === undefined) throw new Error("a walk from the newest post read none of them");
      return { posts, stoppedAt, bytes: Number(stop.upto) - Number(stop.size), outOfBytes: true };
    }
    // Fewer posts than the budget: the walk reached the oldest post there is.
    if (end === undefined) return { posts, bytes: 0, outOfBytes: false };
    return { posts, stoppedAt: parseInt8(end.id), bytes: Number(end.upto), outOfBytes: false };
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
  // from the value's header (a TOASTed value is neither fetched nor decompressed for it), so a
  // running sum decides which posts the walk reads before the match reads their text. The
  // window's frame ends at the current row, so the window passes each post on as it comes and
  // the `LIMIT` still stops the index walk at the page's last match. Where the walk stopped comes
  // in the same pass, as one more row without text: the first post past the bytes, or the
  // budget's last post; a second pass over the budget's posts for it cost a short page of small
  // posts half as much again. No match follows either, so the `LIMIT` never cuts it from a short
  // page, and a full page needs it not. Past the bytes, the rest of the budget's posts are
  // looked at (a heap visit and a header each) but not matched: a window cannot stop its input.
  // `OFFSET 0` keeps the match a column computed once, and the `ORDER BY`s keep the window's
  // order known above it, so that no sort waits for the whole budget. A match's content leaves
  // the database only when it is small (`contentOrSizeOf`): the bytes bound what a page reads to
  // test its posts, not what its answer holds while a client takes it, which the large posts'
  // budget bounds where the answer is written.
  #statement(budget: number, limit: number, before: boolean, byAuthor: boolean) {
    const db = this.#db;
    return prepare(
      db,
      (p: Required<SearchValues>) => {
        const conditions: RawBuilder<unknown>[] = [];
        if (before) conditions.push(sql`id < ${p.beforeId}`);
        if (byAuthor) conditions.push(sql`user_id = ${p.authorId}`);
        const where = conditions.length === 0 ? sql`` : sql`WHERE ${sql.join(conditions, sql` AND `)}`;
        const reads = sql`(a.upto <= ${p.bytes}::int8 OR a.n <= ${p.least}::int8)`;
        return sql<WalkRow>`
          SELECT r.id, CASE WHEN r.matched THEN r.title END AS title,
                 ${contentOrSizeOf("r", sql<boolean>`r.matched`)},
                 r.created_at, r.updated_at, r.user_id AS author_id,
                 CASE WHEN r.matched THEN (SELECT u.email FROM users u WHERE u.id = r.user_id) END AS author_email,
                 r.matched, r.reads, r.n, r.upto, r.size, r.previous
            FROM (SELECT a.*, ${reads} AS reads,
                         CASE WHEN ${reads}
                              THEN a.title COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'
                                OR a.content COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'
                              ELSE false END AS matched
                    FROM (SELECT id, title, content, created_at, updated_at, user_id,
                                 octet_length(title) + octet_length(content) AS size,
                                 sum(octet_length(title) + octet_length(content)) OVER w AS upto,
                                 row_number() OVER w AS n,
                                 lag(id) OVER w AS previous
                            FROM (SELECT id, title, content, created_at, updated_at, user_id
                                    FROM posts ${where} ORDER BY id DESC LIMIT ${sql.lit(budget)}) b
                          WINDOW w AS (ORDER BY id DESC ROWS UNBOUNDED PRECEDING)
                          ORDER BY id DESC) a
                   ORDER BY a.id DESC OFFSET 0) r
           WHERE r.matched
              OR (NOT r.reads AND (r.upto - r.size <= ${p.bytes}::int8 OR r.n - 1 <= ${p.least}::int8))
              OR (r.reads AND r.n = ${sql.lit(budget)})
           ORDER BY r.id DESC
           LIMIT ${sql.lit(limit)}`.compile(db);
      },
      { run: this.#run },
    );
  }
}
