import {
  createPostgresDatabase,
  type Database,
  POSTS_PARTITION_SPAN,
  PostgresPostRepository,
  partitionOf,
} from "@posts/adapters-postgres";
import { encodeCursor, listPosts, type SearchPageQuery } from "@posts/domain";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { type CompiledQuery, Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DIRECT_STATEMENTS } from "../../../src/connection/direct-statements.js";
import { poolForKysely } from "../../../src/connection/pool-for-kysely.js";
import { hasTrigrams, lettersOf } from "../../../src/repositories/posts/partition-search.js";
import { nodesOf, type ObservedDatabase, observedDatabase, seedPosts } from "../../seeded-posts.js";
import { postgres, serverUrl, useTestDatabase } from "../../use-test-database.js";

/** Posts in the oldest partition, and as many again in the fourth, the two between them empty. */
const POSTS = 3000;
const BUDGET = 1000;
/** The first id of the fourth partition, where the newer half of the posts are. */
const NEWER_FROM = 3 * POSTS_PARTITION_SPAN + 1;

// Post g (1 to 2 * POSTS, the newer half in the fourth partition): "very old" in the 5 oldest;
// "cluster" in 1,000 posts of the oldest partition's middle; "tenth" in one in ten, "twentieth"
// in one in twenty; "fresh" in the newest 50 and the 3 oldest; one character or two found
// nowhere else ("Z", "qk", "한", and "j" past the first 8,192 characters of a long content).
const TITLE = `'Post ' || g || CASE WHEN g <= 5 THEN ' Very Old' ELSE '' END
  || CASE WHEN g BETWEEN 1001 AND 2000 THEN ' Cluster' ELSE '' END
  || CASE WHEN g % 10 = 0 THEN ' Tenth' ELSE '' END
  || CASE WHEN g % 20 = 0 THEN ' Twentieth' ELSE '' END
  || CASE WHEN g > ${2 * POSTS - 50} OR g <= 3 THEN ' Fresh' ELSE '' END
  || CASE WHEN g = 7 THEN ' Z' WHEN g = 8 THEN ' 한' ELSE '' END`;
const CONTENT = `md5(g::text) || CASE WHEN g = 3 THEN ' only here: very old' WHEN g = 9 THEN ' aqkb'
  WHEN g = 11 THEN repeat('x', 10000) || 'j' ELSE '' END`;

describe("the partitions a search asks", () => {
  it("are found by id, and a term is looked up by trigrams only when pg_trgm extracts one from it", () => {
    expect(
      [1, POSTS_PARTITION_SPAN, POSTS_PARTITION_SPAN + 1, 3 * POSTS_PARTITION_SPAN + 7].map(partitionOf),
    ).toEqual([0, 0, 1, 3]);
    const terms = {
      abc: true,
      ab: false,
      z: false,
      한국어: true,
      a1b2: true,
      // A word that starts within the term: two spaces in front; one that ends within it: one behind.
      "a b c": true,
      "x-y-z": true,
      "ng. 73": true,
      " 3": true,
      "ab ": true,
      " 한": true,
      "3 ": false,
      "a-": false,
      "-- -": false,
    };
    expect(Object.fromEntries(Object.keys(terms).map((term) => [term, hasTrigrams(term)]))).toEqual(terms);
    // As `lower` in "C" folds: ASCII letters only, each character once.
    expect(lettersOf("AaÉé한한 ")).toEqual(["a", "É", "é", "한", " "]);
  });
});

