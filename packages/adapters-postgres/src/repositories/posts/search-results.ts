import { type Kysely, sql } from "kysely";
import { LRUCache } from "lru-cache";
import type { RunStatement } from "../../connection/direct-statements.js";
import { type PreparedStatement, prepare } from "../../connection/prepare.js";
import type { ReadRow } from "../../rows/post-row.js";
import type { Database } from "../../schema/database.js";
import { contentOrSizeOf } from "./read-statements.js";

/**
 * Where the posts stand, as one text: the relation that holds them (a `TRUNCATE` gives it
 * another) and the newest number of the change event log. Every change of a post writes its event
 * row in its own transaction, numbers are given after commit, in order and without gaps
 * (`PostgresChangeEventLog`), and each row keeps the id of the transaction that wrote it. So a
 * change committed after a first reading shows in a later one either as a greater number or as a
 * row still without a number written by a transaction at or past the first reading's `xmin` (every
 * transaction its snapshot did not see is), which {@link positionSince} looks for. A change the
 * first reading saw committed is in what was read after it, numbered or not.
 */
const POSITION = sql<string>`pg_relation_filenode('posts')::text || ':'
  || coalesce((SELECT max(number) FROM post_events)::text, '')`;

/**
 * The {@link POSITION} now, or null when a change not seen by a snapshot whose `xmin` was
 * `xmin` may still wait for its number. Only rows from `xmin` on are looked at: below it lie the
 * index entries of every event numbered since the table was last vacuumed, which a search for any
 * row without a number steps through (2.3 ms, 554 pages, on the bench's ten-million-post
 * database after its writes).
 */
function positionSince(xmin: unknown) {
  return sql<string | null>`CASE
    WHEN EXISTS (SELECT 1 FROM post_events WHERE number IS NULL AND xid >= ${xmin}::xid8) THEN NULL
    ELSE ${POSITION} END`;
}

/**
 * A row of a cached page's statement: one of its posts (`position` null), or the position row,
 * with how many of the ids asked for it found (`found`).
 */
type PageRow =
  | (ReadRow & { readonly position: null })
  | { readonly id: null; readonly position: string | null; readonly found: number | string };

/** The values of a cached page's statement. */
interface PageValues {
  readonly ids: readonly number[];
  readonly xmin: string;
  /** The most bytes of text the page answers, but for its first post. */
  readonly bytes: number;
}

/** A page answered from a term's stored matches: its posts, and where it continues when they ran out of bytes. */
export interface StoredPage {
  readonly rows: ReadRow[];
  readonly resumeBelow?: number;
}

/** What a {@link SearchResults} has done since it was made, and holds now. */
export interface SearchResultsStats {
  /** Pages answered from a term's stored matches. */
  readonly hits: number;
  /** Terms' matches stored. */
  readonly stores: number;
  /** Stored matches found out of date (a change since) and dropped. */
  readonly stale: number;
  /** Terms held now. */
  readonly terms: number;
}

/** One term's matches, as a trigram step counted them. */
interface Entry {
  /** Where the posts stood before the step read them (see {@link POSITION}). */
  readonly position: string;
  /** The `xmin` of the snapshot that read `position`. */
  readonly xmin: string;
  /** This process's count of its own changes then (see {@link SearchResults.changed}). */
  readonly generation: number;
  /** Every match with an id below this is in `ids`. */
  readonly below: number;
  /** The matches' ids, newest first. */
  readonly ids: readonly number[];
}

/** Where the posts stood before a step, to store its matches with (see {@link SearchResults.before}). */
export interface Taken {
  readonly position: string;
  readonly xmin: string;
  readonly generation: number;
}

/**
 * The matches of rare terms, kept from the trigram step that counted them and used again for as
 * long as no post has changed since: the next page of such a term (its first page asked again,
 * or one below a cursor) reads its posts by id, and the position of the posts in the same
 * statement, instead of the step's count of every match below the cursor. That count grows with
 * the table (a term in one post in 10,000 has 100 matches on a million posts and 1,000 on ten
 * million, each a heap visit), a page of stored matches does not.
 *
 * Fresh by construction, on one instance or many, and on a hot standby: the position is read
 * before the step and stored with its matches, and a page is answered from them only when the
 * position it reads with its posts, in its own snapshot, is the same; any change of any post
 * since (on any instance, or by hand) moves it, and the term is counted again. This instance's
 * own changes drop every term without a statement ({@link changed}). Elasticsearch's shard
 * request cache is kept the same way, dropped at each refresh that shows a change.
 *
 * Bounded by the ids held (least recently used first); a few lines of an LRU map would do, but
 * `lru-cache` is already this package's, for the post cache.
 */
export class SearchResults {
  readonly #entries: LRUCache<string, Entry>;
  readonly #position: PreparedStatement<Record<string, never>, Omit<Taken, "generation">>;
  readonly #page: PreparedStatement<PageValues, PageRow>;
  #generation = 0;
  #hits = 0;
  #stores = 0;
  #stale = 0;

