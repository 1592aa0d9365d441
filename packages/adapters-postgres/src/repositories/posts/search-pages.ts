import type { ReadPost, SearchPageQuery, SearchPageRead } from "@posts/domain";
import type { Kysely } from "kysely";
import { DIRECT_STATEMENTS, type RunStatement } from "../../connection/direct-statements.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { PostCache } from "../../post-cache/post-cache.js";
import { type ReadRow, toReadPost } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { DEFAULT_STATEMENT_MATCHES, PartitionSearch } from "./partition-search.js";
import { SearchWalk } from "./search-walk.js";

/** How long a search page asks partitions for, by default, in milliseconds (see `SearchPages`). */
export const DEFAULT_SEARCH_PAGE_MS = 150;

/**
 * How many posts the first walk of a page on a server reads, at most: enough for a page of any
 * term in one post in 15 or more, whose matches the walk finds among the newest posts for less
 * than a partition's bitmap would cost; a rarer term's page is the partitions'.
 */
const FIRST_WALK = 300;

/**
 * A page walks on through the rest of its budget, before it asks a partition, when the matches
 * of its first walk say the rest of the budget holds at least this many times the matches the
 * page still lacks. A term in one post in twenty finds about 15 in the first walk, and a
 * partition's bitmap would read and sort its 6,500 matches there to answer the 6 the page lacks;
 * the walk finds them among the next few hundred posts. A rarer term's page goes to the
 * partitions, whose bitmaps are then small.
 */
const WALK_ON_MARGIN = 2;

/**
 * Search pages of bounded work (`PostRepository.searchPage`).
 *
 * The walk: a page reads at most `budget` posts below its cursor, newest first, along the primary
 * key (or the author's index with an author), and at most `bytes` bytes of their text (its first
 * post whatever its size), tests each against the pattern and stops at `limit` matches or at the
 * end of its budget or its bytes; one statement, so one snapshot decides both the matches and
 * where the page stopped (`SearchWalk`). Posts of megabytes each would otherwise let a page of a
 * few thousand of them read gigabytes; the bytes bound what it reads, and so what it answers.
 *
 * On a PostgreSQL server a page walks at most 300 posts ({@link FIRST_WALK}), which fills the
 * page of any common term, walks on through the rest of its budget when the matches it found
 * promise to fill the page there ({@link WALK_ON_MARGIN}), and then asks the partitions of
 * `posts` below where the walk stopped, newest first, one statement each, through the
 * partition's trigram indexes or, for a term without a trigram, its index of characters
 * (`PartitionSearch`): each statement's work is bounded by its partition's posts, and the page
 * goes on to the next partition until it is full, the oldest partition was asked, or `pageMs`
 * have passed (then it continues below the last partition asked). A term whose matches are few,
 * old, or in one stretch of ids anywhere is then answered in one page: the partitions without
 * matches cost a few index pages each. On PGlite (one connection, in this process) a page is one
 * walk of the whole budget.
 *
 * Both match in the "C" collation, which folds ASCII letters only, as the port's narrowest
 * reading and the in-memory store do: in a database of another locale ILIKE lower-cases each post
 * whole through that locale, about twice the CPU per post read, and its folding of other letters
 * would depend on how the database was made.
 */
export class SearchPages {
  readonly #budget: number;
  readonly #bytes: number;
  readonly #cache: PostCache | undefined;
  readonly #pageMs: number;
  readonly #walker: SearchWalk;
  /** On a server's pool (createPostgresDatabase) only: PGlite pages only walk. */
  readonly #partitions: PartitionSearch | undefined;

  /**
   * `budget`: the most posts one walk reads, a positive integer. `bytes`: the most bytes of text
   * (title and content) one page reads, and so answers, a positive integer; a page reads its first
   * post whatever its size. `run`: where the walks go (a standby's pool), the database's own pool
   * when absent; the partitions are asked on the database's own pool. `cache`: whose objects a
   * page lists for the posts it holds at their version; nothing is stored in it. `pageMs`: how
   * long a page goes on asking partitions once it began, a whole number of milliseconds (0: one
   * partition a page). `partitions`: false makes every page one walk of the budget, as on PGlite.
   * `statementMatches`: the most matches one partition's statement reads (`PartitionSearch`).
   */
  constructor(
    db: Kysely<Database>,
    budget: number,
    bytes: number,
    run?: RunStatement,
    cache?: PostCache,
    pageMs: number = DEFAULT_SEARCH_PAGE_MS,
    partitions = true,
    statementMatches = DEFAULT_STATEMENT_MATCHES,
  ) {
    if (!(Number.isSafeInteger(budget) && budget >= 1)) {
      throw new RangeError("the search budget must be a positive integer");
    }
    if (!(Number.isSafeInteger(pageMs) && pageMs >= 0)) {
      throw new RangeError("a search page's time must be a whole number of milliseconds");
    }
    if (!(Number.isSafeInteger(bytes) && bytes >= 1)) {
      throw new RangeError("the search's bytes must be a positive integer");
    }
    this.#budget = budget;
    this.#bytes = bytes;
    this.#cache = cache;
    this.#pageMs = pageMs;
    const post = (row: ReadRow) => this.#post(row);
    this.#walker = new SearchWalk(db, run, post);
    this.#partitions =
      partitions && DIRECT_STATEMENTS.has(db) ? new PartitionSearch(db, post, statementMatches) : undefined;
  }

  /** `PostRepository.searchPage`. */
  async page(query: SearchPageQuery): Promise<SearchPageRead> {
    const { limit } = query;
    const partitions = this.#partitions;
    const first = partitions === undefined ? this.#budget : Math.min(this.#budget, FIRST_WALK);
    let walked = await this.#walker.walk(query, first, { bytes: this.#bytes, least: true }, limit);
    let { posts, stoppedAt } = walked;
    let bytes = walked.bytes;
    if (posts.length >= limit || stoppedAt === undefined) return { posts };
    // Out of bytes, the page has done its work.
    if (partitions === undefined || walked.outOfBytes) return { posts, resumeBelow: stoppedAt };
    const rest = this.#budget - first;
    if (posts.length * rest >= WALK_ON_MARGIN * (limit - posts.length) * first) {
      // The walk's page size is written into its statement: a power of two keeps the statements
      // of a connection few, and the page takes what it lacks of the matches.
      const lacking = limit - posts.length;
      walked = await this.#walker.walk(
        { ...query, beforeId: stoppedAt },
        rest,
        { bytes: this.#bytes - bytes, least: false },
        Math.min(limit, 2 ** Math.ceil(Math.log2(lacking))),
      );
      posts = [...posts, ...walked.posts.slice(0, lacking)];
      stoppedAt = walked.stoppedAt;
      bytes += walked.bytes;
      if (posts.length >= limit || stoppedAt === undefined) return { posts };
      if (walked.outOfBytes) return { posts, resumeBelow: stoppedAt };
    }
    const older = await partitions.matches(
      query,
      stoppedAt,
      limit - posts.length,
      Math.max(0, this.#bytes - bytes),
      this.#pageMs,
    );
    const all = [...posts, ...older.posts];
    return older.resumeBelow === undefined ? { posts: all } : { posts: all, resumeBelow: older.resumeBelow };
  }

  #post(row: ReadRow): ReadPost {
    return this.#cache?.peek(parseInt8(row.id), row.updated_at.getTime()) ?? toReadPost(row);
  }
}
