import { MAX_PAGE_SIZE, type Post, type SearchPageQuery, type SearchPageRead } from "@posts/domain";
import { type Kysely, type RawBuilder, sql } from "kysely";
import type { RunStatement } from "../../connection/direct-statements.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { Database } from "../../schema/database.js";
import type { PostCache } from "../post-cache.js";
import { type PostRow, toPost } from "../post-row.js";
import { type PreparedStatement, prepare } from "../prepare.js";
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

/** The statements of one page size, by `beforeId`, then `authorId`. */
type SizeStatements = Variants<Variants<PreparedStatement<SearchValues, SearchRow | ScanRow>>>;

/**
 * Search pages of bounded work (`PostRepository.searchPage`): a page reads at most `budget` posts
 * below its cursor, newest first, along the primary key (or the author's index with an author),
 * tests each against the pattern and stops at `limit` matches or at the end of its budget. One
 * statement, so one snapshot decides both the matches and where the page stopped.
 *
 * Why not the trigram indexes, which answer `listPage`'s searches: a bitmap of a term reads the
 * posting lists of all its trigrams over the whole table, so its cost follows how common the
 * term's trigrams are, not the page (half a second for a term whose trigrams are in every post,
 * seconds for a few such trigrams that never occur together; bench/RESULTS.md), and PostgreSQL
 * offers no way to stop it early. A walk of the primary key with a `LIMIT` below the filter
 * cannot cost more than `budget` rows whatever the planner estimates, because the limit sits
 * inside the subquery the filter reads. The walk is a generic plan, so these statements are
 * named: the same plan serves every term.
 *
 * The pattern is matched in the "C" collation, which folds ASCII letters only, as the port's
 * narrowest reading and the in-memory store do: in a database of another locale ILIKE would
 * lower-case each post whole through that locale, about twice the CPU per post read
 * (bench/RESULTS.md), and its folding of other letters would depend on how the database was made.
 */
export class SearchPages {
  readonly #db: Kysely<Database>;
  readonly #run: RunStatement | undefined;
  readonly #budget: number;
  readonly #cache: PostCache | undefined;
  readonly #forLimit = new Map<number, SizeStatements>();

  /**
   * `budget`: the most posts one page reads, a positive integer. `run`: where the statements go
   * (a standby's pool), the database's own pool when absent. `cache`: whose objects a page lists
   * for the posts it holds at their version; nothing is stored in it.
   */
  constructor(db: Kysely<Database>, budget: number, run?: RunStatement, cache?: PostCache) {
    if (!(Number.isSafeInteger(budget) && budget >= 1)) {
      throw new RangeError("the search budget must be a positive integer");
    }
    this.#db = db;
    this.#budget = budget;
    this.#run = run;
    this.#cache = cache;
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
    return { posts, resumeBelow: parseInt8(scan.id) };
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
