import { createPostgresDatabase, PostgresChangeEventLog } from "@posts/adapters-postgres";
import { openTestDatabase, type TestDatabase } from "@posts/adapters-postgres/testing";
import type { PostChangeEvent } from "@posts/domain";
import { describeNeeding } from "@posts/domain/testing/vitest";
import fc from "fast-check";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { postgres, serverUrl } from "../use-test-database.js";

// The interleavings that break naive numbering, played step by step on separate connections
// of a PostgreSQL server, as separate instances would make them. The log here is never
// started: the test runs the sequencer itself, at the moments it chooses.
describeNeeding(postgres, "numbering change events on PostgreSQL, under interleaved transactions", () => {
  let database: TestDatabase;
  let log: PostgresChangeEventLog;
  const clients: pg.Client[] = [];
  let authorId: number;

  beforeAll(async () => {
    database = await openTestDatabase("postgres");
    log = new PostgresChangeEventLog(database.db);
    for (let i = 0; i < 4; i++) {
      const client = new pg.Client({ connectionString: serverUrl(database) });
      // A terminated backend is an error event, which would otherwise end the process.
      client.on("error", () => {});
      await client.connect();
      clients.push(client);
    }
    const author = await query<{ id: string }>(
      0,
      "INSERT INTO users (email, password_hash, created_at) VALUES ('numbering@example.com', 'h', now()) RETURNING id",
    );
    authorId = Number(author[0]?.id);
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.end()));
    await database?.close();
  });

  async function query<R extends object = Record<string, unknown>>(
    client: number,
    text: string,
    values: unknown[] = [],
  ): Promise<R[]> {
    return (await (clients[client] as pg.Client).query(text, values)).rows as R[];
  }
  const insertPost = async (client: number, title: string) =>
    Number(
      (
        await query<{ id: string }>(
          client,
          "INSERT INTO posts (title, content, created_at, updated_at, user_id) VALUES ($1, 'c', now(), now(), $2) RETURNING id",
          [title, authorId],
        )
      )[0]?.id,
    );
  const updatePost = (client: number, id: number, title: string) =>
    query(
      client,
      "UPDATE posts SET title = $2, updated_at = updated_at + interval '1 millisecond' WHERE id = $1 RETURNING id",
      [id, title],
    );
  /** Every event the log shows, in order. */
  const visible = () => log.readAfter(0, 100_000);
  const numbers = (events: readonly PostChangeEvent[]) => events.map((event) => event.number);
  const titleOf = (event: PostChangeEvent | undefined) =>
    event?.type === "post.deleted" ? undefined : event?.post.title;
  /** Numbers everything committed, and answers the newest number. */
  const numberAll = async () => {
    for (;;) {
      const done = await log.numberPending();
      if (done === 0) return log.lastNumber();
    }
  };
  const expectNoGap = (events: readonly PostChangeEvent[]) => {
    const first = events[0]?.number ?? 1;
    expect(numbers(events)).toEqual(Array.from({ length: events.length }, (_, i) => first + i));
  };

  it("numbers the event of a transaction that stays open after those that commit while it is open", async () => {
    const start = await numberAll();
    await query(0, "BEGIN");
    const early = await insertPost(0, "open early");
    const middle = await insertPost(1, "committed second");
    const late = await insertPost(2, "committed third");
    // The trap: insertion order (a sequence taken before commit) puts the open one first.
    const seqs = await query<{ post_id: string; seq: string }>(
      1,
      "SELECT post_id, seq FROM post_events WHERE post_id = ANY($1) ORDER BY seq",
      [[middle, late]],
    );
    expect(seqs.map((row) => Number(row.post_id))).toEqual([middle, late]);

    expect(await log.numberPending()).toBe(2);
    let events = await log.readAfter(start, 100);
    expect(events.map((event) => [event.number, event.postId])).toEqual([
      [start + 1, middle],
      [start + 2, late],
    ]);
    // Committed but not yet numbered: still nothing a reader could see, so nothing to skip.
    await query(0, "COMMIT");
    expect(numbers(await log.readAfter(start, 100))).toEqual([start + 1, start + 2]);
    expect(await log.numberPending()).toBe(1);
    events = await log.readAfter(start, 100);
    expect(events.map((event) => [event.number, event.postId])).toEqual([
      [start + 1, middle],
      [start + 2, late],
      [start + 3, early],
    ]);
    expectNoGap(await visible());
  });

  it("finds the event of a transaction older than several runs, whether it wrote before them or after", async () => {
    const start = await numberAll();
    // T0 writes its event and stays open; T1 takes its transaction id now and writes only later.
    await query(0, "BEGIN");
    const wroteEarly = await insertPost(0, "written before the runs");
    await query(1, "BEGIN");
    await query(1, "SELECT pg_current_xact_id()");
    // Runs that number other transactions' events, each moving the log's floor as far as it may.
    const others: number[] = [];
    for (let run = 0; run < 3; run++) {
      others.push(await insertPost(2, `other ${run}`));
      expect(await log.numberPending()).toBe(1);
    }
    const wroteLate = await insertPost(1, "written after the runs");
    await query(1, "COMMIT");
    await query(0, "COMMIT");
    expect(await log.numberPending()).toBe(2);
    const events = await log.readAfter(start, 100);
    expect(events.map((event) => event.postId)).toEqual([...others, wroteEarly, wroteLate]);
    expectNoGap(events);
  });

  it("looks for the events still to number above its floor, not through every event numbered since the last vacuum", async () => {
    // As on a server whose autovacuum has not come round yet: the numbered rows' old versions,
    // and their entries in the index of rows to number, stay.
    await query(0, "ALTER TABLE post_events SET (autovacuum_enabled = false)");
    try {
      await query(
        0,
        `INSERT INTO posts (title, content, created_at, updated_at, user_id)
         SELECT 'bulk ' || g, 'c', now(), now(), $1 FROM generate_series(1, 20000) g`,
        [authorId],
      );
      await numberAll();
      // The numbered rows' old versions are dead to every snapshot only once no transaction of
      // the server began before their numbering committed (any database's: the horizon is the
      // server's); a scan marks their index entries dead only then. Another suite's long
      // statement (an index built on a seed) would otherwise keep every entry in the scan.
      const numberedAt = (await query<{ now: Date }>(3, "SELECT clock_timestamp() AS now"))[0]?.now;
      await vi.waitFor(
        async () => {
          const [older] = await query<{ count: string }>(
            3,
            `SELECT count(*) AS count FROM pg_stat_activity
              WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL AND xact_start < $1`,
            [numberedAt],
          );
          if (Number(older?.count ?? 0) !== 0) {
            throw new Error("another transaction held the server's horizon for two minutes");
          }
        },
        { timeout: 120_000, interval: 100 },
      );
      const stats = async () =>
        (
          await query<{ scans: string; blocks: string }>(
            3,
            `SELECT pg_stat_clear_snapshot(), s.idx_scan AS scans, io.idx_blks_hit + io.idx_blks_read AS blocks
             FROM pg_stat_user_indexes s JOIN pg_statio_user_indexes io USING (indexrelid)
             WHERE s.indexrelname = 'post_events_pending_idx'`,
          )
        ).map((row) => ({ scans: Number(row.scans), blocks: Number(row.blocks) }))[0] ?? {
          scans: 0,
          blocks: 0,
        };
      // Statistics reach the view when a backend flushes them, up to a second after its statement.
      const settled = async (scans: number) => {
        for (let tries = 0; tries < 50; tries++) {
          const now = await stats();
          if (now.scans >= scans) return now;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        throw new Error(`the index statistics did not reach ${scans} scans`);
      };
      // A log of its own on one connection, so that it can flush that backend's statistics at
      // once (an idle backend otherwise sends them up to ten seconds later).
      const own = createPostgresDatabase({ connectionString: serverUrl(database), poolSize: 1 });
      try {
        const ownLog = new PostgresChangeEventLog(own.db);
        const flush = () => sql`SELECT pg_stat_force_next_flush()`.execute(own.db);
        expect(await ownLog.numberPending()).toBe(0);
        await flush();
        const before = await settled(0);
        for (let run = 0; run < 10; run++) expect(await ownLog.numberPending()).toBe(0);
        await flush();
        const after = await settled(before.scans + 10);
        expect(after.blocks - before.blocks).toBeLessThanOrEqual(10 * 3);
      } finally {
        await own.close();
      }
    } finally {
      await query(0, "ALTER TABLE post_events RESET (autovacuum_enabled)");
    }
  }, 180_000);

  it("numbers two changes of one post in the order of its versions, though their transactions began the other way round", async () => {
    const id = await insertPost(0, "v0");
    const start = await numberAll();
    // T1 begins first and has the older transaction id; T2 changes the post first.
    await query(0, "BEGIN");
    await query(0, "SELECT txid_current()");
    await query(1, "BEGIN");
    await query(1, "SELECT txid_current()");
    await updatePost(1, id, "by T2");
    const t1 = updatePost(0, id, "by T1"); // waits for T2's row lock
    await new Promise((resolve) => setTimeout(resolve, 100));
    await query(1, "COMMIT");
    expect(await t1).toHaveLength(1);
    // The sequencer runs while T1 is still open: T2's event only.
    expect(await log.numberPending()).toBe(1);
    await query(0, "COMMIT");
    await numberAll();
    const events = (await log.readAfter(start, 100)).filter((event) => event.postId === id);
    expect(events.map(titleOf)).toEqual(["by T2", "by T1"]);
    const [first, second] = events.map((event) =>
      event.type === "post.deleted" ? 0 : event.post.updatedAt.getTime(),
    );
    expect(second).toBeGreaterThan(first ?? Number.POSITIVE_INFINITY);
    expect(events.at(-1)?.type === "post.updated" && events.at(-1)).toMatchObject({
      post: await database.posts.findById(id),
    });
  });

  it("the same, when the sequencer runs only after both committed", async () => {
    const id = await insertPost(0, "w0");
    const start = await numberAll();
    await query(0, "BEGIN");
    await query(0, "SELECT txid_current()");
    await query(1, "BEGIN");
    await updatePost(1, id, "second to begin, first to change");
    const t1 = updatePost(0, id, "first to begin, second to change");
    await new Promise((resolve) => setTimeout(resolve, 100));
    await query(1, "COMMIT");
    await t1;
    await query(0, "COMMIT");
    await numberAll();
    expect((await log.readAfter(start, 100)).map(titleOf)).toEqual([
      "second to begin, first to change",
      "first to begin, second to change",
    ]);
  });

  it("gives no number to a rolled-back change, nor to a change rolled back to a savepoint", async () => {
    const kept = await insertPost(0, "kept");
    const start = await numberAll();
    await query(0, "BEGIN");
    await insertPost(0, "rolled back");
    await updatePost(0, kept, "rolled back too");
    await query(0, "ROLLBACK");
    await query(1, "BEGIN");
    await query(1, "SAVEPOINT s");
    await insertPost(1, "undone");
    await query(1, "ROLLBACK TO SAVEPOINT s");
    const done = await insertPost(1, "done");
    await query(1, "COMMIT");
    await numberAll();
    const events = await log.readAfter(start, 100);
    expect(events.map((event) => [event.number, event.postId, titleOf(event)])).toEqual([
      [start + 1, done, "done"],
    ]);
    expect(
      await query(2, "SELECT count(*)::int AS unnumbered FROM post_events WHERE number IS NULL"),
    ).toEqual([{ unnumbered: 0 }]);
  });

  it("lets one sequencer run at a time, and a sequencer that dies gives no number at all", async () => {
    const start = await numberAll();
    await insertPost(0, "a");
    await insertPost(0, "b");
    // A sequencer of another instance, holding the lock, numbers the rows and dies before commit.
    await query(1, "BEGIN");
    await query(1, "SELECT pg_advisory_xact_lock(8101829370236954228)");
    await query(
      1,
      `UPDATE post_events SET number = (SELECT coalesce(max(number), 0) FROM post_events) + 1000 + seq,
       numbered_at = now() WHERE number IS NULL`,
    );
    expect(await log.numberPending()).toBe("busy");
    const [{ pid } = { pid: 0 }] = await query<{ pid: number }>(1, "SELECT pg_backend_pid() AS pid");
    await query(2, "SELECT pg_terminate_backend($1)", [pid]);
    await (clients[1] as pg.Client).end().catch(() => {});
    const replacement = new pg.Client({ connectionString: serverUrl(database) });
    replacement.on("error", () => {});
    await replacement.connect();
    clients[1] = replacement;
    expect(numbers(await log.readAfter(start, 100))).toEqual([]);
    expect(await numberAll()).toBe(start + 2);
    expect(numbers(await log.readAfter(start, 100))).toEqual([start + 1, start + 2]);
  });

  it("a change commits without notifying anyone; only the sequencer notifies, once per batch", async () => {
    await numberAll();
    const heard: string[] = [];
    const listener = clients[3] as pg.Client;
    const onNotification = (message: pg.Notification) => heard.push(message.channel);
    listener.on("notification", onNotification);
    await query(3, "LISTEN post_events");
    await query(3, "LISTEN post_events_numbered");
    try {
      await insertPost(2, "unannounced 1");
      await insertPost(2, "unannounced 2");
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(heard).toEqual([]);
      expect(await log.numberPending()).toBe(2);
      await vi.waitFor(() => expect(heard).toEqual(["post_events_numbered"]), {
        timeout: 5000,
        interval: 10,
      });
    } finally {
      await query(3, "UNLISTEN *");
      listener.off("notification", onNotification);
    }
  });

  it("without notifications, the periodic check numbers what waits and tells the subscribers", async () => {
    const start = await numberAll();
    const checked = new PostgresChangeEventLog(database.db, { checkIntervalMs: 100 });
    const heard: number[] = [];
    const stop = checked.subscribe((last) => heard.push(last));
    await checked.start();
    try {
      await numberAll();
      await insertPost(2, "checked");
      await vi.waitFor(() => expect(heard).toContain(start + 1), { timeout: 5000, interval: 20 });
      expect(numbers(await log.readAfter(start, 10))).toEqual([start + 1]);
    } finally {
      stop();
      await checked.close();
    }
  });

  it("retention forgets only the oldest run of numbers stamped before the cut, even when the clock stepped back", async () => {
    const first = (await numberAll()) + 1;
    for (const title of ["r1", "r2", "r3", "r4"]) await insertPost(0, title);
    await numberAll();
    // The database's clock stepped back while r3 was numbered: r3 looks older than r2.
    await query(0, "UPDATE post_events SET numbered_at = now() - interval '1 hour' WHERE number <= $1", [
      first,
    ]);
    await query(0, "UPDATE post_events SET numbered_at = now() + interval '1 hour' WHERE number = $1", [
      first + 1,
    ]);
    await query(0, "UPDATE post_events SET numbered_at = now() - interval '1 hour' WHERE number = $1", [
      first + 2,
    ]);
    await query(0, "UPDATE post_events SET numbered_at = now() + interval '1 hour' WHERE number = $1", [
      first + 3,
    ]);

    // Everything before `first + 1` goes; r3, though stamped before the cut, stays behind r2.
    expect(await log.deleteNumberedBefore(new Date())).toBe(first);
    expect(numbers(await visible())).toEqual([first + 1, first + 2, first + 3]);
    // All older than the cut: everything but the newest goes, and numbering goes on after it.
    expect(await log.deleteNumberedBefore(new Date(Date.now() + 7_200_000))).toBe(2);
    await insertPost(0, "r5");
    await numberAll();
    expect(numbers(await visible())).toEqual([first + 3, first + 4]);
  });

  it("reads, numbers and sweeps through the outbox's indexes, not by reading the table", async () => {
    await query(0, "ANALYZE post_events");
    // Plans as the statements would get them on a large table, which this one is not.
    await query(0, "SET enable_seqscan = off");
    try {
      const plan = async (statement: string) =>
        (await query<{ "QUERY PLAN": string }>(0, `EXPLAIN (COSTS OFF) ${statement}`))
          .map((row) => row["QUERY PLAN"])
          .join("\n");
      const reads = async (statement: string, index: string) => {
        const text = await plan(statement);
        expect(text).toContain(index);
        expect(text).not.toContain("Seq Scan");
      };
      await reads(
        "SELECT * FROM post_events WHERE number > 5 ORDER BY number LIMIT 100",
        "post_events_number_idx",
      );
      await reads("SELECT max(number) FROM post_events", "post_events_number_idx");
      await reads(
        "SELECT min(number) FROM post_events WHERE numbered_at >= now() - interval '1 day'",
        "post_events_number_idx",
      );
      await reads(
        "SELECT seq FROM post_events WHERE number IS NULL AND xid >= '1000'::xid8 ORDER BY seq LIMIT 5000",
        "post_events_pending_idx",
      );
    } finally {
      await query(0, "RESET enable_seqscan");
    }
    // Two index entries per event at insert (its `seq`, and the rows still to number), not four.
    const indexes = await query<{ indexdef: string }>(
      0,
      "SELECT indexdef FROM pg_indexes WHERE tablename = 'post_events' AND schemaname = current_schema() ORDER BY indexname",
    );
    expect(indexes.map((row) => row.indexdef.replace(/ ON \S+\./, " ON "))).toEqual([
      "CREATE UNIQUE INDEX post_events_number_idx ON post_events USING btree (number) WHERE (number IS NOT NULL)",
      "CREATE INDEX post_events_pending_idx ON post_events USING btree (xid) WHERE (number IS NULL)",
      "CREATE UNIQUE INDEX post_events_pkey ON post_events USING btree (seq)",
    ]);
  });

  // A model of what must hold, checked on random interleavings of a few transactions, each a
  // few changes of shared posts on its own connection, committed or rolled back, with the
  // sequencer run at random moments and readers looking after every step.
  it("looks for rows to number from the bottom again after a change of primary, whose transaction ids may lie below the floor", async () => {
    let primaryChanges = 0;
    const sequencer = new PostgresChangeEventLog(database.db, { primaryChanges: () => primaryChanges });
    await insertPost(0, "on the old primary");
    // Numbers what is pending, and learns a floor from this server's transaction ids.
    expect(await sequencer.numberPending()).toBeGreaterThan(0);
    // A change written on a promoted standby, whose transaction id is below that floor.
    const id = await insertPost(0, "on the new primary");
    await query(0, "UPDATE post_events SET xid = '3'::xid8 WHERE post_id = $1 AND number IS NULL", [id]);
    expect(await sequencer.numberPending()).toBe(0);
    primaryChanges = 1;
    expect(await sequencer.numberPending()).toBe(1);
    const [row] = await query<{ number: string | null }>(
      0,
      "SELECT number FROM post_events WHERE post_id = $1",
      [id],
    );
    expect(row?.number).not.toBeNull();
  });

  it("keeps 1..n contiguous, each post's events in version order, and one event per committed change, whatever the interleaving", async () => {
    type Step =
      | { kind: "insert"; tx: number }
      | { kind: "update"; tx: number; post: number }
      | { kind: "delete"; tx: number; post: number }
      | { kind: "number" };
    const transactions = 3;
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant("insert" as const), tx: fc.nat(transactions - 1) }),
      fc.record({ kind: fc.constant("update" as const), tx: fc.nat(transactions - 1), post: fc.nat(2) }),
      fc.record({ kind: fc.constant("delete" as const), tx: fc.nat(transactions - 1), post: fc.nat(2) }),
      fc.constant({ kind: "number" as const }),
    );
    const scenario = fc.record({
      steps: fc.array(step, { minLength: 1, maxLength: 12 }),
      commits: fc.array(fc.boolean(), { minLength: transactions, maxLength: transactions }),
      endOrder: fc.shuffledSubarray([0, 1, 2], { minLength: 3, maxLength: 3 }),
    });

    await fc.assert(
      fc.asyncProperty(scenario, async ({ steps, commits, endOrder }) => {
        const shared = [await insertPost(3, "s0"), await insertPost(3, "s1"), await insertPost(3, "s2")];
        const start = await numberAll();
        const failed = new Set<number>();
        // What each transaction changed, as its statements reported it: [post id, title or deleted].
        const changes: [number, number, string][] = [];
        const pending: Promise<unknown>[] = [];
        const run = (tx: number, statement: () => Promise<unknown[]>, record: (rows: unknown[]) => void) => {
          pending.push(
            statement().then(record, () => {
              // A deadlock victim, or a statement after it: the transaction will roll back.
              failed.add(tx);
            }),
          );
        };
        for (let tx = 0; tx < transactions; tx++) pending.push(query(tx, "BEGIN"));
        let counter = 0;
        for (const each of steps) {
          if (each.kind === "number") {
            // Readers see a prefix of 1..n, whatever is open or blocked.
            await log.numberPending();
            expectNoGap(await log.readAfter(start, 100_000));
            continue;
          }
          const title = `t${++counter}`;
          const { tx } = each;
          if (each.kind === "insert") {
            run(
              tx,
              () =>
                query<{ id: string }>(
                  tx,
                  "INSERT INTO posts (title, content, created_at, updated_at, user_id) VALUES ($1, 'c', now(), now(), $2) RETURNING id",
                  [title, authorId],
                ),
              (rows) => {
                for (const row of rows as { id: string }[]) changes.push([tx, Number(row.id), title]);
              },
            );
          } else if (each.kind === "update") {
            const id = shared[each.post] as number;
            run(
              tx,
              () => updatePost(tx, id, title),
              (rows) => {
                if (rows.length > 0) changes.push([tx, id, title]);
              },
            );
          } else {
            const id = shared[each.post] as number;
            run(
              tx,
              () => query(tx, "DELETE FROM posts WHERE id = $1 RETURNING id", [id]),
              (rows) => {
                if (rows.length > 0) changes.push([tx, id, "deleted"]);
              },
            );
          }
          // Lets the statement reach the server (or block there) before the next step.
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
        for (const tx of endOrder) {
          const end = commits[tx] ? "COMMIT" : "ROLLBACK";
          pending.push(query(tx, end).catch(() => failed.add(tx)));
        }
        await Promise.all(pending);
        // A transaction with a failed statement ends in ROLLBACK, whatever was asked.
        const committed = new Set([0, 1, 2].filter((tx) => commits[tx] && !failed.has(tx)));
        await numberAll();

        const events = await log.readAfter(start, 100_000);
        expectNoGap(events);
        expect(events[0]?.number ?? start + 1).toBe(start + 1);
        const expected = changes.filter(([tx]) => committed.has(tx)).map(([, id, what]) => `${id}:${what}`);
        const seen = events.map(
          (event) => `${event.postId}:${event.type === "post.deleted" ? "deleted" : event.post.title}`,
        );
        // Exactly one event per committed change.
        expect([...seen].sort()).toEqual([...expected].sort());
        // Each post's events follow its versions; nothing follows its deletion.
        for (const id of new Set(events.map((event) => event.postId))) {
          const own = events.filter((event) => event.postId === id);
          const versions = own.flatMap((event) =>
            event.type === "post.deleted" ? [] : [event.post.updatedAt.getTime()],
          );
          expect(versions).toEqual([...versions].sort((a, b) => a - b));
          expect(new Set(versions).size).toBe(versions.length);
          const deletion = own.findIndex((event) => event.type === "post.deleted");
          expect(deletion === -1 || deletion === own.length - 1).toBe(true);
        }
      }),
      { numRuns: 40 },
    );
  });
});
