import type { ReadPost, SearchPageQuery, SearchPageRead } from "@posts/domain";
import type { Kysely } from "kysely";
import { DIRECT_STATEMENTS, type RunStatement } from "../../connection/direct-statements.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { PostCache } from "../../post-cache/post-cache.js";
import { type ReadRow, toReadPost } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import type { SearchResults } from "./search-results.js";
import { SearchWalk } from "./search-walk.js";
import { TermMemory, termKey } from "./term-memory.js";
import { type Stepped, TrigramStep } from "./trigram-step.js";

/** How long the trigram step of a search page may take, by default, in milliseconds. */
const DEFAULT_INDEX_STEP_MS = 50;

/**
 * How often a term whose trigram step ran out of time tries it again, in milliseconds: one of its
 * pages a second takes the step, the others go without; and how many such terms are remembered.
 * What makes a step run out of time is either the length of the posting lists of the term's
 * trigrams over the whole table, the same below any cursor, which its next pages would only pay
 * again, or a moment's load: on ten million posts, the first sixteen pages of a rare term at once
 * on a fresh instance (each step planned, its heap pages read into PostgreSQL's buffers, two cores)
 * ran past 50 ms, and when a term then went without the step for a minute, every page of that
 * minute walked 3,000 posts and came back short. A step a second tells the two
 * apart, and costs a term whose lists are long one step's time a second; no page takes more than
 * one step either way.
 */
const OUT_OF_TIME_RETRY_MS = 1000;
const OUT_OF_TIME_TERMS = 1000;

/**
 * How long a term whose step answered a page right after the first walk goes straight to the step
 * (no walk) on its next pages, in milliseconds, and how many such terms are remembered. Such a
 * term's first walk finds next to nothing and costs a statement and a tenth of the budget's reads
 * for it; the step alone answers the same page (see `page`).
 */
const RARE_MS = 60_000;
const RARE_TERMS = 1000;

/**
 * How many times the step's time a term remembered as rare is given for its step. Its step
 * answered within its time lately: its trigrams' posting lists are short and its matches were at
 * most the budget, so a step of it that runs long is waiting for a core (or a lock), not reading
 * more. Without this, overload fed itself: on ten million posts, sixteen pages of a rare term at
 * once on two cores kept each step waiting past 50 ms, the term went without the step, and each
 * of its pages walked 3,000 posts instead, twice the step's work.
 */
const RARE_STEP_PATIENCE = 5;

/**
 * The first walk of a page that may take the trigram step reads this share of the budget (one
 * tenth: 300 posts of 3,000): enough for a page of a term in one post in 15 or more, little for a
 * rare term, whose page the step then fills without the rest of the walk.
 */
const FIRST_WALK_SHARE = 10;

/**
 * Whether the trigram step should come before the rest of the walk, given that the first walk
 * found `found` matches among `read` posts and stopped at id `below`: when as many matches among
 * every post below (at most `below - 1` of them, ids being positive and distinct) leave at most
 * `budget`, the most the step keeps. A term that dense would make the step give up, and most
 * likely fills its page within the rest of the walk, as before.
 */
export function stepBeforeWalk(found: number, read: number, below: number, budget: number): boolean {
  return found * (below - 1) <= budget * read;
}