  /**
   * `maxIds`: the most ids held over every term (a positive integer). `run`: where a cached
   * page's statement goes (a standby's pool), the database's own pool when absent; the position
   * read before a step goes where the step does.
   */
  constructor(db: Kysely<Database>, maxIds: number, run?: RunStatement) {
    if (!(Number.isSafeInteger(maxIds) && maxIds >= 1)) {
      throw new RangeError(`the search results' bound must be a positive integer, got ${maxIds}`);
    }
    this.#entries = new LRUCache<string, Entry>({
      maxSize: maxIds,
      sizeCalculation: (entry) => entry.ids.length + 1,
    });
    this.#position = prepare(db, () =>
      sql<Omit<Taken, "generation">>`
        SELECT ${POSITION} AS position, pg_snapshot_xmin(pg_current_snapshot())::text AS xmin`.compile(db),
    );
    // The posts newest first while their text adds up to the bytes, by a running sum of
    // `octet_length`, which reads only the values' headers (as the walk of a search page does);
    // a large content as its size (`contentOrSizeOf`), as the walk answers it.
    this.#page = prepare(
      db,
      (p: PageValues) =>
        sql<PageRow>`
          WITH k AS MATERIALIZED (
            SELECT q.id, q.title, q.content, q.created_at, q.updated_at, q.user_id,
                   sum(octet_length(q.title) + octet_length(q.content)) OVER w AS upto,
                   row_number() OVER w AS n
              FROM posts q WHERE q.id = ANY(${p.ids}::int8[])
            WINDOW w AS (ORDER BY q.id DESC ROWS UNBOUNDED PRECEDING))
          SELECT p.id, p.title, ${contentOrSizeOf("p")}, p.created_at, p.updated_at, p.user_id AS author_id,
                 (SELECT u.email FROM users u WHERE u.id = p.user_id) AS author_email,
                 NULL::text AS position, NULL::int8 AS found
            FROM k p WHERE p.upto <= ${p.bytes}::int8 OR p.n = 1
          UNION ALL
          SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ${positionSince(p.xmin)},
                 (SELECT count(*) FROM k)`.compile(db),
      { run },
    );
  }

  /**
   * Records that this process changed a post: every stored term is out of date from now on, and
   * is dropped when next asked for, without a statement.
   */
  changed(): void {
    this.#generation++;
  }

  /**
   * Where the posts stand, read on `on` (the connection the step will run on) before the step:
   * what {@link store} needs so that its matches are trusted only while nothing has changed.
   */
  async before(on: Kysely<Database>): Promise<Taken> {
    const generation = this.#generation;
    const [row] = await this.#position({}, on);
    if (row === undefined) throw new Error("reading where the posts stand answered no row");
    return { position: row.position, xmin: row.xmin, generation };
  }

  /**
   * Keeps, for the term `key`, `ids` (newest first): every match with an id below `below`, as a
   * step counted them after `taken`. Nothing is kept when this process changed a post since.
   */
  store(key: string, taken: Taken, below: number, ids: readonly number[]): void {
    if (taken.generation !== this.#generation) return;
    const { position, xmin, generation } = taken;
    this.#entries.set(key, { position, xmin, generation, below, ids });
    this.#stores++;
  }

  /**
   * The posts of the page of `key` below `beforeId` (none: from the newest), at most `limit`,
   * newest first, as many as fit in `bytes` bytes of text (the first whatever its size), when its
   * stored matches cover that cursor and no post has changed since they were counted: every
   * match below the cursor is then known, so a page shorter than `limit` is the last unless it
   * ran out of bytes, when `resumeBelow` is its last post's id. `undefined` otherwise (the term is
   * dropped when out of date).
   */
  async page(
    key: string,
    beforeId: number | undefined,
    limit: number,
    bytes: number,
  ): Promise<StoredPage | undefined> {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    const below = beforeId ?? Number.MAX_SAFE_INTEGER;
    if (below > entry.below) return undefined;
    if (entry.generation !== this.#generation) {
      this.#drop(key, entry);
      return undefined;
    }
    const start = firstBelow(entry.ids, below);
    const ids = entry.ids.slice(start, start + limit);
    const rows = await this.#page({ ids, xmin: entry.xmin, bytes });
    const posts = new Map<number, ReadRow>();
    let position: string | null | undefined;
    let found = 0;
    for (const row of rows) {
      if (row.id !== null) posts.set(Number(row.id), row as ReadRow);
      else {
        position = row.position;
        found = Number(row.found);
      }
    }
    if (position !== entry.position) {
      this.#drop(key, entry);
      return undefined;
    }
    // The same position, yet a post missing: a standby behind the primary that counted them.
    if (found < ids.length) return undefined;
    this.#hits++;
    // The newest ids, as many as fit in the bytes.
    const fitting = ids.slice(0, posts.size);
    const page = fitting.map((id) => posts.get(id) as ReadRow);
    if (fitting.length === ids.length) return { rows: page };
    return { rows: page, resumeBelow: fitting.at(-1) as number };
  }

  /** Counts so far, and what is held now. */
  stats(): SearchResultsStats {
    return { hits: this.#hits, stores: this.#stores, stale: this.#stale, terms: this.#entries.size };
  }

  #drop(key: string, entry: Entry): void {
    // Only that entry: another page may have stored a newer one meanwhile.
    if (this.#entries.peek(key) === entry) this.#entries.delete(key);
    this.#stale++;
  }
}

/** The index of the first of `ids` (descending) below `below`: a binary search. */
function firstBelow(ids: readonly number[], below: number): number {
  let low = 0;
  let high = ids.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((ids[middle] as number) < below) high = middle;
    else low = middle + 1;
  }
  return low;
}
