import {
  createPostgresDatabase,
  type DatabaseHandle,
  isDatabaseUnavailable,
  PostgresPostRepository,
} from "@posts/adapters-postgres";
import { LocalCluster, type LocalServer, postgresBinariesForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { poolForKysely } from "../../src/connection/pool-for-kysely.js";
import { writeEvidence } from "../../src/connection/write-evidence.js";
import { primaryWithAnAuthor } from "./primary-with-an-author.js";

/** The server of this file's own. */
const PORT = 26101;
const APPLICATION = "write-resolution-under-test";
const RETRY_WITHIN_MS = 20_000;

describeNeeding(postgresBinariesForTests(), "a write whose commit a lost connection left unknown", () => {
  let cluster: LocalCluster;
  let server: LocalServer;
  let admin: DatabaseHandle;
  let authorId: number;

  /** Rows of `text` read by the admin's connection. */
  const rows = <Row>(text: string, values: readonly unknown[] = []): Promise<Row[]> =>
    cluster.query<Row>("primary", text, values);
  const count = async (text: string, values: readonly unknown[] = []): Promise<number> =>
    Number((await rows<{ n: number }>(text, values))[0]?.n);
  /** The busy backends of the pools under test whose query starts with `start`, and what they wait for. */
  const backends = (start: string) =>
    rows<{ pid: number; wait_event: string | null }>(
      "SELECT pid, wait_event FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND starts_with(ltrim(query, E' \n'), $2)",
      [APPLICATION, start],
    );

  /**
   * Makes every commit wait for the synchronous standby `name` (none with ""), and waits until
   * the server has read it: a new session then has it.
   */
  const standbyNamed = async (name: string) => {
    await rows(
      name === ""
        ? "ALTER SYSTEM RESET synchronous_standby_names"
        : `ALTER SYSTEM SET synchronous_standby_names = '${name}'`,
    );
    await rows("SELECT pg_reload_conf()");
    await expect
      .poll(
        async () =>
          (await rows<{ names: string }>("SELECT current_setting('synchronous_standby_names') AS names"))[0]
            ?.names,
        { timeout: 10_000, interval: 20 },
      )
      .toBe(name);
  };

  beforeAll(async () => {
    cluster = new LocalCluster();
    ({ server, admin, authorId } = await primaryWithAnAuthor(cluster, PORT));
    await sql`CREATE TABLE nap (seconds float8 NOT NULL)`.execute(admin.db);
    await sql`INSERT INTO nap VALUES (0)`.execute(admin.db);
    // A row inserted here makes its transaction nap at its commit, after the statement completed.
    await sql`CREATE TABLE napping (at int)`.execute(admin.db);
    await sql`
      CREATE FUNCTION nap_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_sleep((SELECT seconds FROM nap)); RETURN NULL; END $$`.execute(admin.db);
    await sql`
      CREATE CONSTRAINT TRIGGER nap_at_commit AFTER INSERT ON napping DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION nap_at_commit()`.execute(admin.db);
  }, 60_000);

  afterAll(async () => {
    await admin?.close();
    await cluster?.stopAll();
  });

  /**
   * Each kind of post write, run through `posts` on a post of its own (`id`, made beforehand):
   * its answer, reduced to what says it happened, and the post its event names.
   */
  const writes: readonly {
    readonly kind: string;
    readonly start: string;
    readonly event: string;
    readonly title: string;
    readonly write: (posts: PostgresPostRepository, id: number) => Promise<{ post: number; answer: unknown }>;
  }[] = [
    {
      kind: "creation",
      start: "WITH author AS",
      event: "post.created",
      title: "made while waiting",
      write: async (posts) => {
        const post = await posts.create({
          authorId,
          title: "made while waiting",
          content: "c",
          createdAt: new Date(),
        });
        return { post: post?.id as number, answer: post?.title };
      },
    },
    {
      kind: "creation with an idempotency key",
      start: "WITH claimed AS",
      event: "post.created",
      title: "keyed while waiting",
      write: async (posts) => {
        const created = await posts.createIdempotently(
          { authorId, title: "keyed while waiting", content: "c", createdAt: new Date() },
          { key: "waiting", expiresAt: new Date(Date.now() + 3_600_000) },
        );
        return { post: created.ok ? created.value.id : 0, answer: created.ok && !created.value.replayed };
      },
    },
    {
      kind: "change",
      start: "WITH target AS",
      event: "post.updated",
      title: "changed while waiting",
      write: async (posts, id) => {
        const updated = await posts.update({
          id,
          authorId,
          changes: { title: "changed while waiting" },
          now: new Date(),
        });
        return { post: id, answer: updated.ok && updated.value.title };
      },
    },
    {
      kind: "deletion",
      start: "WITH target AS",
      event: "post.deleted",
      title: "to delete",
      write: async (posts, id) => ({ post: id, answer: (await posts.delete({ id, authorId })).ok }),
    },
  ];

  it.each(writes)(
    "acknowledges once, with its rows, a $kind whose session was terminated while its local commit waited for the synchronous standby, once the primary has it confirmed",
    async ({ start, event, title, write }) => {
      const own = await new PostgresPostRepository(admin.db).create({
        authorId,
        title: title === "to delete" ? title : "to change",
        content: "c",
        createdAt: new Date(),
      });
      const database = createPostgresDatabase({
        connectionString: server.url(),
        applicationName: APPLICATION,
        queryTimeoutMillis: 30_000,
        retryWithinMillis: RETRY_WITHIN_MS,
      });
      try {
        const posts = new PostgresPostRepository(database.db);
        await standbyNamed("ghost");
        let settled = false;
        const written = write(posts, own?.id as number).finally(() => {
          settled = true;
        });
        const writing = () => backends(start);
        await expect
          .poll(writing, { timeout: 10_000, interval: 50 })
          .toEqual([expect.objectContaining({ wait_event: "SyncRep" })]);
        const [waiting] = await writing();
        // The server warns "canceling the wait for synchronous replication and terminating
        // connection", commits locally and says nothing more: the write's outcome is unknown.
        await rows("SELECT pg_terminate_backend($1::int)", [waiting?.pid]);
        // The question finds the write committed with its event, and its own commit (the
        // evidence's lock) waits for the standby in turn: nothing is answered meanwhile.
        await expect
          .poll(() => backends("WITH found AS"), { timeout: 10_000, interval: 50 })
          .toEqual([expect.objectContaining({ wait_event: "SyncRep" })]);
        expect(settled).toBe(false);
        await standbyNamed("");
        const { post, answer } = await written;
        expect(answer).toBeTruthy();
        // Made once: the posts with its title are the one answered (a creation's), or the
        // post of its own that was changed or deleted.
        expect(await rows("SELECT id::int AS id FROM posts WHERE title = $1", [title])).toEqual(
          event === "post.deleted" ? [] : [{ id: post }],
        );
        expect(
          await count("SELECT count(*)::int AS n FROM post_events WHERE post_id = $1 AND type = $2", [
            post,
            event,
          ]),
        ).toBe(1);
        expect(database.primaryStats?.().resolved).toEqual({ committed: 1, uncommitted: 0, unresolved: 0 });
        expect(database.primaryStats?.().resent.uncommitted).toBe(0);
      } finally {
        await standbyNamed("");
        await database.close();
      }
    },
    40_000,
  );

  // A statement whose first row (with the evidence `evidence` gives of the write `write`, a CTE
  // `w` answering `id`) reaches the client, pushed out of the server's send buffer by a second
  // row larger than it, while its transaction naps at its commit (for as long as the table `nap`
  // says), at the Sync after the statement: cutting its connection then leaves the client with
  // the evidence and no outcome.
  const napping = (write: string, evidence: string) => `
    WITH w AS (${write}), napped AS (INSERT INTO napping VALUES (1))
    SELECT 1 AS part, w.id, ${evidence}, NULL::text AS pad FROM w
    UNION ALL
    SELECT 2, NULL, NULL, NULL, NULL, NULL, repeat('x', 65536)`;
  const evidenceOf = (id: string) => sql`${writeEvidence(sql.raw(id))}`.compile(admin.db).sql;

  /**
   * Runs `text` through a pool under test with the resolution on; once its backend naps, cuts
   * the client's connection with no word from the server (as a network does), then lets
   * `afterCut` decide the transaction's fate. Answers the statement's outcome and the counts.
   */
  const cutWhileNapping = async (
    text: string,
    values: readonly unknown[],
    afterCut: (pid: number) => Promise<void>,
  ) => {
    const pool = new pg.Pool({ connectionString: server.url(), max: 2, application_name: APPLICATION });
    pool.on("error", () => {});
    const clients: pg.PoolClient[] = [];
    pool.on("connect", (client) => {
      client.on("error", () => {});
      clients.push(client as pg.PoolClient);
    });
    const { run, resolved } = poolForKysely(pool, 0, undefined, undefined, RETRY_WITHIN_MS);
    try {
      await sql`UPDATE nap SET seconds = 30`.execute(admin.db);
      const outcome = run(text, values).then(
        (answered) => ({ answered, failure: undefined as unknown }),
        (failure: unknown) => ({ answered: undefined, failure }),
      );
      const napper = () => backends("WITH w AS");
      await expect
        .poll(napper, { timeout: 10_000, interval: 50 })
        .toEqual([expect.objectContaining({ wait_event: "PgSleep" })]);
      const [{ pid } = { pid: 0 }] = await napper();
      const client = clients.find((each) => (each as unknown as { processID: number }).processID === pid);
      // What the statement sends again naps no more; the one cut short already naps.
      await sql`UPDATE nap SET seconds = 0`.execute(admin.db);
      (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      await afterCut(pid);
      return { ...(await outcome), resolved: resolved() };
    } finally {
      await pool.end();
    }
  };

  it("sends again, once, a creation whose connection was cut after its rows came and which then never committed", async () => {
    const title = "cut, then rolled back";
    const { answered, failure, resolved } = await cutWhileNapping(
      napping(
        `INSERT INTO posts (title, content, created_at, updated_at, user_id)
         VALUES ($1, 'c', now(), now(), $2) RETURNING id`,
        evidenceOf("w.id"),
      ),
      [title, authorId],
      // The server ends the session, whose transaction rolls back.
      async (pid) => void (await rows("SELECT pg_terminate_backend($1::int)", [pid])),
    );
    expect(failure).toBeUndefined();
    const [first] = (answered ?? []) as { id: number }[];
    expect(await count("SELECT count(*)::int AS n FROM posts WHERE title = $1", [title])).toBe(1);
    expect(
      await count("SELECT count(*)::int AS n FROM posts WHERE id = $1 AND title = $2", [first?.id, title]),
    ).toBe(1);
    expect(await count("SELECT count(*)::int AS n FROM post_events WHERE post_id = $1", [first?.id])).toBe(1);
    expect(resolved).toEqual({ committed: 0, uncommitted: 1, unresolved: 0 });
  }, 40_000);

  it("sends again, once, a creation whose transaction id the primary never gave (a promoted standby that never received it)", async () => {
    const title = "from a lost timeline";
    // The creation's own rows, but with an id this server has yet to give, as the old primary's
    // transaction looks to a standby promoted without its WAL.
    const { answered, failure, resolved } = await cutWhileNapping(
      napping(
        `INSERT INTO posts (title, content, created_at, updated_at, user_id)
         VALUES ($1, 'c', now(), now(), $2) RETURNING id`,
        `(pg_current_xact_id()::text::int8 + 1000000)::text::xid8 AS written_xid,
         (extract(epoch FROM now()) * 1000000)::int8 AS written_at, 0::int8 AS written_floor, w.id AS written_post`,
      ),
      [title, authorId],
      async (pid) => void (await rows("SELECT pg_terminate_backend($1::int)", [pid])),
    );
    expect(failure).toBeUndefined();
    const [first] = (answered ?? []) as { id: number }[];
    expect(await count("SELECT count(*)::int AS n FROM posts WHERE title = $1", [title])).toBe(1);
    expect(await count("SELECT count(*)::int AS n FROM posts WHERE id = $1", [first?.id])).toBe(1);
    expect(resolved).toEqual({ committed: 0, uncommitted: 1, unresolved: 0 });
  }, 40_000);

  it("acknowledges nothing when the transaction id committed but no event of it matches: a foreign id, or the id at another microsecond", async () => {
    // A committed transaction of another write: its id and post are real, and committed.
    const other = await new PostgresPostRepository(admin.db).create({
      authorId,
      title: "someone else's",
      content: "c",
      createdAt: new Date(),
    });
    const [event] = await rows<{ xid: string; at: string; seq: string }>(
      `SELECT xid::text AS xid, (extract(epoch FROM xact_start) * 1000000)::int8::text AS at, seq::text AS seq
       FROM post_events WHERE post_id = $1`,
      [other?.id],
    );
    // The statement writes nothing, and says it is that transaction, one microsecond off: what a
    // promoted standby's reuse of the id would look like.
    const forged = (at: string) =>
      `$1::xid8 AS written_xid, (${at})::int8 AS written_at, $2::int8 AS written_floor, $3::int8 AS written_post`;
    // A committed transaction that wrote no event at all.
    const [foreign] = await rows<{ xid: string }>("SELECT pg_current_xact_id()::text AS xid");
    const before = await count("SELECT count(*)::int AS n FROM posts");
    for (const [xid, at] of [
      [event?.xid, `${event?.at} + 1`],
      [event?.xid, "extract(epoch FROM now()) * 1000000"],
      [foreign?.xid, "extract(epoch FROM now()) * 1000000"],
    ] as const) {
      const { failure, resolved } = await cutWhileNapping(
        napping("SELECT $3::int8 AS id", forged(at)),
        [xid, event?.seq, other?.id],
        async (pid) => void (await rows("SELECT pg_terminate_backend($1::int)", [pid])),
      );
      expect(isDatabaseUnavailable(failure)).toBe(true);
      expect(resolved).toEqual({ committed: 0, uncommitted: 0, unresolved: 1 });
    }
    expect(await count("SELECT count(*)::int AS n FROM posts")).toBe(before);
  }, 60_000);
});
