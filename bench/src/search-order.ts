/**
 * The search-in-id-order study (docs/design/search-in-id-order.md): how long each candidate
 * design takes to the first 20 matches of a term (or the definite end), following the cursor
 * page by page as a client does, for terms of every class the goal names, and what each costs
 * an insert. Each design lives in its own database on one PostgreSQL 15 server, copies of one
 * seed (bench/search-order/seed.sql):
 *
 *   today         search_1m: the migrations' schema (whole-table pg_trgm GIN indexes), searched
 *                 through the adapter's own `PostgresPostRepository.searchPage` (a fresh
 *                 repository per term, so no term is helped by an earlier one's memories);
 *   ranges        search_parts: partial trigram indexes of 131,072 ids each (ranges.sql); a walk
 *                 of 300 posts, then the ranges newest first, one statement each, until the page
 *                 is full or has spent 150 ms;
 *   ranges32      search_parts32: the same by 32,768 ids, and per-range indexes of each post's
 *                 characters (chars.sql) for terms of one or two characters;
 *   ranges32-c    search_partsc: ranges32 with the trigram indexes in the "C" collation;
 *   ranges-probe  search_parts: ranges, probing a range before windows of ids inside it;
 *   partitions    search_partitioned: posts partitioned by 131,072 ids (partitions.sql), "C"
 *                 trigram and character indexes per partition; a walk of 300, then the
 *                 partitions newest first, one statement each (partitions-10m: search_10m,
 *                 the same on 10,000,000 posts, partitioned before the seed);
 *   partitions64  search_partitioned64: the same by 65,536 ids a partition;
 *   partitions64-windows  the same, a partition searched in windows of ids below the cursor
 *                 (8,192 first, doubled after one without a match), which bound a statement only
 *                 where the planner combines the trigram bitmap with the primary key's (BitmapAnd);
 *   partitions64-timeout  the same, each partition statement with a statement timeout of
 *                 100 ms, the page walking that partition for the rest of its time when it runs out
 *                 (partitions64-timeout25: 25 ms, which the every-candidate partitions outlast);
 *   partitions64-bound  the same, the timeout what is left of a page's 250 ms, so that it fires
 *                 only where the page would pass that;
 *   partitions64-walk  search_partitioned64n: partitions64 without the character index, terms of
 *                 1 or 2 characters walked for the page's time;
 *   pglite        today's adapter on an in-memory PGlite seeded by seed.sql (200,000 posts);
 *   rum           search_rum: a RUM index of each post's trigrams and characters, the id attached
 *                 and the posting lists ordered by it (rum.sql, needs postgresql-15-rum).
 *
 * Setup, on a throwaway server of your own (the seed takes a minute, each design 1 to 10):
 *
 *   psql -c 'create database search_1m'
 *   grep -v trgm_idx packages/adapters-postgres/src/schema/schema.sql | psql -d search_1m
 *   psql -d search_1m -v posts=1000000 -f bench/search-order/seed.sql && psql -d search_1m -c 'vacuum analyze'
 *   for d in parts parts32 partsc partitioned partitioned64 rum; do psql -c "create database search_$d template search_1m"; done
 *   grep trgm_idx packages/adapters-postgres/src/schema/schema.sql | psql -d search_1m
 *   psql -d search_parts -v span=131072 -v posts=1000000 -f bench/search-order/ranges.sql
 *   psql -d search_parts32 -v span=32768 -v posts=1000000 -f bench/search-order/ranges.sql
 *   psql -d search_parts32 -v span=32768 -v posts=1000000 -f bench/search-order/chars.sql
 *   psql -d search_partsc -v span=32768 -v posts=1000000 -v coll='COLLATE "C"' -f bench/search-order/ranges.sql
 *   psql -d search_partsc -v span=32768 -v posts=1000000 -f bench/search-order/chars.sql
 *   psql -d search_partitioned -v span=131072 -v posts=1000000 -f bench/search-order/partitions.sql
 *   psql -d search_partitioned64 -v span=65536 -v posts=1000000 -f bench/search-order/partitions.sql
 *   psql -c 'create database search_partitioned64n template search_partitioned64'
 *   psql -d search_partitioned64n -c 'drop index posts_chars_idx'
 *   psql -d search_rum -f bench/search-order/rum.sql
 *
 * Run (nice: it measures on a shared machine), naming the designs, comma-separated:
 *
 *   SEARCH_ORDER_URL=postgres://postgres@127.0.0.1:25432 nice -n 19 \
 *     node --conditions=@posts/source --import tsx bench/src/search-order.ts today,ranges,rum [--writes | --writes-only | --concurrent]
 *
 * It prints one line per term and design: total ms to 20 matches or the end, pages, the first
 * page's ms, the slowest later page's ms, and whether the 20 ids are today's (today's are kept
 * in SEARCH_ORDER_REFERENCE, /tmp/search-order-reference.json, so run `today` first). `--writes`
 * then inserts posts one statement each, as POST does, 4 connections, in 3 rounds of 5 s per
 * design interleaved, and deletes them again. `--concurrent` instead follows each of the worst
 * classes with 16 clients at once per design (measureConcurrent).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import {
  createPgliteDatabase,
  createPostgresDatabase,
  migrateToLatest,
  PostgresPostRepository,
} from "@posts/adapters-postgres";
import pg from "pg";

const BASE_URL = process.env.SEARCH_ORDER_URL ?? "postgres://postgres@127.0.0.1:25432";
const PAGE = 20;
/** Where a measurement gives up: the term then counts as failed, its figures as lower bounds. */
const MAX_PAGES = 400;
const MAX_MS = 30_000;
/** The ranges design: ids a partial index covers, its first walk, and a page's time. */
const SPAN = 131_072;
const FIRST_WALK = 300;
const RANGE_PAGE_MS = 150;