/**
 * Search pages of bounded work (`PostRepository.searchPage`), in two steps.
 *
 * The walk: a page reads at most `budget` posts below its cursor, newest first, along the primary
 * key (or the author's index with an author), and at most `bytes` bytes of their text (its first
 * post whatever its size), tests each against the pattern and stops at `limit` matches or at the
 * end of its budget or its bytes; one statement, so one snapshot decides both the matches and
 * where the page stopped. Posts of megabytes each would otherwise let a page of a few thousand
 * of them read gigabytes; the bytes bound what it reads, and so what it answers. A `LIMIT` inside the subquery the filter reads cannot cost
 * more than `budget` rows whatever the planner estimates, and the walk is a generic plan, so
 * these statements are named. Terms in more than one post in a few thousand end here.
 *
 * The trigram step, on a PostgreSQL server, for a term of three or more characters whose walk ran
 * out of budget short of a page: the trigram indexes' bitmap below where the walk stopped, kept
 * only when it holds at most `budget` matches and answers within `indexStepMs` (see
 * `TrigramStep`). A rare term's page is then full, or its last, however old its matches, or it
 * ends at the last match that fits in the bytes the walk left; otherwise the page ends where the
 * walk stopped and the next one walks on. A walk that ran out of bytes ends its page there.
 *
 * The order, for a page that may take the step: a first walk of a tenth of the budget, which
 * fills the page of any common term; then, for a term that looks rare by what that walk found
 * (`stepBeforeWalk`), the step, and the rest of the walk only when the step gives up; for a
 * denser term the rest of the walk, then the step only when the page is still short. Either
 * way a page reads at most `budget` posts and `bytes` bytes of text, takes the step at most
 * once, and answers what the walk of the whole budget followed by the step would. A term whose step answered a page right
 * after the first walk skips that walk on its pages of the next minute: the step alone answers
 * them, given `RARE_STEP_PATIENCE` times the step's time, and the term goes back to the walk on
 * the first page whose step gives up. Elsewhere
 * (PGlite, a term of one or two characters, no step time) a page is one walk of the whole budget,
 * and so for a term whose step ran out of time, but for one of its pages a second, which takes the
 * step again (`OUT_OF_TIME_RETRY_MS`), until a step of it answers in time.
 *
 * Why not the trigram indexes alone, as `listPage` searches: a bitmap of a term reads the posting
 * lists of all its trigrams over the whole table, so its cost follows how common the term's
 * trigrams are, not the page (half a second for a term whose trigrams are in every post; more for
 * several such trigrams that never occur together), and only a timeout stops it.
 *
 * Both steps match in the "C" collation, which folds ASCII letters only, as the port's narrowest
 * reading and the in-memory store do: in a database of another locale ILIKE lower-cases each post
 * whole through that locale, about twice the CPU per post read, and its
 * folding of other letters would depend on how the database was made.
 */
export class SearchPages {
  readonly #budget: number;
  readonly #bytes: number;
  readonly #cache: PostCache | undefined;
  /** Whether `db` is a server's pool (createPostgresDatabase): PGlite pages only walk. */
  readonly #onServer: boolean;
  readonly #indexStepMs: number;
  /**
   * Terms whose step ran out of time and has not answered in time since, with when one of their
   * pages may take it again.
   */
  readonly #outOfTime = new TermMemory(OUT_OF_TIME_RETRY_MS, OUT_OF_TIME_TERMS);
  /**
   * Terms (by author, when searched by one) whose step answered a page after the first walk, with
   * until when they skip the walk.
   */
  readonly #rare = new TermMemory(RARE_MS, RARE_TERMS);
  readonly #results: SearchResults | undefined;
  readonly #walker: SearchWalk;
  readonly #step: TrigramStep;

  /**
   * `budget`: the most posts one page reads, a positive integer. `bytes`: the most bytes of text
   * (title and content) one page reads, and so answers, a positive integer; a page reads its first
   * post whatever its size. `run`: where the statements go
   * (a standby's pool), the database's own pool when absent. `cache`: whose objects a page lists
   * for the posts it holds at their version; nothing is stored in it. `results`: where the
   * matches a step counted are kept for the term's next pages (on a server only).
   */
  constructor(
    db: Kysely<Database>,
    budget: number,
    bytes: number,
    run?: RunStatement,
    cache?: PostCache,
    indexStepMs: number = DEFAULT_INDEX_STEP_MS,
    results?: SearchResults,
  ) {
    if (!(Number.isSafeInteger(budget) && budget >= 1)) {
      throw new RangeError("the search budget must be a positive integer");
    }
    if (!(Number.isSafeInteger(indexStepMs) && indexStepMs >= 0)) {
      throw new RangeError("the search's index step time must be a whole number of milliseconds");
    }
    if (!(Number.isSafeInteger(bytes) && bytes >= 1)) {
      throw new RangeError("the search's bytes must be a positive integer");
    }
    this.#budget = budget;
    this.#bytes = bytes;
    this.#cache = cache;
    this.#onServer = DIRECT_STATEMENTS.has(db);
    this.#indexStepMs = indexStepMs;
    this.#results = this.#onServer ? results : undefined;
    const post = (row: ReadRow) => this.#post(row);
    this.#walker = new SearchWalk(db, run, post);
    this.#step = new TrigramStep(db, budget, indexStepMs, this.#results, this.#outOfTime, post);
  }

