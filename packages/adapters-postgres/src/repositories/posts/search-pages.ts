import { MAX_PAGE_SIZE, type Post, type SearchPageQuery, type SearchPageRead } from "@posts/domain";
import { type Kysely, type RawBuilder, sql } from "kysely";
import { DIRECT_STATEMENTS, type RunStatement } from "../../connection/direct-statements.js";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import { sqlStateOf } from "../../connection/sql-state.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { PostCache } from "../../post-cache/post-cache.js";
import { type PostRow, toPost } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { containsPattern } from "./read-statements.js";
import type { SearchResults, Taken } from "./search-results.js";
import { bothVariants, type Variants, variant } from "./variants.js";

/** SQLSTATE query_canceled: what a statement timeout raises. */
const SQLSTATE_QUERY_CANCELED = "57014";

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

/** The values of the trigram step. */
interface StepValues {
  readonly pattern: string;
  readonly below: number;
  readonly wanted: number;
  readonly authorId?: number;
}

/**
 * A row of the trigram step: a match (`found` null), or the one row that says how many matches
 * the step found (at most budget + 1) and, when at most the budget, their ids, newest first.
 */
type StepRow = (PostRow & { readonly found: null }) | StepCount;
type StepCount = { readonly found: number | string; readonly ids: readonly (number | string)[] | null };

