import { setTimeout as sleep } from "node:timers/promises";
import { createPostgresDatabase, type Database, PostgresPostRepository } from "@posts/adapters-postgres";
import { encodeCursor, listPosts, type SearchPageQuery } from "@posts/domain";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { CompiledQuery, Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DIRECT_STATEMENTS } from "../../../src/connection/direct-statements.js";
import { poolForKysely } from "../../../src/connection/pool-for-kysely.js";
import { nodesOf, type ObservedDatabase, observedDatabase, seedPosts } from "../../seeded-posts.js";
import { postgres, serverUrl, useTestDatabase } from "../../use-test-database.js";
import { untilBlocked } from "../../while-locked.js";

const POSTS = 20_000;
const BUDGET = 1000;
/** What a page's first walk reads when the trigram step may follow: a tenth of the budget. */
const FIRST_WALK = BUDGET / 10;
/** How often a term whose step ran out of time takes it again (search-pages.ts). */
const RETRY_MS = 1000;
/**
 * Nothing kept of what a step counted (`searchResultIds: 0`): these tests look at how each page
 * walks and steps; a term's pages answered from the matches a step kept are
 * search-results.test.ts's.
 */
const EVERY_PAGE_ITS_OWN = { searchResultIds: 0 };

// The case that made searches take seconds: every match among the oldest posts, so that a
// newest-first walk filtering row by row reads almost the whole table before its first match.
describeNeeding(postgres, "search pages on a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");
  let observed: ObservedDatabase | undefined;
  /** The posts' ids, oldest first. */
  let ids: number[] = [];
  const byG = (g: number) => ids[g - 1] as number;
  // A step time no busy machine reaches here, so that what is checked is what the step finds.
  const stepping = () =>
    new PostgresPostRepository(database().db, {
      ...EVERY_PAGE_ITS_OWN,
      searchBudget: BUDGET,
      searchIndexStepMs: 10_000,
    });

  beforeAll(async () => {
    const { connectionString } = database();
    if (connectionString === undefined) return;
    observed = observedDatabase(connectionString);
    // Post g: "very old" in the 5 oldest; "cluster" in the oldest twice the budget; "tenth" in
    // one in ten; "fresh" in the newest 50 and the 3 oldest.
    ids = await seedPosts(observed.pool, {
      users: 10,
      posts: POSTS,
      title: `'Post ' || g || CASE WHEN g <= 5 THEN ' Very Old' ELSE '' END
                || CASE WHEN g <= ${2 * BUDGET} THEN ' Cluster' ELSE '' END
                || CASE WHEN g % 10 = 0 THEN ' Tenth' ELSE '' END
                || CASE WHEN g > ${POSTS - 50} OR g <= 3 THEN ' Fresh' ELSE '' END`,
      content: `md5(g::text) || CASE WHEN g = 3 THEN ' only here: very old' ELSE '' END`,
    });
  });
  afterAll(async () => {
    await observed?.destroy();
  });

  it("read at most the budget whatever the term, and walk to the oldest matches page by page", async () => {
    if (observed === undefined) throw new Error("the posts were not seeded");
    const newest = ids.at(-1) as number;
    const oldest = ids.slice(0, 5).reverse();

    // Through a Kysely of its own, which has no direct runner: the walk alone.
    const posts = new PostgresPostRepository(observed.db, { ...EVERY_PAGE_ITS_OWN, searchBudget: BUDGET });
    const first = await posts.searchPage({ limit: 21, search: "VERY old" });
    expect(first.posts).toEqual([]);
    // It stopped at the last post it read: the budget's worth below the newest.
    expect(first.resumeBelow).toBe(ids.at(-BUDGET));

    const [statement] = observed.captured;
    if (statement === undefined) throw new Error("no statement was captured");
    const scans = (await observed.plan(statement, true)).filter((node) => node["Relation Name"] === "posts");
    // The posts read, in one pass that also tells where the walk stopped, at most the budget,
    // nothing else.
    expect(scans.map((node) => node["Node Type"])).toEqual(["Index Scan"]);
    for (const scan of scans) expect(scan["Actual Rows"]).toBeLessThanOrEqual(BUDGET);

    // Through the listing: short pages whose cursors reach the old matches, each once.
    const deps = { posts } as Parameters<typeof listPosts>[0];
    const seen: number[] = [];
    const cursors: (string | null)[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < POSTS / BUDGET + 2; page++) {
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

    // On the adapter's own pool the trigram step follows a walk that found too little: every
    // match of a rare term below where the walk stopped, on the first page.
    const withIndex = stepping();
    expect(await withIndex.searchPage({ limit: 21, search: "VERY old" })).toEqual({
      posts: await Promise.all(oldest.map(async (id) => await withIndex.findById(id))),
    });
    expect(await withIndex.searchPage({ limit: 2, search: "very old" })).toEqual({
      posts: await Promise.all(oldest.slice(0, 2).map(async (id) => await withIndex.findById(id))),
    });
    // More matches below than the budget: the bitmap is not used, the page ends where the walk did.
    expect(await withIndex.searchPage({ limit: 21, search: "cluster" })).toEqual({
      posts: [],
      resumeBelow: ids.at(-BUDGET),
    });
    // Without the step (0 ms) a rare term's page is the walk's.
    const walkOnly = new PostgresPostRepository(database().db, {
      ...EVERY_PAGE_ITS_OWN,
      searchBudget: BUDGET,
      searchIndexStepMs: 0,
    });
    expect(await walkOnly.searchPage({ limit: 21, search: "very old" })).toEqual({
      posts: [],
      resumeBelow: ids.at(-BUDGET),
    });
  }, 60_000);

  it("take the trigram step after a first walk of a tenth of the budget for a rare term, after the whole walk for a denser one, never for a page the walk fills", async () => {
    const connectionString = serverUrl(database());
    if (observed === undefined) throw new Error("the posts were not seeded");
    // A Kysely on a pool of its own, made as a server's: walks go through its direct runner,
    // which records them here; the step through Kysely, whose log records it.
    const pool = new pg.Pool({ connectionString, max: 1 });
    const { forKysely, run } = poolForKysely(pool, 0);
    const walks: CompiledQuery[] = [];
    const others: string[] = [];
    const server = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: forKysely }),
      log: (event) => {
        if (event.level === "query") others.push(event.query.sql);
      },
    });
    DIRECT_STATEMENTS.set(server, (text, parameters) => {
      walks.push(CompiledQuery.raw(text, [...parameters]));
      return run(text, parameters);
    });
    try {
      const posts = new PostgresPostRepository(server, {
        ...EVERY_PAGE_ITS_OWN,
        searchBudget: BUDGET,
        searchIndexStepMs: 10_000,
      });
      const explainer = observed;
      /** A page, how many walks and trigram steps made it, and how many posts its walks read. */
      const observe = async (query: SearchPageQuery, repository = posts) => {
        walks.length = 0;
        others.length = 0;
        const read = await repository.searchPage(query);
        let postsRead = 0;
        for (const walk of walks) {
          const scans = (await explainer.plan(walk, true)).filter(
            (node) => node["Relation Name"] === "posts",
          );
          postsRead += Math.max(...scans.map((node) => Number(node["Actual Rows"])));
        }
        const steps = others.filter((text) => text.includes("statement_timeout")).length;
        return {
          ids: read.posts.map((post) => post.id),
          resumeBelow: read.resumeBelow,
          walks: walks.length,
          steps,
          postsRead,
        };
      };
      const newestOf = (count: number, matches: (g: number) => boolean) =>
        Array.from({ length: POSTS }, (_, i) => POSTS - i)
          .filter(matches)
          .slice(0, count)
          .map(byG);

      // A term in every post: the first walk fills the page, no step. A page the walk fills
      // reads up to its last match and the next post (which the running sum of the text's bytes
      // reads ahead), not up to its budget.
      expect(await observe({ limit: 21, search: "post" })).toEqual({
        ids: newestOf(21, () => true),
        resumeBelow: undefined,
        walks: 1,
        steps: 0,
        postsRead: 21 + 1,
      });
      // A rare term: the step fills the page after the first walk, without the rest of it.
      expect(await observe({ limit: 21, search: "very old" })).toEqual({
        ids: newestOf(21, (g) => g <= 5),
        resumeBelow: undefined,
        walks: 1,
        steps: 1,
        postsRead: FIRST_WALK,
      });
      // Its next pages, for a minute: the step alone, the same answer (also below a cursor).
      expect(await observe({ limit: 21, search: "very old" })).toEqual({
        ids: newestOf(21, (g) => g <= 5),
        resumeBelow: undefined,
        walks: 0,
        steps: 1,
        postsRead: 0,
      });
      expect(await observe({ limit: 2, search: "very old", beforeId: byG(4) })).toEqual({
        ids: [byG(3), byG(2)],
        resumeBelow: undefined,
        walks: 0,
        steps: 1,
        postsRead: 0,
      });
      // Remembered for everyone's posts, not for one author's: that search walks first.
      const author = Number(
        (await explainer.pool.query("SELECT user_id FROM posts WHERE id = $1", [byG(1)])).rows[0]?.user_id,
      );
      const byAuthor = await observe({ limit: 21, search: "very old", authorId: author });
      expect(byAuthor.walks).toBe(1);
      expect(byAuthor.ids).toContain(byG(1));
      // A term in one post in ten: too many matches for the step, and the rest of the walk fills
      // the page, reading up to its eleventh match, 101 posts on (and the next).
      expect(await observe({ limit: 21, search: "tenth" })).toEqual({
        ids: newestOf(21, (g) => g % 10 === 0),
        resumeBelow: undefined,
        walks: 2,
        steps: 0,
        postsRead: FIRST_WALK + 101 + 1,
      });
      // Dense among the newest posts, then rare: the whole walk, then the step for what is below.
      expect(await observe({ limit: 60, search: "fresh" })).toEqual({
        ids: newestOf(60, (g) => g > POSTS - 50 || g <= 3),
        resumeBelow: undefined,
        walks: 2,
        steps: 1,
        postsRead: BUDGET,
      });
      // A rare term by the first walk whose step gives up (more matches below than the budget):
      // the rest of the walk, and the page ends where it stopped, the budget's worth down.
      let page = await observe({ limit: 21, search: "cluster" });
      expect(page).toEqual({ ids: [], resumeBelow: ids.at(-BUDGET), walks: 2, steps: 1, postsRead: BUDGET });
      // Its pages go on, a budget at a time, until the walk reaches the matches.
      let pages = 1;
      while (page.ids.length === 0 && page.resumeBelow !== undefined) {
        expect(page.resumeBelow).toBe(ids.at(-BUDGET * pages));
        page = await observe({ limit: 21, search: "cluster", beforeId: page.resumeBelow });
        pages += 1;
      }
      expect(pages).toBe((POSTS - 2 * BUDGET) / BUDGET + 1);
      expect(page.ids).toEqual(newestOf(21, (g) => g <= 2 * BUDGET));

      // A step out of time (1 ms; a term every title's trigrams hold costs the step a read of
      // every post, over 10 ms here) gives up; the term's next pages then walk their whole
      // budget in one statement, without a step.
      const hurried = new PostgresPostRepository(server, {
        ...EVERY_PAGE_ITS_OWN,
        searchBudget: BUDGET,
        searchIndexStepMs: 1,
      });
      page = await observe({ limit: 21, search: "post post" }, hurried);
      expect(page).toEqual({ ids: [], resumeBelow: ids.at(-BUDGET), walks: 2, steps: 1, postsRead: BUDGET });
      expect(await observe({ limit: 21, search: "post post", beforeId: page.resumeBelow }, hurried)).toEqual({
        ids: [],
        resumeBelow: ids.at(-2 * BUDGET),
        walks: 1,
        steps: 0,
        postsRead: BUDGET,
      });
      // Another term still takes it (in time or not).
      expect(await observe({ limit: 21, search: "very old" }, hurried)).toMatchObject({ steps: 1 });

      // A term that was rare and has grown common: its step alone gives up, the term is forgotten,
      // and that page walks its whole budget without a second step; the next page starts over.
      const setGrown = (posts: readonly number[]) =>
        observed?.pool.query("UPDATE posts SET title = title || ' Grown' WHERE id = ANY($1)", [posts]);
      const growing = new PostgresPostRepository(server, {
        ...EVERY_PAGE_ITS_OWN,
        searchBudget: BUDGET,
        searchIndexStepMs: 10_000,
      });
      try {
        await setGrown(ids.slice(0, 3));
        expect(await observe({ limit: 3, search: "grown" }, growing)).toEqual({
          ids: [byG(3), byG(2), byG(1)],
          resumeBelow: undefined,
          walks: 1,
          steps: 1,
          postsRead: FIRST_WALK,
        });
        await setGrown(ids.slice(-(BUDGET + 10)));
        const newest3 = [byG(POSTS), byG(POSTS - 1), byG(POSTS - 2)];
        // Each walk may read its budget; the three newest posts fill its page (and it reads the next).
        expect(await observe({ limit: 3, search: "grown" }, growing)).toEqual({
          ids: newest3,
          resumeBelow: undefined,
          walks: 1,
          steps: 1,
          postsRead: 3 + 1,
        });
        expect(await observe({ limit: 3, search: "grown" }, growing)).toEqual({
          ids: newest3,
          resumeBelow: undefined,
          walks: 1,
          steps: 0,
          postsRead: 3 + 1,
        });
      } finally {
        await observed?.pool.query(
          "UPDATE posts SET title = replace(title, ' Grown', '') WHERE title LIKE '% Grown'",
        );
      }
    } finally {
      DIRECT_STATEMENTS.delete(server);
      await server.destroy();
    }
  }, 60_000);

  it("give a term remembered as rare more time for its step, retry a step out of time a second later, and take a step in time as word that its posting lists are short", async () => {
    const connectionString = serverUrl(database());
    const STEP_MS = 400;
    const handle = createPostgresDatabase({ connectionString, poolSize: 2 });
    const locker = new pg.Client({ connectionString });
    await locker.connect();
    try {
      const posts = new PostgresPostRepository(handle.db, {
        ...EVERY_PAGE_ITS_OWN,
        searchBudget: BUDGET,
        searchIndexStepMs: STEP_MS,
      });
      const oldest = ids.slice(0, 5).reverse();
      const full = { posts: await Promise.all(oldest.map(async (id) => await posts.findById(id))) };
      /** Runs `meanwhile` while another transaction holds the table locked, then lets go. */
      const whileTableLocked = async (meanwhile: () => Promise<void>) => {
        await locker.query("BEGIN; LOCK TABLE posts IN ACCESS EXCLUSIVE MODE");
        try {
          await meanwhile();
        } finally {
          await locker.query("COMMIT");
        }
      };
      type Page = ReturnType<typeof posts.searchPage>;
      /** A page of "very old" while the table is locked for `ms`: its step waits that long. */
      const pageLockedFor = async (ms: number) => {
        let page: Page | undefined;
        await whileTableLocked(async () => {
          page = posts.searchPage({ limit: 21, search: "very old" });
          await untilBlocked(database(), 1);
          await sleep(ms);
        });
        return page;
      };

      // Unknown yet: the first walk, then the step in its own time, and the term is remembered.
      expect(await posts.searchPage({ limit: 21, search: "very old" })).toEqual(full);
      // Remembered: a step kept waiting twice the step's time still answers the page.
      expect(await pageLockedFor(2 * STEP_MS)).toEqual(full);
      // Kept waiting past its patience: the step gives up and the term is forgotten and marked
      // out of time; that page is a walk of the whole budget.
      const walked = { posts: [], resumeBelow: ids.at(-BUDGET) };
      expect(await pageLockedFor(6 * STEP_MS)).toEqual(walked);
      // A second later one page takes the step again while the others asked with it walk; its
      // step answers in time, which ends the mark: the next page takes the step too.
      await sleep(RETRY_MS + 200);
      const retried = [0, 1, 2].map(() => posts.searchPage({ limit: 21, search: "very old" }));
      expect(await Promise.all(retried)).toEqual([full, walked, walked]);
      expect(await posts.searchPage({ limit: 21, search: "very old" })).toEqual(full);

      // A step in time clears the mark another page of the term left as it waited past its
      // time: page A's step waits past its patience, page B's, which began later, does not.
      const again = new PostgresPostRepository(handle.db, {
        ...EVERY_PAGE_ITS_OWN,
        searchBudget: BUDGET,
        searchIndexStepMs: STEP_MS,
      });
      expect(await again.searchPage({ limit: 21, search: "very old" })).toEqual(full);
      let pages: Page[] = [];
      await whileTableLocked(async () => {
        const a = again.searchPage({ limit: 21, search: "very old" });
        await untilBlocked(database(), 1);
        await sleep(2.5 * STEP_MS);
        const b = again.searchPage({ limit: 21, search: "very old" });
        await untilBlocked(database(), 2);
        await sleep(3.25 * STEP_MS);
        pages = [a, b];
      });
      expect(await Promise.all(pages)).toEqual([walked, full]);
      // A forgot the term, B's step cleared the mark: the next page walks a tenth and steps.
      expect(await again.searchPage({ limit: 21, search: "very old" })).toEqual(full);
    } finally {
      await locker.end();
      await handle.close();
    }
  }, 60_000);

  it("take the step on one process without JIT, however large the table looks to the planner", async () => {
    const connectionString = serverUrl(database());
    // A session that would compile and parallelise any plan, as ten million posts make the
    // step's generic plan look to the planner, and that hands every plan it runs to the client.
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
      jit_inline_above_cost: 0,
      jit_optimize_above_cost: 0,
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
      const posts = new PostgresPostRepository(server, {
        ...EVERY_PAGE_ITS_OWN,
        searchBudget: BUDGET,
        searchIndexStepMs: 10_000,
      });
      const stepPlans = async (search: string) => {
        plans.length = 0;
        const read = await posts.searchPage({ limit: 21, search });
        const steps = plans.filter((plan) =>
          nodesOf(plan.Plan).some((node) => node["Index Name"] === "posts_title_trgm_idx"),
        );
        return { ids: read.posts.map((post) => post.id), steps };
      };
      const jitted = (plan: Explained) => plan.JIT !== undefined;
      const parallel = (plan: Explained) =>
        nodesOf(plan.Plan).some(
          (node) => String(node["Node Type"]).startsWith("Gather") || node["Parallel Aware"] === true,
        );

      const { ids: found, steps } = await stepPlans("very old");
      expect(found).toEqual(ids.slice(0, 5).reverse());
      expect(steps).toHaveLength(1);
      for (const plan of steps)
        expect({ jit: jitted(plan), parallel: parallel(plan) }).toEqual({ jit: false, parallel: false });

      // The session does what it says to a statement without the step's settings (JIT where the
      // server was built with it, as Debian's is).
      const jit = (await pool.query<{ available: boolean }>("SELECT pg_jit_available() AS available"))
        .rows[0];
      plans.length = 0;
      await pool.query("SELECT count(*) FROM posts");
      const [bare] = plans;
      if (bare === undefined) throw new Error("auto_explain handed no plan over");
      expect({ jit: jitted(bare), parallel: parallel(bare) }).toEqual({
        jit: jit?.available,
        parallel: true,
      });
    } finally {
      DIRECT_STATEMENTS.delete(server);
      await server.destroy();
    }
  }, 60_000);

  it("leave the step's connection as it was, whether the step answers, gives up or runs out of time", async () => {
    const connectionString = serverUrl(database());
    if (observed === undefined) throw new Error("the posts were not seeded");
    // One connection, named statements, the service's own statement timeout: what follows a
    // step runs where it ran.
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
      for (const stepMs of [10_000, 1]) {
        const posts = new PostgresPostRepository(handle.db, {
          ...EVERY_PAGE_ITS_OWN,
          searchBudget: BUDGET,
          searchIndexStepMs: stepMs,
        });
        for (let round = 0; round < 3; round++) {
          // Answered by the step given time enough, so long as it has it.
          const rare = await posts.searchPage({ limit: 21, search: "very old" });
          if (stepMs > 1) expect(rare.posts.map((post) => post.id)).toEqual(ids.slice(0, 5).reverse());
          // More matches than the budget: the walk's page.
          expect(await posts.searchPage({ limit: 21, search: "cluster" })).toEqual({
            posts: [],
            resumeBelow: ids.at(-BUDGET),
          });
          // No match, every trigram in every post: the step reads them all and rechecks every
          // post, several milliseconds. Given the time, it says there is no match below; out of
          // time, the page is the walk's.
          expect(await posts.searchPage({ limit: 21, search: "post post" })).toEqual(
            stepMs > 1 ? { posts: [] } : { posts: [], resumeBelow: ids.at(-BUDGET) },
          );
          expect(await settings()).toEqual(before);
        }
      }
    } finally {
      await handle.close();
    }
  }, 60_000);
});