interface Term {
  readonly term: string;
  readonly kind: string;
  readonly authorId?: number;
}

const TERMS: readonly Term[] = [
  { term: "ipsum", kind: "every post (contents)" },
  { term: "게시판", kind: "Korean, 5 % spread (contents)" },
  { term: "quokka", kind: "rare, 0.01 % spread (titles)" },
  { term: "오래된", kind: "oldest 0.1 % (titles, Korean)" },
  { term: "Archived", kind: "oldest 1 % (contents)" },
  { term: "fjord", kind: "clustered 0.01 % at 15 % (contents)" },
  { term: "glyph", kind: "clustered 0.1 % at 15 % (contents)" },
  { term: "nymph", kind: "clustered 1 % at 15 % (contents)" },
  { term: "waltz", kind: "clustered 11 % at 8–19 % (contents)" },
  { term: "SPHINX", kind: "clustered 20 % at 0–20 % (titles)" },
  { term: "한가운데", kind: "clustered 1 % at 50 % (titles, Korean)" },
  { term: "e", kind: "1 char, every post" },
  { term: "게", kind: "1 char, Korean 5 % spread" },
  { term: "q", kind: "1 char, 0.01 % spread" },
  { term: "래", kind: "1 char, oldest 0.1 % (Korean)" },
  { term: "j", kind: "1 char, clustered 0.01 %" },
  { term: "z", kind: "1 char, clustered 11 %" },
  { term: "qu", kind: "2 chars, 0.01 % spread" },
  { term: "no such term anywhere", kind: "absent" },
  { term: "없는 말", kind: "absent (Korean)" },
  { term: "dolor amet", kind: "absent, its trigrams in every post" },
  { term: "ipsum", kind: "every post, by one author", authorId: 7 },
  { term: "quokka", kind: "rare, all of one author's", authorId: 1000 },
  { term: "quokka", kind: "rare, none of this author's", authorId: 7 },
  { term: "waltz", kind: "clustered 11 %, by one author", authorId: 7 },
];

/** One page: the ids of its matches (at most PAGE + 1), and where the next starts when it stopped early. */
interface Page {
  readonly ids: readonly number[];
  readonly resumeBelow?: number;
}

type Design = (term: Term, beforeId: number | undefined, limit: number) => Promise<Page>;

interface Followed {
  readonly ms: number;
  readonly pages: number;
  readonly firstMs: number;
  readonly laterMaxMs: number;
  readonly ids: readonly number[];
  readonly ended: boolean;
  readonly gaveUp: boolean;
}

/** Follows the cursor as the service's list use case does, until 20 matches, the end, or the bounds. */
async function follow(design: Design, term: Term): Promise<Followed> {
  const ids: number[] = [];
  let cursor: number | undefined;
  let pages = 0;
  let firstMs = 0;
  let laterMaxMs = 0;
  const started = performance.now();
  for (;;) {
    const t0 = performance.now();
    const page = await design(term, cursor, PAGE + 1);
    const pageMs = performance.now() - t0;
    pages++;
    if (pages === 1) firstMs = pageMs;
    else laterMaxMs = Math.max(laterMaxMs, pageMs);
    const kept = page.ids.slice(0, PAGE);
    ids.push(...kept);
    const ms = performance.now() - started;
    const next = page.ids.length > PAGE ? kept.at(-1) : page.resumeBelow;
    if (ids.length >= PAGE || next === undefined) {
      return {
        ms,
        pages,
        firstMs,
        laterMaxMs,
        ids: ids.slice(0, PAGE),
        ended: next === undefined,
        gaveUp: false,
      };
    }
    if (pages >= MAX_PAGES || ms >= MAX_MS) {
      return { ms, pages, firstMs, laterMaxMs, ids, ended: false, gaveUp: true };
    }
    cursor = next;
  }
}