/** What one walk found: its matches, and the oldest post it read while older ones remain unread. */
interface Walked {
  readonly posts: Post[];
  /** Absent when the walk read every post below its start (there is nothing older to read). */
  readonly stoppedAt?: number;
}

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
 * The order, for a page that may take the step: a first walk of a tenth of the budget, which
 * fills the page of any common term; then, for a term that looks rare by what that walk found
 * (`stepBeforeWalk`), the step, and the rest of the walk only when the step gives up; for a
 * denser term the rest of the walk, then the step only when the page is still short. Either
 * way a page reads at most `budget` posts and takes the step at most once, and answers what the
 * walk of the whole budget followed by the step would. A term whose step answered a page right
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
  readonly #db: Kysely<Database>;
  readonly #run: RunStatement | undefined;
  readonly #budget: number;
  readonly #cache: PostCache | undefined;
  /** By budget, then page size. */
  readonly #forBudget = new Map<number, Map<number, SizeStatements>>();
  /** Whether `db` is a server's pool (createPostgresDatabase): PGlite pages only walk. */
  readonly #onServer: boolean;
  readonly #indexStepMs: number;
  /**
   * Terms whose step ran out of time and has not answered in time since, with when one of their
   * pages may take it again, oldest first.
   */
  readonly #outOfTime = new Map<string, number>();
  /**
   * Terms (by author, when searched by one) whose step answered a page after the first walk, with
   * until when they skip the walk, oldest first. These two maps with an expiry and a bound are a
   * few lines by hand (`#remember`), not a cache library this package would otherwise not need.
   */
  readonly #rare = new Map<string, number>();
  readonly #results: SearchResults | undefined;
  #stepStatements: Variants<PreparedStatement<StepValues, StepRow>> | undefined;

  /**
   * `budget`: the most posts one page reads, a positive integer. `run`: where the statements go
   * (a standby's pool), the database's own pool when absent. `cache`: whose objects a page lists
   * for the posts it holds at their version; nothing is stored in it. `results`: where the
   * matches a step counted are kept for the term's next pages (on a server only).
   */
  constructor(
    db: Kysely<Database>,
    budget: number,
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
    this.#db = db;
    this.#budget = budget;
    this.#run = run;
    this.#cache = cache;
    this.#onServer = DIRECT_STATEMENTS.has(db);
    this.#indexStepMs = indexStepMs;
    this.#results = this.#onServer ? results : undefined;
  }

  /** `PostRepository.searchPage`. */
  async page(query: SearchPageQuery): Promise<SearchPageRead> {
    const { limit } = query;
    const budget = this.#budget;
    const steps = this.#onServer && this.#indexStepMs > 0 && [...query.search].length >= 3;
    // By author too: a term rare in one author's posts may be common in everyone's.
    const rareKey = termKey(query);
    if (steps && this.#results !== undefined) {
      // A step counted this term's matches below the cursor, and no post has changed since.
      const rows = await this.#results.page(rareKey, query.beforeId, limit);
      if (rows !== undefined) return { posts: rows.map((row) => this.#post(row)) };
    }
    let stepping = steps && !this.#withoutStep(query.search);
    if (stepping && this.#remembered(this.#rare, rareKey)) {
      // Every match below the cursor from the step alone: the page the walk and the step would
      // give together, since the walk's matches are among them. When the term has grown too
      // common for the step, it is forgotten, and this page is a page without the step: one walk
      // of the whole budget (one step a page at most).
      const all = await this.#fromTheIndex(
        query,
        query.beforeId ?? Number.MAX_SAFE_INTEGER,
        limit,
        this.#indexStepMs * RARE_STEP_PATIENCE,
      );
      if (all !== undefined) return { posts: all };
      this.#rare.delete(rareKey);
      stepping = false;
    }
    const firstBudget = stepping ? Math.ceil(budget / FIRST_WALK_SHARE) : budget;
    const first = await this.#walk(query, firstBudget, limit);
    let posts = first.posts;
    if (posts.length >= limit || first.stoppedAt === undefined) return { posts };
    if (!stepping) return { posts, resumeBelow: first.stoppedAt };
    let below = first.stoppedAt;
    if (firstBudget < budget) {
      const stepFirst = stepBeforeWalk(posts.length, firstBudget, below, budget);
      if (stepFirst) {
        const older = await this.#fromTheIndex(query, below, limit - posts.length);
        // Every match below where the walk stopped is known: the page is full, or the search is over.
        if (older !== undefined) {
          this.#remember(this.#rare, rareKey, RARE_MS, RARE_TERMS);
          return { posts: [...posts, ...older] };
        }
      }
      const rest = await this.#walk(
        { ...query, beforeId: below },
        budget - firstBudget,
        limit - posts.length,
      );
      posts = [...posts, ...rest.posts];
      if (posts.length >= limit || rest.stoppedAt === undefined) return { posts };
      // The step gave up already: once a page.
      if (stepFirst) return { posts, resumeBelow: rest.stoppedAt };
      below = rest.stoppedAt;
    }
    const older = await this.#fromTheIndex(query, below, limit - posts.length);
    if (older === undefined) return { posts, resumeBelow: below };
    return { posts: [...posts, ...older] };
  }

  /**
   * One walk: the matches among the `budget` newest posts below `query.beforeId`, up to `limit`,
   * and where it stopped when it read its whole budget (older posts may remain).
   */
  async #walk(query: SearchPageQuery, budget: number, limit: number): Promise<Walked> {
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

  /**
   * The trigram step (on a server, for a term of three or more characters: `page` decides): the
   * newest `wanted` matches below `below` from the trigram indexes' bitmap, when there are at most
   * `budget` of them (all are then known, and a rare term's page is full however old its matches);
   * `undefined` when there are more, or when the bitmap alone would take longer than `timeMs`
   * (the step's time unless `page` gives more; a term whose trigrams are all common reads their
   * posting lists over the whole table, whatever it matches: PostgreSQL can only be stopped by a
   * statement timeout there).
   *
   * One transaction on one connection of the database's own pool, not through `run`: its settings
   * (`SET LOCAL`, sent with `BEGIN` in one text), the step as a named statement, then `ROLLBACK`
   * and `SELECT 1` in one text. A timeout that fires as the step ends stays pending in the server
   * and cancels the next statement on that connection (seen under load, a few in a thousand),
   * which must be one of these rather than another request's; should it cancel the `ROLLBACK`,
   * a second one ends the transaction.
   *
   * No JIT and no parallel workers: the plan made without the term prices the bitmap at a share
   * of the whole table, so on ten million posts it crossed `jit_above_cost` and the parallel
   * thresholds, and compiling the step took 70–115 ms, past its time, for a step that runs in
   * a few. The step's work is bounded by the budget; neither can pay there.
   */
  async #fromTheIndex(
    query: SearchPageQuery,
    below: number,
    wanted: number,
    timeMs: number = this.#indexStepMs,
  ): Promise<Post[] | undefined> {
    const { authorId } = query;
    const step = this.#steps()[variant(authorId)];
    const values = {
      pattern: containsPattern(query.search),
      below,
      wanted,
      ...(authorId === undefined ? {} : { authorId }),
    };
    const results = this.#results;
    let taken: Taken | undefined;
    const rows = await this.#db.connection().execute(async (connection) => {
      // Before the step's snapshot, so that its matches are kept only while nothing changed since.
      taken = await results?.before(connection);
      await sql
        .raw(
          `BEGIN; SET LOCAL statement_timeout = ${timeMs};
           SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off;
           SET LOCAL plan_cache_mode = force_generic_plan;
           SET LOCAL jit = off; SET LOCAL max_parallel_workers_per_gather = 0`,
        )
        .execute(connection);
      let outcome: { readonly rows: StepRow[] } | { readonly error: unknown };
      try {
        outcome = { rows: await step(values, connection) };
      } catch (error) {
        outcome = { error };
      }
      await sql
        .raw("ROLLBACK; SELECT 1")
        .execute(connection)
        .catch(async (error: unknown) => {
          if (sqlStateOf(error) !== SQLSTATE_QUERY_CANCELED) throw error;
          await sql.raw("ROLLBACK").execute(connection);
        });
      if ("rows" in outcome) {
        // In time: the term's posting lists are short, whatever a page of it that waited for a
        // core at the same moment concluded.
        this.#outOfTime.delete(query.search);
        return outcome.rows;
      }
      if (sqlStateOf(outcome.error) !== SQLSTATE_QUERY_CANCELED) throw outcome.error;
      this.#remember(this.#outOfTime, query.search, OUT_OF_TIME_RETRY_MS, OUT_OF_TIME_TERMS);
      return undefined;
    });
    if (rows === undefined) return undefined;
    const posts: Post[] = [];
    let count: StepCount | undefined;
    for (const row of rows) {
      if (row.found === null) posts.push(this.#post(row as PostRow));
      else count = row as StepCount;
    }
    if (count === undefined || Number(count.found) > this.#budget) return undefined;
    if (results !== undefined && taken !== undefined && count.ids !== null) {
      results.store(termKey(query), taken, below, count.ids.map(parseInt8));
    }
    return posts;
  }

  #steps(): Variants<PreparedStatement<StepValues, StepRow>> {
    this.#stepStatements ??= bothVariants((byAuthor) => this.#step(byAuthor));
    return this.#stepStatements;
  }

  // `id + 0` and the settings leave the bitmap as the only plan: a walk of the primary key
  // filtered row by row is what the step exists to avoid. With them, the plan made without the
  // values (`force_generic_plan`) is the one made for any term, and a named
  // statement keeps it: no planning per page. The index is matched in the database's collation,
  // which it was built in, and each candidate again in "C", as the walk. The matches are counted
  // and ordered by id alone, and only the page's posts are read whole: every match passes through
  // the count, and carrying its title and content there cost a tenth of the step on ten million
  // posts. The count's row carries every match's id, newest first, for the
  // term's next pages (`SearchResults`).
  #step(byAuthor: boolean) {
    const db = this.#db;
    return prepare(db, (p: Required<StepValues>) => {
      const author = byAuthor ? sql`AND user_id = ${p.authorId}` : sql``;
      const budget = this.#budget;
      return sql<StepRow>`
        WITH m AS MATERIALIZED (
          SELECT id FROM posts
           WHERE id + 0 < ${p.below} ${author}
             AND (title ILIKE ${p.pattern} ESCAPE '\\' OR content ILIKE ${p.pattern} ESCAPE '\\')
             AND (title COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\'
                  OR content COLLATE "C" ILIKE ${p.pattern} ESCAPE '\\')
           LIMIT ${sql.lit(budget + 1)})
        (SELECT p.id, p.title, p.content, p.created_at, p.updated_at, p.user_id AS author_id,
                (SELECT u.email FROM users u WHERE u.id = p.user_id) AS author_email,
                NULL::int8 AS found, NULL::int8[] AS ids
           FROM (SELECT id FROM m ORDER BY id DESC LIMIT ${p.wanted}) c
           JOIN posts p ON p.id = c.id
          ORDER BY p.id DESC)
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, count(*),
               CASE WHEN count(*) <= ${sql.lit(budget)}
                    THEN coalesce(array_agg(id ORDER BY id DESC), '{}') END
          FROM m`.compile(db);
    });
  }

  /**
   * Whether a page of `search` goes without the step: a step of the term ran out of time and none
   * has answered in time since, and the last one ran out (or was tried again) less than
   * `OUT_OF_TIME_RETRY_MS` ago. Asking takes the turn: when the answer is that the page may try
   * the step, the term's other pages of the next `OUT_OF_TIME_RETRY_MS` go without.
   */
  #withoutStep(search: string): boolean {
    const nextTry = this.#outOfTime.get(search);
    if (nextTry === undefined) return false;
    if (nextTry > Date.now()) return true;
    // The mark stays until a step answers in time (`#fromTheIndex`) or the map outgrows its bound.
    this.#remember(this.#outOfTime, search, OUT_OF_TIME_RETRY_MS, OUT_OF_TIME_TERMS);
    return false;
  }

  /** Whether `terms` holds `search` and its time has not run out (an expired entry goes). */
  #remembered(terms: Map<string, number>, search: string): boolean {
    const until = terms.get(search);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    terms.delete(search);
    return false;
  }

  /** Remembers `search` in `terms` for `ms`, newest last, forgetting the oldest beyond `most`. */
  #remember(terms: Map<string, number>, search: string, ms: number, most: number): void {
    terms.delete(search);
    terms.set(search, Date.now() + ms);
    if (terms.size > most) terms.delete(terms.keys().next().value as string);
  }

  #post(row: PostRow): Post {
    return this.#cache?.peek(parseInt8(row.id), row.updated_at.getTime()) ?? toPost(row);
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

/** What tells a term's pages apart: by author too, as a term rare in one author's posts may be common in everyone's. */
function termKey(query: SearchPageQuery): string {
  return `${query.authorId ?? ""} ${query.search}`;
}