describeNeeding(postgres, "search pages on a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");
  let observed: ObservedDatabase | undefined;
  /** The posts' ids, oldest first. */
  let ids: number[] = [];
  const byG = (g: number) => ids[g - 1] as number;
  const partitioned = (options: { searchPageMs?: number; searchStatementMatches?: number } = {}) =>
    new PostgresPostRepository(database().db, { searchBudget: BUDGET, ...options });

  beforeAll(async () => {
    const { connectionString } = database();
    if (connectionString === undefined) return;
    observed = observedDatabase(connectionString);
    const older = await seedPosts(observed.pool, { users: 10, posts: POSTS, title: TITLE, content: CONTENT });
    // The next ids start at the fourth partition: the two between stay empty.
    await observed.pool.query("SELECT setval(pg_get_serial_sequence('posts', 'id'), $1)", [NEWER_FROM - 1]);
    await observed.pool.query("SELECT posts_partitions_ahead(2)");
    await observed.pool.query(`
      INSERT INTO posts (title, content, created_at, updated_at, user_id)
      SELECT ${TITLE}, ${CONTENT}, now(), now(), 1 + g % 10 FROM generate_series(${POSTS + 1}, ${2 * POSTS}) AS g`);
    await observed.pool.query("VACUUM ANALYZE posts");
    const { rows } = await observed.pool.query<{ id: string }>(
      "SELECT id FROM posts WHERE id >= $1 ORDER BY id",
      [NEWER_FROM],
    );
    ids = [...older, ...rows.map((row) => Number(row.id))];
  });
  afterAll(async () => {
    await observed?.destroy();
  });

  /** Every post of a search, following `resumeBelow` and the last post to the end; and the pages it took. */
  const everyMatch = async (posts: PostgresPostRepository, query: Omit<SearchPageQuery, "limit">) => {
    const found: number[] = [];
    let beforeId: number | undefined;
    for (let pages = 1; ; pages++) {
      const page = await posts.searchPage({
        ...query,
        limit: 21,
        ...(beforeId === undefined ? {} : { beforeId }),
      });
      found.push(...page.posts.map((post) => post.id));
      if (page.posts.length === 21) beforeId = page.posts.at(-1)?.id;
      else if (page.resumeBelow !== undefined) beforeId = page.resumeBelow;
      else return { found, pages };
      if (pages > 2 * POSTS) throw new Error("the search never ended");
    }
  };

  it("read at most the budget whatever the term on a Kysely of its own, and walk to the oldest matches page by page", async () => {
    if (observed === undefined) throw new Error("the posts were not seeded");
    const newest = ids.at(-1) as number;
    const oldest = ids.slice(0, 5).reverse();

    // Through a Kysely of its own, which has no direct runner: the walk alone, as on PGlite.
    const posts = new PostgresPostRepository(observed.db, { searchBudget: BUDGET });
    observed.captured.length = 0;
    const first = await posts.searchPage({ limit: 21, search: "VERY old" });
    expect(first.posts).toEqual([]);
    // It stopped at the last post it read: the budget's worth below the newest.
    expect(first.resumeBelow).toBe(ids.at(-BUDGET));

    const [statement] = observed.captured;
    if (statement === undefined) throw new Error("no statement was captured");
    const scans = (await observed.plan(statement, true)).filter((node) =>
      String(node["Relation Name"]).startsWith("posts"),
    );
    // The posts read along the partitions' primary keys, newest first, at most the budget.
    expect(new Set(scans.map((node) => node["Node Type"]))).toEqual(new Set(["Index Scan"]));
    expect(scans.reduce((sum, scan) => sum + Number(scan["Actual Rows"] ?? 0), 0)).toBeLessThanOrEqual(
      BUDGET,
    );

    // Through the listing: short pages whose cursors reach the old matches, each once.
    const deps = { posts } as Parameters<typeof listPosts>[0];
    const seen: number[] = [];
    const cursors: (string | null)[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < (2 * POSTS) / BUDGET + 2; page++) {
      const result = await listPosts(deps, {
        q: "very old",
        size: "2",
        ...(cursor === undefined ? {} : { cursor }),
      });
      if (!result.ok) throw new Error(JSON.stringify(result.error));
      seen.push(...result.value.posts.map((post) => post.id));
      cursors.push(result.value.nextCursor);
      if (result.value.nextCursor === null) break;
      cursor = result.value.nextCursor;
    }
    expect(seen).toEqual(oldest);
    expect(cursors[0]).toBe(encodeCursor(newest - BUDGET + 1));
    expect(cursors.at(-1)).toBeNull();
  }, 60_000);

  it("walk the newest posts, then ask the partitions below newest first: every term's first matches or its end in one page", async () => {
    if (observed === undefined) throw new Error("the posts were not seeded");
    const posts = partitioned();
    const page = async (search: string, limit = 21, authorId?: number) =>
      await posts.searchPage({ limit, search, ...(authorId === undefined ? {} : { authorId }) });
    const whole = async (...gs: number[]) =>
      await Promise.all(gs.map(async (g) => await posts.findById(byG(g))));

    // Only among the oldest posts, three partitions below the newest: one page, to the end.
    expect(await page("VERY old")).toEqual({ posts: await whole(5, 4, 3, 2, 1) });
    expect(await page("very old", 2)).toEqual({ posts: await whole(5, 4) });
    // A thousand matches in one stretch of the oldest partition: a full page.
    expect(await page("cluster")).toEqual({ posts: await whole(...range(2000, 1980)) });
    // The newest 50 and the 3 oldest: the walk fills the page.
    expect((await page("fresh")).posts.map((post) => post.id)).toEqual(
      range(2 * POSTS, 2 * POSTS - 20).map(byG),
    );
    expect(await page("fresh", 60)).toEqual({
      posts: await whole(...range(2 * POSTS, 2 * POSTS - 49), 3, 2, 1),
    });
    // Nothing anywhere, every trigram common: the end, in one page.
    expect(await page("post post")).toEqual({ posts: [] });
    // Terms without a trigram, from the index of characters (one character: ASCII case folded,
    // Korean) or of pairs of characters (two), and one found only past what those read of a long
    // content.
    expect(await page("z")).toEqual({ posts: await whole(7) });
    expect(await page("Z")).toEqual({ posts: await whole(7) });
    expect(await page("한")).toEqual({ posts: await whole(8) });
    expect(await page("QK")).toEqual({ posts: await whole(9) });
    expect((await page("xj")).posts.map((post) => post.id)).toEqual([byG(11)]);
    // By author: the author's matches only.
    const author = (await posts.findById(byG(3)))?.author.id as number;
    expect(await page("very old", 21, author)).toEqual({ posts: await whole(3) });
  }, 60_000);

  it("answer every term's matches as the walk alone does, in far fewer pages", async () => {
    if (observed === undefined) throw new Error("the posts were not seeded");
    const walkOnly = new PostgresPostRepository(observed.db, { searchBudget: BUDGET });
    const posts = partitioned();
    // Statements that read 16 matches at most: a partition of more is asked in stretches.
    const narrow = partitioned({ searchStatementMatches: 16 });
    for (const search of [
      "very old",
      "cluster",
      "tenth",
      "twentieth",
      "fresh",
      "z",
      "qk",
      "7",
      "77",
      "777",
      "t 7",
      "t 77",
      "5 v",
      "한",
      "j",
      "nope",
      // Terms of several words: whether a post holds their pairs of words is asked first.
      "tenth post",
      "ost 10 ten",
      "here: very old",
      "y old",
    ]) {
      for (const authorId of [undefined, 4]) {
        const query = { search, ...(authorId === undefined ? {} : { authorId }) };
        const walked = await everyMatch(walkOnly, query);
        for (const repository of [posts, narrow]) {
          const asked = await everyMatch(repository, query);
          expect({ search, authorId, found: asked.found }).toEqual({ search, authorId, found: walked.found });
          // The walk's pages are at least one per budget's worth of posts; the partitions' one per 21 matches.
          expect(asked.pages).toBeLessThanOrEqual(Math.floor(walked.found.length / 21) + 1);
        }
      }
    }
  }, 120_000);

  it("with no time for more, ask one partition a page and continue below it", async () => {
    const posts = partitioned({ searchPageMs: 0 });
    const first = await posts.searchPage({ limit: 21, search: "very old" });
    // The walk read the newest 300 posts (search-pages.ts), the fourth partition the rest of its own.
    expect(first).toEqual({ posts: [], resumeBelow: NEWER_FROM });
    const second = await posts.searchPage({ limit: 21, search: "very old", beforeId: NEWER_FROM });
    expect(second.posts.map((post) => post.id)).toEqual(ids.slice(0, 5).reverse());
    expect(second.resumeBelow).toBeUndefined();
  }, 60_000);

  it("ask each partition through its own index, on one process, and leave the connection as it was", async () => {
    const connectionString = serverUrl(database());
    // A session that would compile and parallelise any plan, and that hands every plan it runs
    // to the client.
    type Explained = { readonly Plan: Parameters<typeof nodesOf>[0]; readonly JIT?: unknown };
    const plans: Explained[] = [];
    const session = {
      session_preload_libraries: "auto_explain",
      "auto_explain.log_min_duration": 0,
      "auto_explain.log_level": "notice",
      "auto_explain.log_format": "json",
      "auto_explain.log_analyze": "on",
      "auto_explain.log_timing": "off",
      jit_above_cost: 0,
      parallel_setup_cost: 0,
      parallel_tuple_cost: 0,
      min_parallel_table_scan_size: 0,
      min_parallel_index_scan_size: 0,
    };
    const options = Object.entries(session)
      .map(([name, value]) => `-c ${name}=${value}`)
      .join(" ");
    const pool = new pg.Pool({ connectionString, max: 1, options });
    pool.on("connect", (client) => {
      client.on("notice", (notice) => {
        const json = notice.message?.split("plan:\n")[1];
        if (json !== undefined) plans.push(JSON.parse(json));
      });
    });
    const { forKysely, run } = poolForKysely(pool, 0);
    const server = new Kysely<Database>({ dialect: new PostgresDialect({ pool: forKysely }) });
    DIRECT_STATEMENTS.set(server, run);
    try {
      const posts = new PostgresPostRepository(server, { searchBudget: BUDGET });
      /** The scans of the partitions' statements of one page: relation, node, index. */
      const partitionScans = async (search: string) => {
        plans.length = 0;
        await posts.searchPage({ limit: 21, search });
        return plans
          .filter((plan) => JSON.stringify(plan.Plan).includes("Bitmap"))
          .map((plan) => ({
            jit: plan.JIT !== undefined,
            parallel: nodesOf(plan.Plan).some(
              (node) => String(node["Node Type"]).startsWith("Gather") || node["Parallel Aware"] === true,
            ),
            scans: nodesOf(plan.Plan)
              .filter(
                (node) => String(node["Node Type"]).endsWith("Scan") && node["Node Type"] !== "Index Scan",
              )
              .map((node) => `${node["Node Type"]} ${node["Relation Name"] ?? node["Index Name"]}`),
          }));
      };
      // One in twenty: the first walk's 15 matches promise the rest of the page in the rest of
      // the budget, and the walk finds it there; no partition is asked.
      expect(await partitionScans("twentieth")).toEqual([]);
      const twentieth = await posts.searchPage({ limit: 21, search: "twentieth" });
      expect(twentieth.posts.map((post) => post.id)).toEqual(
        range(2 * POSTS, 2 * POSTS - 400)
          .filter((g) => g % 20 === 0)
          .map(byG),
      );
      // A term of several words: first one question on `posts`, through every partition's index
      // of pairs of words; "ery old" is held below the cursor, so the partitions are asked.
      const [gate, ...trigrams] = await partitionScans("very old");
      expect(gate?.scans.filter((scan) => scan.startsWith("Bitmap Index"))).toEqual(
        [0, 1, 2, 3, 4, 5].flatMap((k) => Array(2).fill(`Bitmap Index Scan posts_p${k}_post_word_pairs_idx`)),
      );
      // The fourth partition, the two empty ones, then the oldest.
      expect(trigrams.map((plan) => plan.scans.find((scan) => scan.startsWith("Bitmap Heap")))).toEqual(
        [3, 2, 1, 0].map((k) => `Bitmap Heap Scan posts_p${k}`),
      );
      for (const plan of trigrams) {
        expect(plan).toMatchObject({ jit: false, parallel: false });
        expect(plan.scans.filter((scan) => scan.startsWith("Bitmap Index")).join()).toMatch(/title|content/);
        expect(plan.scans.join()).not.toMatch(/chars|Seq Scan/);
      }
      // A post by id: through `posts` until a post was found in its partition, then on the
      // partition itself (a plan of `posts` is made again at each execution, pruned to the one
      // partition); an id past every partition keeps asking `posts`, and names no table.
      type Logged = Explained & { readonly "Query Text"?: string };
      const lookupPlans = async (id: number) => {
        plans.length = 0;
        const post = await posts.findById(id);
        const texts = plans.map((plan) => (plan as Logged)["Query Text"] ?? "");
        return { found: post?.id, onPartition: texts.some((text) => text.includes('"posts_p0"')) };
      };
      const old = ids[0] as number;
      expect(await lookupPlans(old)).toEqual({ found: old, onPartition: false });
      expect(await lookupPlans(old)).toEqual({ found: old, onPartition: true });
      expect(await lookupPlans(ids[1] as number)).toEqual({ found: ids[1], onPartition: true });
      for (let round = 0; round < 2; round++) {
        expect(await lookupPlans(2 ** 40)).toEqual({ found: undefined, onPartition: false });
      }
      const characters = await partitionScans("z");
      expect(characters).toHaveLength(4);
      for (const plan of characters) {
        expect(plan).toMatchObject({ jit: false, parallel: false });
        expect(plan.scans.filter((scan) => scan.startsWith("Bitmap Index")).join()).toMatch(/chars/);
        expect(plan.scans.join()).not.toMatch(/title|content|char_pairs|Seq Scan/);
      }
      // Two characters and no trigram: the index of pairs of characters, not the characters'.
      const pairsOfCharacters = await partitionScans("qk");
      expect(pairsOfCharacters).toHaveLength(4);
      for (const plan of pairsOfCharacters) {
        expect(plan).toMatchObject({ jit: false, parallel: false });
        expect(plan.scans.filter((scan) => scan.startsWith("Bitmap Index")).join()).toMatch(/char_pairs/);
        expect(plan.scans.join()).not.toMatch(/title|content|chars_idx|Seq Scan/);
      }
      // Statements that read 16 matches at most, for a term of a thousand in one stretch of the
      // oldest partition: each reads no more, and a stretch of ids is asked through the
      // primary key's bitmap and the term's together.
      const narrow = new PostgresPostRepository(server, { searchBudget: BUDGET, searchStatementMatches: 16 });
      plans.length = 0;
      expect(
        (await narrow.searchPage({ limit: 21, search: "cluster" })).posts.map((post) => post.id),
      ).toEqual(range(2000, 1980).map(byG));
      const heaps = plans
        .flatMap((plan) => nodesOf(plan.Plan))
        .filter((node) => node["Node Type"] === "Bitmap Heap Scan" && node["Relation Name"] !== "users");
      expect(heaps.length).toBeGreaterThan(4);
      for (const heap of heaps) expect(Number(heap["Actual Rows"])).toBeLessThanOrEqual(16);
      const ranged = heaps.filter((heap) => JSON.stringify(heap).includes("posts_p0_pkey"));
      const indexesOf = (heap: (typeof ranged)[number]) =>
        nodesOf(heap as Parameters<typeof nodesOf>[0])
          .map((node) => node["Index Name"])
          .filter((name) => name !== undefined);
      // Stretches of more than four times the statement's matches (64 ids): the term's bitmap
      // and the ids'; smaller ones are walked, along the ids' bitmap alone.
      const throughTheTerm = ranged.filter((heap) => JSON.stringify(heap).includes("BitmapAnd"));
      const walked = ranged.filter((heap) => !JSON.stringify(heap).includes("BitmapAnd"));
      expect(throughTheTerm.length).toBeGreaterThan(0);
      expect(walked.length).toBeGreaterThan(0);
      for (const heap of throughTheTerm) {
        expect(indexesOf(heap)).toEqual(
          expect.arrayContaining(["posts_p0_pkey", "posts_p0_title_idx", "posts_p0_content_idx"]),
        );
      }
      for (const heap of walked) expect(indexesOf(heap)).toEqual(["posts_p0_pkey"]);
      // No three letters or digits in a row, but a word of two that starts within the term
      // ("  7", " 77"): the trigram indexes. A word of one (`t 7`: "  7" alone, a word that
      // starts with 7, as common as 7 is): the pairs of characters ("t ", " 7").
      const startOfWord = await partitionScans("t 77");
      expect(startOfWord).toHaveLength(4);
      for (const plan of startOfWord) {
        expect(plan.scans.filter((scan) => scan.startsWith("Bitmap Index")).join()).toMatch(/title|content/);
        expect(plan.scans.join()).not.toMatch(/chars|Seq Scan/);
      }
      const startOfOne = await partitionScans("t 7");
      expect(startOfOne).toHaveLength(4);
      for (const plan of startOfOne) {
        expect(plan.scans.filter((scan) => scan.startsWith("Bitmap Index")).join()).toMatch(/char_pairs/);
        expect(plan.scans.join()).not.toMatch(/title|content|chars_idx|Seq Scan/);
      }
      // Two words each in a tenth of the posts or more, never one after the other, by an author
      // without a content longer than `post_word_pairs` reads (g = 11, which may hold any pair):
      // that question alone, and no partition is asked.
      const long = (await posts.findById(byG(11)))?.author.id;
      const other = (await posts.findById(byG(10)))?.author.id as number;
      expect(other).not.toBe(long);
      plans.length = 0;
      expect(await posts.searchPage({ limit: 21, search: "tenth post", authorId: other })).toEqual({
        posts: [],
      });
      expect(plans.filter((plan) => JSON.stringify(plan.Plan).includes("Bitmap"))).toHaveLength(1);
    } finally {
      DIRECT_STATEMENTS.delete(server);
      await server.destroy();
    }

    // One connection, the service's own statement timeout: what follows a page runs where it ran.
    const handle = createPostgresDatabase({ connectionString, poolSize: 1, statementTimeoutMillis: 4000 });
    try {
      const settings = async () =>
        (
          await sql<Record<string, string>>`
            SELECT current_setting('statement_timeout') AS timeout,
                   current_setting('enable_seqscan') AS seqscan,
                   current_setting('enable_indexscan') AS indexscan,
                   current_setting('plan_cache_mode') AS plans,
                   current_setting('jit') AS jit,
                   current_setting('max_parallel_workers_per_gather') AS workers,
                   now() = statement_timestamp() AS "ownTransaction"`.execute(handle.db)
        ).rows[0];
      const before = await settings();
      expect(before).toMatchObject({
        timeout: "4s",
        seqscan: "on",
        indexscan: "on",
        plans: "auto",
        ownTransaction: true,
      });
      const posts = new PostgresPostRepository(handle.db, { searchBudget: BUDGET });
      for (const search of ["very old", "z", "cluster"]) {
        expect((await posts.searchPage({ limit: 21, search })).posts.length).toBeGreaterThan(0);
        expect(await settings()).toEqual(before);
      }
    } finally {
      await handle.close();
    }
  }, 60_000);

  it("walk a stretch only over posts of a few KiB, and ask one holding a larger post through the term's index", async () => {
    // One connection, whose statements through Kysely (the partitions') are recorded with their values.
    const pool = new pg.Pool({ connectionString: serverUrl(database()), max: 1 });
    const { forKysely, run } = poolForKysely(pool, 0);
    const asked: CompiledQuery[] = [];
    const server = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: forKysely }),
      log: (event) => {
        if (event.level === "query") asked.push(event.query);
      },
    });
    DIRECT_STATEMENTS.set(server, run);
    const big = byG(1990);
    const { rows: kept } = await pool.query("SELECT title, content FROM posts WHERE id = $1", [big]);
    /** The ids a ranged partition statement asked about, and whether it walked them. */
    const stretchOf = (query: CompiledQuery) => {
      const [, from, below] = /id >= \$(\d+) AND id < \$(\d+)/.exec(query.sql) ?? [];
      if (from === undefined || below === undefined) return undefined;
      const value = (slot: string) => Number(query.parameters[Number(slot) - 1]);
      return { from: value(from), below: value(below), walk: /octet_length\(title\) \+/.test(query.sql) };
    };
    /** The cluster's newest page, through statements of 16 matches: its stretches of 64 ids or fewer are walked. */
    const clusterPage = async () => {
      asked.length = 0;
      const narrow = new PostgresPostRepository(server, { searchBudget: BUDGET, searchStatementMatches: 16 });
      const page = await narrow.searchPage({ limit: 21, search: "cluster" });
      const holding = asked
        .map(stretchOf)
        .filter((stretch) => stretch !== undefined && stretch.from <= big && big < stretch.below);
      return { ids: page.posts.map((post) => post.id), holding };
    };
    /** Blocks of the oldest partition's TOAST table read so far, hits included, flushed by this connection. */
    const toastBlocks = async () => {
      await pool.query("SELECT pg_stat_force_next_flush()");
      const { rows } = await pool.query<{ blocks: string }>(
        `SELECT coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0) AS blocks
           FROM pg_statio_user_tables WHERE relname = 'posts_p0'`,
      );
      return Number(rows[0]?.blocks);
    };
    /** The TOAST blocks `query` reads when it asks about the big post alone, and what it answers. */
    const aloneOnBig = async (query: CompiledQuery) => {
      const stretch = /id >= \$(\d+) AND id < \$(\d+)/.exec(query.sql) ?? [];
      const parameters = [...query.parameters];
      parameters[Number(stretch[1]) - 1] = big;
      parameters[Number(stretch[2]) - 1] = big + 1;
      const before = await toastBlocks();
      const { rows } = await pool.query<{ id: string; unwalked: boolean }>(query.sql, parameters);
      return {
        blocks: (await toastBlocks()) - before,
        rows: rows.map((row) => [Number(row.id), row.unwalked]),
      };
    };
    try {
      // 96 KiB of hex digits, which PostgreSQL keeps apart from the row, in the middle of the
      // cluster's newest page; neither its title nor its content holds the term.
      const hex = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3072) AS i)";
      await pool.query(`UPDATE posts SET title = 'Post 1990', content = ${hex} WHERE id = $1`, [big]);
      const without = await clusterPage();
      expect(without.ids).toEqual(
        range(2000, 1979)
          .filter((g) => g !== 1990)
          .map(byG),
      );
      // The last stretch that holds it was walked, then asked again through the term's index
      // (walks of larger ones may have stopped at their 16 matches before they reached it).
      const last = without.holding.at(-1);
      expect(last?.walk).toBe(false);
      expect(without.holding.at(-2)).toEqual({ ...last, walk: true });
      // The walk answers it unmatched, its size read from the value's header, its text unread.
      const walk = asked.find((query) => stretchOf(query)?.walk) as CompiledQuery;
      expect(await aloneOnBig(walk)).toEqual({ blocks: 0, rows: [[big, true]] });

      // Its content holds the term: the term's index names it, and its text is read to match it.
      await pool.query(`UPDATE posts SET content = ${hex} || ' cluster' WHERE id = $1`, [big]);
      const holds = await clusterPage();
      expect(holds.ids).toEqual(range(2000, 1980).map(byG));
      const lookup = asked.find((query) => stretchOf(query)?.walk === false) as CompiledQuery;
      const read = await aloneOnBig(lookup);
      expect(read.rows).toEqual([[big, false]]);
      expect(read.blocks).toBeGreaterThan(0);
      expect(await aloneOnBig(walk)).toEqual({ blocks: 0, rows: [[big, true]] });
    } finally {
      await pool.query("UPDATE posts SET title = $2, content = $3 WHERE id = $1", [
        big,
        kept[0]?.title,
        kept[0]?.content,
      ]);
      DIRECT_STATEMENTS.delete(server);
      await server.destroy();
    }
  }, 60_000);
});

/** The g from `from` down to `to`, both included. */
function range(from: number, to: number): number[] {
  return Array.from({ length: from - to + 1 }, (_, i) => from - i);
}