/** The service's pattern: a substring, `%`, `_` and `\` taken literally. */
const containsPattern = (search: string) => `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

async function todayDesign(): Promise<{ design: Design; close: () => Promise<void> }> {
  const handle = createPostgresDatabase({ connectionString: `${BASE_URL}/search_1m`, poolSize: 4 });
  let repository: PostgresPostRepository | undefined;
  let current: Term | undefined;
  const design: Design = async (term, beforeId, limit) => {
    if (current !== term) {
      // A fresh repository per term: its term memories and kept results start empty.
      repository = new PostgresPostRepository(handle.db);
      current = term;
    }
    const read = await (repository as PostgresPostRepository).searchPage({
      search: term.term,
      limit,
      ...(beforeId === undefined ? {} : { beforeId }),
      ...(term.authorId === undefined ? {} : { authorId: term.authorId }),
    });
    return {
      ids: read.posts.map((post) => post.id),
      ...(read.resumeBelow === undefined ? {} : { resumeBelow: read.resumeBelow }),
    };
  };
  return { design, close: () => handle.close() };
}

async function client(database: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: `${BASE_URL}/${database}` });
  await c.connect();
  // As the adapter's step: the plan is the index's, no JIT, no parallel workers.
  await c.query("set jit = off; set max_parallel_workers_per_gather = 0");
  return c;
}

const author = (term: Term, n: number) => (term.authorId === undefined ? "" : `AND user_id = $${n}`);
const authorValue = (term: Term) => (term.authorId === undefined ? [] : [term.authorId]);

/** A walk of `budget` posts below `below`: its matches and the last id it read (undefined at the end). */
async function walk(c: pg.Client, term: Term, below: number, budget: number, limit: number) {
  const { rows } = await c.query<{ id: string; matched: boolean }>(
    `SELECT id, (title COLLATE "C" ILIKE $1 ESCAPE '\\' OR content COLLATE "C" ILIKE $1 ESCAPE '\\') AS matched
       FROM posts WHERE id < $2 ${author(term, 3)} ORDER BY id DESC LIMIT ${budget}`,
    [containsPattern(term.term), below, ...authorValue(term)],
  );
  const ids = rows.filter((row) => row.matched).map((row) => Number(row.id));
  if (ids.length >= limit) return { ids: ids.slice(0, limit), stoppedAt: undefined, ended: false };
  const last = rows.at(-1);
  return {
    ids,
    stoppedAt: rows.length < budget || last === undefined ? undefined : Number(last.id),
    ended: rows.length < budget,
  };
}

/**
 * The ranges design on `database`, whose partial indexes cover `span` ids each; `chars`: the
 * database also has the per-range indexes of each post's characters (search-order/chars.sql),
 * which answer terms of one or two characters the same way; `inC`: its trigram indexes are in
 * the "C" collation (ranges.sql with -v coll), so the search's own ILIKE is the index condition.
 */
function rangesDesign(database: string, span: number, chars: boolean, inC: boolean) {
  return async (): Promise<{ design: Design; close: () => Promise<void> }> => {
    const c = await client(database);
    // The ranges' statements on a connection of their own, where only the bitmap is left to plan.
    const bitmaps = await client(database);
    await bitmaps.query("set enable_seqscan = off; set enable_indexscan = off");
    const { rows } = await c.query<{ max: string }>("SELECT max(id) AS max FROM posts");
    const top = Number(rows[0]?.max ?? 0);
    const design: Design = async (term, beforeId, limit) => {
      const below = beforeId ?? top + 1;
      const started = performance.now();
      const short = [...term.term].length < 3;
      const budget = short && !chars ? 3000 : FIRST_WALK;
      const first = await walk(c, term, below, budget, limit);
      if (first.stoppedAt === undefined) return { ids: first.ids };
      if (budget === 3000) return { ids: first.ids, resumeBelow: first.stoppedAt };
      const ids = [...first.ids];
      const values: unknown[] = [containsPattern(term.term)];
      const by = term.authorId === undefined ? "" : `AND user_id = $${values.push(term.authorId)}`;
      // A match holds every character of the term, ASCII letters folded as the search folds them.
      const letters = [...new Set([...term.term.replace(/[A-Z]/g, (l) => l.toLowerCase())])];
      const candidates = short
        ? `post_chars(title, content) @> $${values.push(letters)}::text[] AND`
        : inC
          ? ""
          : "(title ILIKE $1 ESCAPE '\\' OR content ILIKE $1 ESCAPE '\\') AND";
      const beneath = `$${values.push(0)}`;
      let from = first.stoppedAt;
      while (from > 1) {
        const r = Math.floor((from - 2) / span);
        const lo = r * span + 1;
        const hi = (r + 1) * span + 1;
        // The range's bounds as literals: the planner proves the partial index's predicate from them.
        const found = await bitmaps.query<{ id: string }>(
          `SELECT id FROM posts
            WHERE id >= ${lo} AND id < ${hi} AND id < ${beneath}::int8 ${by}
              AND ${candidates}
                  (title COLLATE "C" ILIKE $1 ESCAPE '\\' OR content COLLATE "C" ILIKE $1 ESCAPE '\\')
            ORDER BY id DESC LIMIT ${limit - ids.length}`,
          values.with(-1, from),
        );
        ids.push(...found.rows.map((row) => Number(row.id)));
        from = lo;
        if (ids.length >= limit) return { ids };
        if (performance.now() - started >= RANGE_PAGE_MS) break;
      }
      return from > 1 ? { ids, resumeBelow: from } : { ids };
    };
    return { design, close: async () => Promise.all([c.end(), bitmaps.end()]).then(() => undefined) };
  };
}

/** How a partitions design searches a partition; see partitionsDesign. */
interface PartitionSearch {
  /** Ids a partition holds (partitions.sql's span). */
  readonly span: number;
  /**
   * The first window of ids below the cursor a partition is searched in, doubled after a window
   * without a match; undefined: the partition below the cursor in one statement.
   */
  readonly window?: number;
  /**
   * Each partition statement's `statement_timeout`; when it runs out, the page walks that
   * partition from where the statement began, for what is left of the page's time.
   */
  readonly timeoutMs?: number;
  /**
   * The page's bound: each partition statement's `statement_timeout` is what is left of it (at
   * least 1 ms), so that it fires only where the page would pass it; when it runs out, the page
   * walks that partition as after `timeoutMs`, one statement of the walk at least.
   */
  readonly pageBoundMs?: number;
  /** Terms of 1 or 2 characters walk for the page's time instead of asking the character index. */
  readonly walkShort?: boolean;
}

/** The pg error code of a statement cancelled by its `statement_timeout`. */
const QUERY_CANCELED = "57014";
/** A walk's posts a statement, where a page walks for its time (short terms, a timed-out partition). */
const WALK_CHUNK = 1000;

/**
 * Walks below `from` in statements of WALK_CHUNK posts until `limit` matches, the end, or the
 * page's RANGE_PAGE_MS since `started` (at least one statement): the matches, and where the next
 * page resumes (undefined at the end or when full).
 */
async function walkForTime(c: pg.Client, term: Term, from: number, limit: number, started: number) {
  const ids: number[] = [];
  let below = from;
  do {
    const step = await walk(c, term, below, WALK_CHUNK, limit - ids.length);
    ids.push(...step.ids);
    if (step.stoppedAt === undefined) return { ids, resumeBelow: undefined };
    below = step.stoppedAt;
  } while (performance.now() - started < RANGE_PAGE_MS);
  return { ids, resumeBelow: below };
}

/**
 * The partitions design (search-order/partitions.sql, `span` ids a partition, named posts_0,
 * posts_1, … oldest first, the last open-ended): a walk of 300 posts, then the partitions below
 * it newest first, one statement each on the partition itself (no predicate to prove, no other
 * partition's indexes to plan), until the page is full or has spent 150 ms. One statement over
 * the partitioned table would do the same only if the planner chose an ordered `Append` of
 * sorted partitions; it chose to sort them all at once.
 *
 * The variants (PartitionSearch) answer what bounds a partition whose every candidate must be
 * checked before its newest match is known (a dense term far below the cursor, a term whose
 * trigrams are in every post): windows of ids, which help only where the planner combines the
 * trigram bitmap with the primary key's (`BitmapAnd`; it takes either bitmap alone instead, so a
 * window reads every post of it or checks every candidate of the partition), or a statement
 * timeout with the walk behind it.
 */
function partitionsDesign(database: string, search: PartitionSearch) {
  return async (): Promise<{ design: Design; close: () => Promise<void> }> => {
    const { span } = search;
    const c = await client(database);
    const bitmaps = await client(database);
    await bitmaps.query("set enable_seqscan = off; set enable_indexscan = off");
    if (search.timeoutMs !== undefined) await bitmaps.query(`set statement_timeout = ${search.timeoutMs}`);
    const { rows } = await c.query<{ max: string; last: string }>(
      `SELECT max(id) AS max, (SELECT max(substr(relname, 7)::int) FROM pg_class
                              WHERE relname ~ '^posts_[0-9]+$' AND relkind = 'r') AS last FROM posts`,
    );
    const top = Number(rows[0]?.max ?? 0);
    const last = Number(rows[0]?.last ?? 0);
    const design: Design = async (term, beforeId, limit) => {
      const below = beforeId ?? top + 1;
      const started = performance.now();
      const short = [...term.term].length < 3;
      if (short && search.walkShort) return walkForTime(c, term, below, limit, started);
      const first = await walk(c, term, below, FIRST_WALK, limit);
      if (first.stoppedAt === undefined) return { ids: first.ids };
      const ids = [...first.ids];
      const values: unknown[] = [containsPattern(term.term)];
      const by = term.authorId === undefined ? "" : `AND user_id = $${values.push(term.authorId)}`;
      const letters = [...new Set([...term.term.replace(/[A-Z]/g, (l) => l.toLowerCase())])];
      const chars = short ? `post_chars(title, content) @> $${values.push(letters)}::text[] AND` : "";
      const beneath = `$${values.push(0)}`;
      // A partition statement: the matches in [lo, from), newest first, as many as the page needs.
      const matches = (r: number, lo: number, from: number) =>
        bitmaps.query<{ id: string }>(
          `SELECT id FROM posts_${r}
          WHERE id < ${beneath}::int8 ${lo > r * span + 1 ? `AND id >= ${lo}` : ""} ${by} AND ${chars}
                (title COLLATE "C" ILIKE $1 ESCAPE '\\' OR content COLLATE "C" ILIKE $1 ESCAPE '\\')
          ORDER BY id DESC LIMIT ${limit - ids.length}`,
          values.with(-1, from),
        );
      let from = first.stoppedAt;
      while (from > 1) {
        const r = Math.min(last, Math.floor((from - 2) / span));
        const bottom = r * span + 1;
        let width = search.window ?? from - bottom;
        while (from > bottom) {
          const lo = Math.max(bottom, from - width);
          try {
            if (search.pageBoundMs !== undefined) {
              const left = Math.max(1, Math.round(search.pageBoundMs - (performance.now() - started)));
              await bitmaps.query(`set statement_timeout = ${left}`);
            }
            const found = await matches(r, lo, from);
            ids.push(...found.rows.map((row) => Number(row.id)));
            if (found.rows.length === 0) width *= 2;
          } catch (error) {
            if ((error as { code?: string }).code !== QUERY_CANCELED) throw error;
            // The statement's candidates outlast its time: walking finds a dense term's newest.
            const walked = await walkForTime(c, term, from, limit - ids.length, started);
            ids.push(...walked.ids);
            if (ids.length >= limit || walked.resumeBelow === undefined) return { ids };
            return { ids, resumeBelow: walked.resumeBelow };
          }
          from = lo;
          if (ids.length >= limit) return { ids };
          if (performance.now() - started >= RANGE_PAGE_MS) break;
        }
        if (performance.now() - started >= RANGE_PAGE_MS) break;
      }
      return from > 1 ? { ids, resumeBelow: from } : { ids };
    };
    return { design, close: async () => Promise.all([c.end(), bitmaps.end()]).then(() => undefined) };
  };
}

/**
 * Today's adapter on PGlite (the embedded database), which walks and takes no trigram step, in
 * memory, seeded with seed.sql's shape at SEARCH_ORDER_PGLITE_POSTS posts (200,000 by default:
 * a page's cost does not depend on the table, and a million rows take PGlite long to seed).
 */
async function pgliteDesign(): Promise<{ design: Design; close: () => Promise<void> }> {
  const posts = Number(process.env.SEARCH_ORDER_PGLITE_POSTS ?? 200_000);
  const handle = await createPgliteDatabase();
  await migrateToLatest(handle.db);
  // Kysely is not this package's dependency: its raw query, written out.
  const run = async <Row>(text: string): Promise<Row[]> => {
    const query = {
      sql: text,
      parameters: [],
      query: { kind: "RawNode", sqlFragments: [text], parameters: [] },
    };
    const result = await handle.db.executeQuery(
      query as unknown as Parameters<typeof handle.db.executeQuery>[0],
    );
    return result.rows as Row[];
  };
  const trigramIndexes = await run<{ indexname: string; indexdef: string }>(
    "select indexname, indexdef from pg_indexes where tablename = 'posts' and indexdef like '%gin_trgm_ops%'",
  );
  for (const { indexname } of trigramIndexes) await run(`drop index ${indexname}`);
  const seed = readFileSync(new URL("../search-order/seed.sql", import.meta.url), "utf8")
    .split("\n")
    .filter((line) => !line.startsWith("\\") && !line.trimStart().startsWith("--"))
    .join("\n")
    .replaceAll(":posts", String(posts));
  for (const statement of seed.split(";\n")) {
    if (statement.trim() !== "" && !statement.includes("synchronous_commit")) await run(statement);
  }
  for (const { indexdef } of trigramIndexes) await run(indexdef);
  await run("vacuum analyze posts");
  let repository: PostgresPostRepository | undefined;
  let current: Term | undefined;
  const design: Design = async (term, beforeId, limit) => {
    if (current !== term) {
      repository = new PostgresPostRepository(handle.db);
      current = term;
    }
    const read = await (repository as PostgresPostRepository).searchPage({
      search: term.term,
      limit,
      ...(beforeId === undefined ? {} : { beforeId }),
      ...(term.authorId === undefined ? {} : { authorId: term.authorId }),
    });
    return {
      ids: read.posts.map((post) => post.id),
      ...(read.resumeBelow === undefined ? {} : { resumeBelow: read.resumeBelow }),
    };
  };
  return { design, close: () => handle.close() };
}

/**
 * The ranges, with a probe: a range's matches in the heap's order (ascending ids) up to the
 * page's need; fewer means every match of the range below the cursor is known. More means the
 * range is dense somewhere, and windows of ids below the cursor (`id + 0`: the bitmap stays the
 * range's index, the window only decides which candidates are matched) find its newest ones,
 * a window twice as wide after each that found none.
 */
async function rangesProbeDesign(): Promise<{ design: Design; close: () => Promise<void> }> {
  const c = await client("search_parts");
  const bitmaps = await client("search_parts");
  await bitmaps.query("set enable_seqscan = off; set enable_indexscan = off");
  const { rows } = await c.query<{ max: string }>("SELECT max(id) AS max FROM posts");
  const top = Number(rows[0]?.max ?? 0);
  const matchIn = (term: Term, window: string, order: string, limit: number, from: number) =>
    bitmaps.query<{ id: string }>(
      `SELECT id FROM posts
        WHERE ${window} AND id < $2 ${author(term, 3)}
          AND (title ILIKE $1 ESCAPE '\\' OR content ILIKE $1 ESCAPE '\\')
          AND (title COLLATE "C" ILIKE $1 ESCAPE '\\' OR content COLLATE "C" ILIKE $1 ESCAPE '\\')
        ${order} LIMIT ${limit}`,
      [containsPattern(term.term), from, ...authorValue(term)],
    );
  const design: Design = async (term, beforeId, limit) => {
    const below = beforeId ?? top + 1;
    const started = performance.now();
    const budget = [...term.term].length >= 3 ? FIRST_WALK : 3000;
    const first = await walk(c, term, below, budget, limit);
    if (first.stoppedAt === undefined) return { ids: first.ids };
    if (budget === 3000) return { ids: first.ids, resumeBelow: first.stoppedAt };
    const ids = [...first.ids];
    let from = first.stoppedAt;
    while (from > 1 && performance.now() - started < RANGE_PAGE_MS) {
      const r = Math.floor((from - 2) / SPAN);
      const lo = r * SPAN + 1;
      const range = `id >= ${lo} AND id < ${(r + 1) * SPAN + 1}`;
      const need = limit - ids.length;
      const probe = await matchIn(term, range, "", need, from);
      if (probe.rows.length < need) {
        ids.push(...probe.rows.map((row) => Number(row.id)).sort((a, b) => b - a));
        from = lo;
        continue;
      }
      let width = 8192;
      while (from > lo && performance.now() - started < RANGE_PAGE_MS) {
        const start = Math.max(lo, from - width);
        const found = await matchIn(
          term,
          `${range} AND id + 0 >= ${start}`,
          "ORDER BY id DESC",
          limit - ids.length,
          from,
        );
        ids.push(...found.rows.map((row) => Number(row.id)));
        if (ids.length >= limit) return { ids };
        from = start;
        if (found.rows.length === 0) width *= 2;
      }
    }
    return from > 1 ? { ids, resumeBelow: from } : { ids };
  };
  return { design, close: async () => Promise.all([c.end(), bitmaps.end()]).then(() => undefined) };
}

async function rumDesign(): Promise<{ design: Design; close: () => Promise<void> }> {
  const c = await client("search_rum");
  await c.query("set enable_seqscan = off; set enable_bitmapscan = off");
  const queries = new Map<string, string>();
  const design: Design = async (term, beforeId, limit) => {
    let query = queries.get(term.term);
    if (query === undefined) {
      const { rows } = await c.query<{ q: string }>("SELECT term_grams($1)::text AS q", [term.term]);
      query = rows[0]?.q ?? "";
      queries.set(term.term, query);
    }
    const below = beforeId ?? Number.MAX_SAFE_INTEGER;
    const { rows } = await c.query<{ id: string }>(
      `SELECT id FROM posts
        WHERE grams @@ $1::tsquery AND id < $2 ${author(term, 4)}
          AND (title COLLATE "C" ILIKE $3 ESCAPE '\\' OR content COLLATE "C" ILIKE $3 ESCAPE '\\')
        ORDER BY id <=| $2::int8 LIMIT ${limit}`,
      [query, below, containsPattern(term.term), ...authorValue(term)],
    );
    return { ids: rows.map((row) => Number(row.id)) };
  };
  return { design, close: () => c.end() };
}

const DESIGNS: Record<string, () => Promise<{ design: Design; close: () => Promise<void> }>> = {
  today: todayDesign,
  ranges: rangesDesign("search_parts", 131_072, false, false),
  ranges32: rangesDesign("search_parts32", 32_768, true, false),
  "ranges32-c": rangesDesign("search_partsc", 32_768, true, true),
  "ranges-probe": rangesProbeDesign,
  rum: rumDesign,
  partitions: partitionsDesign("search_partitioned", { span: 131_072 }),
  "partitions-10m": partitionsDesign("search_10m", { span: 131_072 }),
  partitions64: partitionsDesign("search_partitioned64", { span: 65_536 }),
  "partitions64-windows": partitionsDesign("search_partitioned64", { span: 65_536, window: 8192 }),
  "partitions64-timeout": partitionsDesign("search_partitioned64", { span: 65_536, timeoutMs: 100 }),
  "partitions64-timeout25": partitionsDesign("search_partitioned64", { span: 65_536, timeoutMs: 25 }),
  "partitions64-bound": partitionsDesign("search_partitioned64", { span: 65_536, pageBoundMs: 250 }),
  "partitions64-walk": partitionsDesign("search_partitioned64n", { span: 65_536, walkShort: true }),
  pglite: pgliteDesign,
};
const DATABASES: Record<string, string> = {
  today: "search_1m",
  ranges: "search_parts",
  "ranges-probe": "search_parts",
  ranges32: "search_parts32",
  "ranges32-c": "search_partsc",
  rum: "search_rum",
  partitions: "search_partitioned",
  "partitions-10m": "search_10m",
  partitions64: "search_partitioned64",
  "partitions64-windows": "search_partitioned64",
  "partitions64-timeout": "search_partitioned64",
  "partitions64-timeout25": "search_partitioned64",
  "partitions64-bound": "search_partitioned64",
  "partitions64-walk": "search_partitioned64n",
};

/** Inserts a second for `ms` on `database`, 4 connections, one statement each as POST's; the rows go afterwards. */
async function insertRate(database: string, ms: number): Promise<number> {
  const clients = await Promise.all(Array.from({ length: 4 }, () => client(database)));
  const first = clients[0] as pg.Client;
  const { rows } = await first.query<{ max: string }>("SELECT max(id) AS max FROM posts");
  const before = Number(rows[0]?.max ?? 0);
  const until = performance.now() + ms;
  let inserted = 0;
  await Promise.all(
    clients.map(async (c, i) => {
      while (performance.now() < until) {
        await c.query(
          `INSERT INTO posts (title, content, created_at, updated_at, user_id)
           VALUES ($1, $2, now(), now(), $3)`,
          [
            `Write ${inserted} of client ${i}`,
            `오늘의 소식. ${"Lorem ipsum dolor sit amet, consectetur adipiscing. ".repeat(6)}${inserted}`,
            1 + (inserted % 1000),
          ],
        );
        inserted++;
      }
    }),
  );
  await first.query("DELETE FROM posts WHERE id > $1", [before]);
  await first.query("DELETE FROM post_events WHERE post_id > $1", [before]);
  await first.query("VACUUM posts");
  await Promise.all(clients.map((c) => c.end()));
  return (inserted * 1000) / ms;
}

/** Rounds of 5 s per design, interleaved so that each sees the same machine; the median of each. */
async function measureWrites(names: readonly string[]): Promise<void> {
  const rates = new Map<string, number[]>(names.map((name) => [name, []]));
  for (let round = 0; round < 3; round++) {
    for (const name of names) rates.get(name)?.push(await insertRate(DATABASES[name] as string, 5000));
  }
  const base = median(rates.get(names[0] as string) ?? []);
  for (const name of names) {
    const m = median(rates.get(name) ?? []);
    console.log(
      `${name}\twrites\t${m.toFixed(0)} inserts/s\t${(m / base).toFixed(2)}x ${names[0]}\t(rounds ${rates
        .get(name)
        ?.map((r) => r.toFixed(0))
        .join(", ")})`,
    );
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** The classes that cost a page the most, for --concurrent. */
const WORST = new Set(["waltz", "z", "Archived", "q", "no such term anywhere"]);
/** Clients at once in --concurrent, as many as the bench's connections. */
const CONCURRENT = 16;

/**
 * Each of the worst classes followed by CONCURRENT clients at once, each with its own
 * connections, after one page of each term alone (as the serial run): the median and slowest
 * client's total, the slowest page, and the most pages. Answers are checked in the serial run.
 */
async function measureConcurrent(names: readonly string[]): Promise<void> {
  console.log("design\tterm\tclients\tmedian total ms\tmax total ms\tslowest page ms\tmax pages\tgave up");
  for (const name of names) {
    const make = DESIGNS[name];
    if (make === undefined) throw new Error(`no design ${name}`);
    const made = await Promise.all(Array.from({ length: CONCURRENT }, () => make()));
    for (const term of TERMS.filter((t) => WORST.has(t.term) && t.authorId === undefined)) {
      await made[0]?.design(term, undefined, PAGE + 1);
      const runs = await Promise.all(made.map(({ design }) => follow(design, term)));
      const totals = runs.map((run) => run.ms);
      console.log(
        [
          name,
          JSON.stringify(term.term),
          CONCURRENT,
          median(totals).toFixed(0),
          Math.max(...totals).toFixed(0),
          Math.max(...runs.map((run) => Math.max(run.firstMs, run.laterMaxMs))).toFixed(0),
          Math.max(...runs.map((run) => run.pages)),
          runs.filter((run) => run.gaveUp).length,
        ].join("\t"),
      );
    }
    await Promise.all(made.map(({ close }) => close()));
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const names = (args.find((arg) => !arg.startsWith("--")) ?? "today,ranges,rum").split(",");
  if (args.includes("--writes-only")) {
    await measureWrites(names);
    return;
  }
  if (args.includes("--concurrent")) {
    await measureConcurrent(names);
    return;
  }
  // Today's first 20 ids of each term, kept between runs so that any design run later is checked against them.
  const referenceFile = process.env.SEARCH_ORDER_REFERENCE ?? "/tmp/search-order-reference.json";
  const stored: Record<string, number[]> = existsSync(referenceFile)
    ? (JSON.parse(readFileSync(referenceFile, "utf8")) as Record<string, number[]>)
    : {};
  const termId = (term: Term) => `${term.authorId ?? ""} ${term.term}`;
  console.log(
    "design\tterm\tuser\tclass\ttotal ms\tpages\tfirst ms\tlater max ms\tmatches\tend\tsame 20 as today",
  );
  for (const name of names) {
    const make = DESIGNS[name];
    if (make === undefined) throw new Error(`no design ${name}`);
    const { design, close } = await make();
    for (const term of TERMS) {
      // One page first, as a served term's pages find the index and the newest posts in memory.
      await design(term, undefined, PAGE + 1);
      const f = await follow(design, term);
      // Today's answers are on the million-post seed: a design on another seed has nothing to match.
      const known =
        name === "today" || name.endsWith("-10m") || name === "pglite" ? undefined : stored[termId(term)];
      if (name === "today" && !f.gaveUp) stored[termId(term)] = [...f.ids];
      const same = known === undefined ? "-" : known.join() === f.ids.join() ? "yes" : "NO";
      console.log(
        [
          name,
          JSON.stringify(term.term),
          term.authorId ?? "",
          term.kind,
          f.ms.toFixed(1) + (f.gaveUp ? "+" : ""),
          f.pages,
          f.firstMs.toFixed(1),
          f.laterMaxMs.toFixed(1),
          f.ids.length,
          f.ended ? "end" : f.gaveUp ? "GAVE UP" : "",
          same,
        ].join("\t"),
      );
    }
    await close();
    writeFileSync(referenceFile, JSON.stringify(stored));
  }
  if (args.includes("--writes")) await measureWrites(names);
}

await main();