  /** `PostRepository.searchPage`. */
  async page(query: SearchPageQuery): Promise<SearchPageRead> {
    const { limit } = query;
    const budget = this.#budget;
    const bytes = this.#bytes;
    const steps = this.#onServer && this.#indexStepMs > 0 && [...query.search].length >= 3;
    // By author too: a term rare in one author's posts may be common in everyone's.
    const rareKey = termKey(query);
    if (steps && this.#results !== undefined) {
      // A step counted this term's matches below the cursor, and no post has changed since.
      const stored = await this.#results.page(rareKey, query.beforeId, limit, bytes);
      if (stored !== undefined) {
        const posts = stored.rows.map((row) => this.#post(row));
        return stored.resumeBelow === undefined ? { posts } : { posts, resumeBelow: stored.resumeBelow };
      }
    }
    let stepping = steps && !this.#withoutStep(query.search);
    if (stepping && this.#rare.holds(rareKey)) {
      // Every match below the cursor from the step alone: the page the walk and the step would
      // give together, since the walk's matches are among them. When the term has grown too
      // common for the step, it is forgotten, and this page is a page without the step: one walk
      // of the whole budget (one step a page at most).
      const all = await this.#step.matches(
        query,
        query.beforeId ?? Number.MAX_SAFE_INTEGER,
        limit,
        { bytes, least: true },
        this.#indexStepMs * RARE_STEP_PATIENCE,
      );
      if (all !== undefined) return all;
      this.#rare.forget(rareKey);
      stepping = false;
    }
    const firstBudget = stepping ? Math.ceil(budget / FIRST_WALK_SHARE) : budget;
    const first = await this.#walker.walk(query, firstBudget, { bytes, least: true }, limit);
    let posts = first.posts;
    if (posts.length >= limit || first.stoppedAt === undefined) return { posts };
    // Out of bytes, the page has done its work: neither the rest of the walk nor the step.
    if (!stepping || first.outOfBytes) return { posts, resumeBelow: first.stoppedAt };
    let below = first.stoppedAt;
    let left = Math.max(0, bytes - first.bytes);
    if (firstBudget < budget) {
      const stepFirst = stepBeforeWalk(posts.length, firstBudget, below, budget);
      if (stepFirst) {
        const older = await this.#step.matches(query, below, limit - posts.length, {
          bytes: left,
          least: false,
        });
        // Every match below where the walk stopped is known: the page is full, or the search is
        // over, or it continues where the bytes ran out.
        if (older !== undefined) {
          this.#rare.remember(rareKey);
          return joined(posts, older);
        }
      }
      const rest = await this.#walker.walk(
        { ...query, beforeId: below },
        budget - firstBudget,
        { bytes: left, least: false },
        limit - posts.length,
      );
      posts = [...posts, ...rest.posts];
      if (posts.length >= limit || rest.stoppedAt === undefined) return { posts };
      // The step gave up already: once a page.
      if (stepFirst || rest.outOfBytes) return { posts, resumeBelow: rest.stoppedAt };
      below = rest.stoppedAt;
      left = Math.max(0, left - rest.bytes);
    }
    const older = await this.#step.matches(query, below, limit - posts.length, { bytes: left, least: false });
    if (older === undefined) return { posts, resumeBelow: below };
    return joined(posts, older);
  }

  /**
   * Whether a page of `search` goes without the step: a step of the term ran out of time and none
   * has answered in time since, and the last one ran out (or was tried again) less than
   * `OUT_OF_TIME_RETRY_MS` ago. Asking takes the turn: when the answer is that the page may try
   * the step, the term's other pages of the next `OUT_OF_TIME_RETRY_MS` go without.
   */
  #withoutStep(search: string): boolean {
    const nextTry = this.#outOfTime.until(search);
    if (nextTry === undefined) return false;
    if (nextTry > Date.now()) return true;
    // The mark stays until a step answers in time (`TrigramStep.matches`) or the memory outgrows its bound.
    this.#outOfTime.remember(search);
    return false;
  }

  #post(row: ReadRow): ReadPost {
    return this.#cache?.peek(parseInt8(row.id), row.updated_at.getTime()) ?? toReadPost(row);
  }
}

/** A page of the walk's matches followed by the step's, continuing where the step says. */
function joined(walked: readonly ReadPost[], stepped: Stepped): SearchPageRead {
  const posts = [...walked, ...stepped.posts];
  return stepped.resumeBelow === undefined ? { posts } : { posts, resumeBelow: stepped.resumeBelow };
}
