import { createPostgresDatabase, isDatabaseUnavailable } from "@posts/adapters-postgres";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { describeOnEachEngine, postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

const withCode = (code: string, message = `failed with ${code}`) =>
  Object.assign(new Error(message), { code });

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => error,
  );

describe("isDatabaseUnavailable", () => {
  it.each([
    ["connection refused", withCode("ECONNREFUSED")],
    ["connection reset", withCode("ECONNRESET")],
    ["host not found", withCode("ENOTFOUND")],
    ["every address refused (AggregateError)", new AggregateError([withCode("ECONNREFUSED")], "")],
    ["statement timeout", withCode("57014", "canceling statement due to statement timeout")],
    ["administrator shutdown", withCode("57P01", "terminating connection due to administrator command")],
    ["server starting", withCode("57P03", "the database system is starting up")],
    [
      "server crashed",
      withCode("57P02", "terminating connection because of crash of another server process"),
    ],
    [
      "a write on a standby or a demoted primary",
      withCode("25006", "cannot execute INSERT in a read-only transaction"),
    ],
    [
      "a commit its synchronous standby did not confirm",
      new Error("Commit not confirmed by a synchronous standby"),
    ],
    ["too many connections", withCode("53300")],
    ["any connection exception (class 08)", withCode("08006")],
    ["connection lost mid-query", new Error("Connection terminated unexpectedly")],
    ["connect timeout", new Error("Connection terminated due to connection timeout")],
    ["pool acquire timeout", new Error("timeout exceeded when trying to connect")],
    ["query_timeout", new Error("Query read timeout")],
    ["a cause that is one", new Error("wrapped", { cause: withCode("ECONNRESET") })],
  ])("recognizes %s", (_label, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  const cyclic: Error & { cause?: unknown } = new Error("cyclic");
  cyclic.cause = cyclic;
  it.each([
    ["a unique violation", withCode("23505")],
    ["a missing table", withCode("42P01")],
    ["a value too long", withCode("22001")],
    ["an int8 beyond 2^53", new RangeError("int8 value 9007199254741002 is beyond …")],
    ["a plain error", new Error("boom")],
    ["a cause chain that loops", cyclic],
    ["undefined", undefined],
    ["a string", "ECONNREFUSED"],
  ])("does not take %s for unavailability", (_label, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});

describe("errors from a pool that cannot reach its server", () => {
  it.each([
    ["127.0.0.1", "postgres://postgres@127.0.0.1:1/postgres"],
    ["localhost (several addresses)", "postgres://postgres@localhost:1/postgres"],
  ])("are recognized for a refused connection to %s", async (_label, connectionString) => {
    const handle = createPostgresDatabase({ connectionString });
    try {
      const error = await failureOf(sql`SELECT 1`.execute(handle.db));
      expect(isDatabaseUnavailable(error)).toBe(true);
    } finally {
      await handle.close();
    }
  });
});

describeOnEachEngine("a post past the last partition on %s", (engine) => {
  const database = useTestDatabase(engine);

  it("is recognized (until the partitions task makes room), and a check constraint's violation is not", async () => {
    const { db } = database();
    await database().truncate();
    const user = await sql<{ id: number }>`
      INSERT INTO users (email, password_hash, created_at) VALUES ('far@example.com', 'h', now()) RETURNING id`.execute(
      db,
    );
    const { rows } = await sql<{ left: number }>`SELECT posts_partition_ids_left() AS left`.execute(db);
    await sql`SELECT setval('posts_id_seq', ${rows[0]?.left ?? 0})`.execute(db);
    const pastTheEnd = await failureOf(
      sql`
        INSERT INTO posts (title, content, created_at, updated_at, user_id)
        VALUES ('t', 'c', now(), now(), ${user.rows[0]?.id})`.execute(db),
    );
    expect((pastTheEnd as { code?: string }).code).toBe("23514");
    expect(isDatabaseUnavailable(pastTheEnd)).toBe(true);

    const checked = await failureOf(
      sql`
        INSERT INTO post_events (type, post_id, author_id, occurred_at)
        VALUES ('post.unknown', 1, 1, now())`.execute(db),
    );
    expect((checked as { code?: string }).code).toBe("23514");
    expect(isDatabaseUnavailable(checked)).toBe(false);
  });
});

describeNeeding(postgres, "errors from a PostgreSQL server", () => {
  const database = useTestDatabase("postgres");
  const handles: Array<{ close(): Promise<void> }> = [];
  const open = (options: Omit<Parameters<typeof createPostgresDatabase>[0], "connectionString">) => {
    const handle = createPostgresDatabase({ connectionString: serverUrl(database()), ...options });
    handles.push(handle);
    return handle;
  };
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((handle) => handle.close()));
  });
  const terminate = (applicationName: string) =>
    sql<{ terminated: boolean }>`
      SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
      WHERE application_name = ${applicationName}`.execute(database().db);

  it("recognizes a statement that ran into statement_timeout", async () => {
    const { db } = open({ statementTimeoutMillis: 100 });
    const error = await failureOf(sql`SELECT pg_sleep(2)`.execute(db));
    expect((error as { code?: string }).code).toBe("57014");
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it("recognizes a pool that had no connection to give in time", async () => {
    const { db } = open({ poolSize: 1, connectionTimeoutMillis: 200 });
    const busy = sql`SELECT pg_sleep(1)`.execute(db);
    const error = await failureOf(sql`SELECT 1`.execute(db));
    await busy;
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it("recognizes a connection the server terminated during a statement", async () => {
    const { db } = open({ applicationName: "terminated-while-busy" });
    const running = failureOf(sql`SELECT pg_sleep(10)`.execute(db));
    await expect
      .poll(async () => (await terminate("terminated-while-busy")).rows.some((row) => row.terminated), {
        timeout: 5000,
        interval: 20,
      })
      .toBe(true);
    const error = await running;
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it("survives the server terminating an idle pooled connection, tells the listener, and reconnects", async () => {
    const idleErrors: Error[] = [];
    const { db } = open({
      applicationName: "terminated-while-idle",
      onIdleClientError: (e) => idleErrors.push(e),
    });
    await sql`SELECT 1`.execute(db);
    expect((await terminate("terminated-while-idle")).rows).toEqual([{ terminated: true }]);
    await expect.poll(() => idleErrors.length, { timeout: 5000, interval: 20 }).toBeGreaterThan(0);
    expect(idleErrors).toHaveLength(1);
    expect(isDatabaseUnavailable(idleErrors[0])).toBe(true);
    expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(db)).rows).toEqual([{ one: 1 }]);
  });
});
