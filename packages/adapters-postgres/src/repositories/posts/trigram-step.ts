import type { ReadPost, SearchPageQuery } from "@posts/domain";
import { type Kysely, sql } from "kysely";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import { sqlStateOf } from "../../connection/sql-state.js";
import { parseInt8 } from "../../connection/type-parsers.js";
import type { ReadRow } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { containsPattern, contentOrSizeOf } from "./read-statements.js";
import type { SearchResults, Taken } from "./search-results.js";
import type { WalkBytes } from "./search-walk.js";
import { type TermMemory, termKey } from "./term-memory.js";
import { bothVariants, type Variants, variant } from "./variants.js";

/** SQLSTATE query_canceled: what a statement timeout raises. */
const SQLSTATE_QUERY_CANCELED = "57014";

/** The values of the trigram step. */
interface StepValues {
  readonly pattern: string;
  readonly below: number;
  readonly wanted: number;
  /** The most bytes of text of the matches the step answers, but for its first `least`. */
  readonly bytes: number;
  readonly least: number;
  readonly authorId?: number;
}

/**
 * What a step answered: the newest matches below where it started, and, when the bytes it may
 * answer ran out before them, where the page continues (every match from there up is among
 * `posts`).
 */
export interface Stepped {
  readonly posts: ReadPost[];
  readonly resumeBelow?: number;
}

/**
 * A row of the trigram step: a match (`found` null), or the one row that says how many matches
 * the step found (at most budget + 1) and, when at most the budget, their ids, newest first.
 */
type StepRow = (ReadRow & { readonly found: null }) | StepCount;
type StepCount = { readonly found: number | string; readonly ids: readonly (number | string)[] | null };

/** The trigram step of a search page (see `SearchPages`), on a PostgreSQL server. */
export class TrigramStep {
  readonly #db: Kysely<Database>;
  readonly #budget: number;
  readonly #indexStepMs: number;
  readonly #results: SearchResults | undefined;
  readonly #outOfTime: TermMemory;
  readonly #post: (row: ReadRow) => ReadPost;
  #stepStatements: Variants<PreparedStatement<StepValues, StepRow>> | undefined;

  /**
   * `budget`: the most matches a step keeps. `indexStepMs`: its time. `results`: where the matches
   * a step counted are kept for the term's next pages. `outOfTime`: the terms whose step ran out
   * of time, remembered here and forgotten when a step of theirs answers in time. `post`: a
   * matching row as a post, or an outline when its content is large.
   */
  constructor(
    db: Kysely<Database>,
    budget: number,
    indexStepMs: number,
    results: SearchResults | undefined,
    outOfTime: TermMemory,
    post: (row: ReadRow) => ReadPost,
  ) {
    this.#db = db;
    this.#budget = budget;
    this.#indexStepMs = indexStepMs;
    this.#results = results;
    this.#outOfTime = outOfTime;
    this.#post = post;
  }

  /**
   * The trigram step (on a server, for a term of three or more characters: `SearchPages` decides): the
   * newest `wanted` matches below `below` from the trigram indexes' bitmap, when there are at most
   * `budget` of them (all are then known, and a rare term's page is full however old its matches),
   * as many of them, newest first, as fit in `bytes.bytes` bytes of text (the first whatever its
   * size when `bytes.least`), with where the page continues when not all of them fit;
   * `undefined` when there are more, or when the bitmap alone would take longer than `timeMs`
   * (the step's time unless the caller gives more; a term whose trigrams are all common reads their
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
  async matches(
    query: SearchPageQuery,
    below: number,
    wanted: number,
    bytes: WalkBytes,
    timeMs: number = this.#indexStepMs,
  ): Promise<Stepped | undefined> {
    const { authorId } = query;
    const step = this.#steps()[variant(authorId)];
    const values = {
      pattern: containsPattern(query.search),
      below,
      wanted,
      bytes: bytes.bytes,
      least: bytes.least ? 1 : 0,
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
        this.#outOfTime.forget(query.search);
        return outcome.rows;
      }
      if (sqlStateOf(outcome.error) !== SQLSTATE_QUERY_CANCELED) throw outcome.error;
      this.#outOfTime.remember(query.search);
      return undefined;
    });
    if (rows === undefined) return undefined;
    const posts: ReadPost[] = [];
    let count: StepCount | undefined;
    for (const row of rows) {
      if (row.found === null) posts.push(this.#post(row as ReadRow));
      else count = row as StepCount;
    }
    if (count === undefined || Number(count.found) > this.#budget) return undefined;
    if (results !== undefined && taken !== undefined && count.ids !== null) {
      results.store(termKey(query), taken, below, count.ids.map(parseInt8));
    }
    // Fewer posts than matches wanted: the next did not fit in the bytes.
    if (posts.length < Math.min(wanted, Number(count.found))) {
      return { posts, resumeBelow: posts.at(-1)?.id ?? below };
    }
    return { posts };
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
  // term's next pages (`SearchResults`). The page's posts are answered while their text adds up
  // to the bytes given, by a running sum of `octet_length`, which reads only the values' headers
  // (as the walk's); a large one is answered as its size (`contentOrSizeOf`). The rechecks of the bitmap's candidates read their text whole: what bounds
  // them is the step's time, not its bytes (a statement can stop only between rows).
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
        (SELECT p.id, p.title, ${contentOrSizeOf("p")}, p.created_at, p.updated_at, p.user_id AS author_id,
                (SELECT u.email FROM users u WHERE u.id = p.user_id) AS author_email,
                NULL::int8 AS found, NULL::int8[] AS ids
           FROM (SELECT q.id, q.title, q.content, q.created_at, q.updated_at, q.user_id,
                        sum(octet_length(q.title) + octet_length(q.content)) OVER w AS upto,
                        row_number() OVER w AS n
                   FROM (SELECT id FROM m ORDER BY id DESC LIMIT ${p.wanted}) c
                   JOIN posts q ON q.id = c.id
                 WINDOW w AS (ORDER BY q.id DESC ROWS UNBOUNDED PRECEDING)) p
          WHERE p.upto <= ${p.bytes}::int8 OR p.n <= ${p.least}::int8
          ORDER BY p.id DESC)
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, count(*),
               CASE WHEN count(*) <= ${sql.lit(budget)}
                    THEN coalesce(array_agg(id ORDER BY id DESC), '{}') END
          FROM m`.compile(db);
    });
  }
}
