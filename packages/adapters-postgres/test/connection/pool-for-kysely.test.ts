import { createPostgresDatabase, type DatabaseHandle, isDatabaseUnavailable } from "@posts/adapters-postgres";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => error,
  );

const selectOne = (handle: DatabaseHandle) => sql<{ one: number }>`SELECT 1 AS one`.execute(handle.db);

describeNeeding(postgres, "the pool behind Kysely", () => {
  const database = useTestDatabase("postgres");
  const handles: DatabaseHandle[] = [];
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.close()));
  });
  const open = (options: { poolSize: number; queryTimeoutMillis?: number }) => {
    const handle = createPostgresDatabase({
      connectionString: serverUrl(database()),
      // Only the client's read timeout bounds a statement here: the server lets it run.
      statementTimeoutMillis: 0,
      ...options,
    });
    handles.push(handle);
    return handle;
  };

  it("fails a statement unanswered past the read timeout as unavailable, and never reuses its connection", async () => {
    const handle = open({ poolSize: 1, queryTimeoutMillis: 300 });
    await selectOne(handle);

    const started = performance.now();
    const error = await failureOf(sql`SELECT pg_sleep(5)`.execute(handle.db));
    expect(performance.now() - started).toBeLessThan(2000);
    expect((error as Error).message).toBe("Query read timeout");
    expect(isDatabaseUnavailable(error)).toBe(true);

    // One connection in the pool: had the stalled one come back, this would wait for pg_sleep.
    const next = performance.now();
    expect((await selectOne(handle)).rows).toEqual([{ one: 1 }]);
    expect(performance.now() - next).toBeLessThan(2000);
  });

  it("times each statement from when it was run, whatever ran before it on its connection", async () => {
    const handle = open({ poolSize: 1, queryTimeoutMillis: 400 });
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // The timer is armed by the first statement; the second runs 250 ms later and takes 300.
    await selectOne(handle);
    await pause(250);
    await expect(sql`SELECT pg_sleep(0.3)`.execute(handle.db)).resolves.toBeDefined();
    // Its timer may be armed from before: this one still gets its full 400 ms, then fails.
    await pause(100);
    const started = performance.now();
    const error = await failureOf(sql`SELECT pg_sleep(5)`.execute(handle.db));
    const waited = performance.now() - started;
    expect((error as Error).message).toBe("Query read timeout");
    expect(waited).toBeGreaterThanOrEqual(390);
    expect(waited).toBeLessThan(2000);
  });

  it("answers rows, row counts and SQL errors as pg does", async () => {
    const handle = open({ poolSize: 2, queryTimeoutMillis: 5000 });
    const rows = await sql<{ n: number; t: string }>`
      SELECT n, 'x' || n AS t FROM generate_series(1, 3) AS n`.execute(handle.db);
    expect(rows.rows).toEqual([
      { n: 1, t: "x1" },
      { n: 2, t: "x2" },
      { n: 3, t: "x3" },
    ]);
    const error = await failureOf(sql`SELECT * FROM no_such_table`.execute(handle.db));
    expect((error as { code?: string }).code).toBe("42P01");
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it("tells how many connections are open, idle and awaited", async () => {
    const handle = open({ poolSize: 2 });
    expect(handle.poolStats?.()).toEqual({ max: 2, total: 0, idle: 0, waiting: 0 });
    await selectOne(handle);
    expect(handle.poolStats?.()).toEqual({ max: 2, total: 1, idle: 1, waiting: 0 });

    // Hold both connections, then ask for a third.
    const running = [1, 2].map(() => sql`SELECT pg_sleep(0.5)`.execute(handle.db));
    const waiting = selectOne(handle);
    // Polled rather than slept: opening the two connections takes longer on a busy machine.
    await expect
      .poll(() => handle.poolStats?.(), { timeout: 5000, interval: 10 })
      .toEqual({ max: 2, total: 2, idle: 0, waiting: 1 });
    await Promise.all([...running, waiting]);
    expect(handle.poolStats?.()).toEqual({ max: 2, total: 2, idle: 2, waiting: 0 });
  });
});
