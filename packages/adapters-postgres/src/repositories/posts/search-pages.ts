import { MAX_PAGE_SIZE, type Post, type SearchPageQuery, type SearchPageRead } from "@posts/domain";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { DIRECT_STATEMENTS, type RunStatement } from "../../connection/direct-statements.js";
import { sqlStateOf } from "../../connection/sql-state.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { Database } from "../../schema/database.js";
import type { PostCache } from "../post-cache.js";
import { type PostRow, toPost } from "../post-row.js";
import { type PreparedStatement, prepare } from "../prepare.js";
import { containsPattern } from "./read-statements.js";
import { bothVariants, type Variants, variant } from "./variants.js";

/** SQLSTATE query_canceled: what a statement timeout raises. */
const SQLSTATE_QUERY_CANCELED = "57014";

/** How long the trigram step of a search page may take, by default, in milliseconds. */
const DEFAULT_INDEX_STEP_MS = 50;

/** `text` as an SQL string literal (E'…'), whatever the server's standard_conforming_strings. */
function stringLiteral(text: string): string {
  return `E'${text.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;
}

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

/** The statements of one page size, by `beforeId`, then `authorId`. */
type SizeStatements = Variants<Variants<PreparedStatement<SearchValues, SearchRow | ScanRow>>>;

/**
 * Search pages of bounded work (`PostRepository.searchPage`), in two steps.
 *
 * The walk: a page reads at most `budget` posts below its cursor, newest first, along the primary
 * key (or the author's index with an author), tests each against the pattern and stops at
 * `limit` matches or at the end of its budget; one statement, so one snapshot decides both the
 * matches and where the page stopped. A `LIMIT` inside the subquery the filter reads cannot cost
 * more than `budget` rows whatever the planner estimates, and the walk is a generic plan, so
 * these statements are named. Terms in more than one post in a few thousand end here.
 *
 * The trigram step, on a PostgreSQL server, for a term of three or more characters whose walk ran
 * out of budget short of a page: the trigram indexes' bitmap below where the walk stopped, kept
 * only when it holds at most `budget` matches and answers within `indexStepMs` (see
 * `#fromTheIndex`). A rare term's page is then full, or its last, however old its matches;
 * otherwise the page ends where the walk stopped and the next one walks on.
 *
 * Why not the trigram indexes alone, as `listPage` searches: a bitmap of a term reads the posting
 * lists of all its trigrams over the whole table, so its cost follows how common the term's
 * trigrams are, not the page (half a second for a term whose trigrams are in every post; more for
 * several such trigrams that never occur together; bench/RESULTS.md), and only a timeout stops it.
 *
 * Both steps match in the "C" collation, which folds ASCII letters only, as the port's narrowest
 * reading and the in-memory store do: in a database of another locale ILIKE lower-cases each post
 * whole through that locale, about twice the CPU per post read (bench/RESULTS.md), and its
 * folding of other letters would depend on how the database was made.
 */
export class SearchPages {
  readonly #db: Kysely<Database>;
  readonly #run: RunStatement | undefined;
  readonly #budget: number;
  readonly #cache: PostCache | undefined;
  readonly #forLimit = new Map<number, SizeStatements>();
  /** Whether `db` is a server's pool (createPostgresDatabase): PGlite pages only walk. */
  readonly #onServer: boolean;
  readonly #indexStepMs: number;

  /**
   * `budget`: the most posts one page reads, a positive integer. `run`: where the statements go
   * (a standby's pool), the database's own pool when absent. `cache`: whose objects a page lists
   * for the posts it holds at their version; nothing is stored in it.
   */
  constructor(
    db: Kysely<Database>,
    budget: number,
    run?: RunStatement,
    cache?: PostCache,
    indexStepMs: number = DEFAULT_INDEX_STEP_MS,
  ) {
    if (!(Number.isSafeInteger(budget) && budget >= 1)) {
      throw new RangeError("the search budget must be a positive integer");
    }
    if (!(Number.isSafeInteger(indexStepMs) && indexStepMs >= 0)) {
      throw new RangeError("the search's index step time must be a whole number of milliseconds");
    }
    this.#db = db;
    this.#budget = budget;
    this.#run = run;
    this.#cache = cache;
    this.#onServer = DIRECT_STATEMENTS.has(db);
    this.#indexStepMs = indexStepMs;
  }

  /** `PostRepository.searchPage`. */
  async page(query: SearchPageQuery): Promise<SearchPageRead> {
    const { limit, beforeId, authorId, search } = query;
    const statement = this.#statements(limit)[variant(beforeId)][variant(authorId)];
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
    if (posts.length >= limit || scan === undefined || scan.id === null) return { posts };
    // Fewer posts read than the budget: the page reached the oldest post there is.
    if (Number(scan.scanned) < this.#budget) return { posts };
    const stoppedAt = parseInt8(scan.id);
    const older = await this.#fromTheIndex(query, stoppedAt, limit - posts.length);
    if (older === undefined) return { posts, resumeBelow: stoppedAt };
    // Every match below where the walk stopped is known: the page is full, or the search is over.
    return { posts: [...posts, ...older] };
  }

  /**
   * The trigram step, for a term of three or more characters whose walk ran out of budget: the
   * newest `wanted` matches below `below` from the trigram indexes' bitmap, when there are at most
   * `budget` of them (all are then known, and a rare term's page is full however old its matches);
   * `undefined` when there are more, or when the bitmap alone would take longer than the step's
   * time (a term whose trigrams are all common reads their posting lists over the whole table,
   * whatever it matches: PostgreSQL can only be stopped by a statement timeout there). The
   * statement goes as one text with its settings (`SET LOCAL` lasts for that text only), values
   * written as literals, since a text of several statements takes no parameters. It runs on the
   * database's own pool (a connection of its own, see below), not through `run`.
   */
  async #fromTheIndex(query: SearchPageQuery, below: number, wanted: number): Promise<Post[] | undefined> {
    if (!this.#onServer || this.#indexStepMs === 0 || [...query.search].length < 3) return undefined;
    const pattern = stringLiteral(containsPattern(query.search));
    const byAuthor = query.authorId === undefined ? "" : `AND user_id = ${Math.trunc(query.authorId)}`;
    // `id + 0` and the settings leave the bitmap as the only plan: a walk of the primary key
    // filtered row by row is what this step exists to avoid. The index is matched in the
    // database's collation, which it was built in, and each candidate again in "C", as the walk.
    const text = `SET LOCAL statement_timeout = ${this.#indexStepMs};
      SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off;
      SELECT c.id, c.title, c.content, c.created_at, c.updated_at, c.user_id AS author_id,
             (SELECT u.email FROM users u WHERE u.id = c.user_id) AS author_email, c.found
        FROM (SELECT m.*, count(*) OVER () AS found
                FROM (SELECT id, title, content, created_at, updated_at, user_id FROM posts
                       WHERE id + 0 < ${Math.trunc(below)} ${byAuthor}
                         AND (title ILIKE ${pattern} ESCAPE E'\\\\' OR content ILIKE ${pattern} ESCAPE E'\\\\')
                         AND (title COLLATE "C" ILIKE ${pattern} ESCAPE E'\\\\'
                              OR content COLLATE "C" ILIKE ${pattern} ESCAPE E'\\\\')
                       LIMIT ${this.#budget + 1}) m) c
       ORDER BY c.id DESC
       LIMIT ${Math.trunc(wanted)}`;
    type Row = PostRow & { found: number | string };
    const timedOut = (error: unknown) => {
      if (sqlStateOf(error) !== SQLSTATE_QUERY_CANCELED) throw error;
      return undefined;
    };
    // One connection for the step and a statement after it: a timeout that fires as the step
    // ends stays pending in the server and cancels the next statement on that connection (seen
    // under load, a few in a thousand), which must be this one rather than another request's.
    const rows = await this.#db.connection().execute(async (connection) => {
      const found = await sql
        .raw<Row>(text)
        .execute(connection)
        .then((result) => result.rows, timedOut);
      await sql`SELECT 1`.execute(connection).catch(timedOut);
      return found;
    });
    if (rows === undefined) return undefined;
    if (rows.length > 0 && Number(rows[0]?.found) > this.#budget) return undefined;
    return rows.map((row) => this.#post(row));
  }

  #post(row: PostRow): Post {
    return this.#cache?.peek(parseInt8(row.id), row.updated_at.getTime()) ?? toPost(row);
  }

  #statements(limit: number): SizeStatements {
    if (!(Number.isSafeInteger(limit) && limit >= 1 && limit <= MAX_PAGE_SIZE + 1)) {
      throw new RangeError(`a search page holds 1 to ${MAX_PAGE_SIZE + 1} posts`);
    }
    let statements = this.#forLimit.get(limit);
    if (statements === undefined) {
      statements = bothVariants((before) =>
        bothVariants((byAuthor) => this.#statement(limit, before, byAuthor)),
      );
      this.#forLimit.set(limit, statements);
    }
    return statements;
  }

  // The limit and the budget are written into the statement, not bound: with LIMIT $n
  // PostgreSQL cannot price a generic plan and plans afresh at every execution (bench/RESULTS.md).
  #statement(limit: number, before: boolean, byAuthor: boolean) {
    const db = this.#db;
    const budget = sql.lit(this.#budget);
    return prepare(
      db,
      (p: Required<SearchValues>) => {
        const conditions: RawBuilder<unknown>[] = [];
        if (before) conditions.push(sql`id < ${p.beforeId}`);
        if (byAuthor) conditions.push(sql`user_id = ${p.authorId}`);
        const where = conditions.length === 0 ? sql`` : sql`WHERE ${sql.join(conditions, sql` AND `)}`;
        // The posts the page may read: the newest `budget` below the cursor.
        const read = (columns: RawBuilder<unknown>) =>
          sql`SELECT ${columns} FROM posts ${where} ORDER BY id DESC LIMIT ${budget}`;
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
