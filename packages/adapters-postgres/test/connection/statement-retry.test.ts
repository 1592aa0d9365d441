import { connect, createServer, type Server, type Socket } from "node:net";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { isProvedUncommitted, poolForKysely } from "../../src/connection/pool-for-kysely.js";
import { postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

/** The proxy in front of the test server, on a port of this file's own. */
const PROXY_PORT = 24611;

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => error as { code?: string; severity?: string; message: string },
  );

describeNeeding(postgres, "a statement that surely changed nothing, sent again (retryWithinMillis)", () => {
  const database = useTestDatabase("postgres");
  const pools: pg.Pool[] = [];
  const pool = (connectionString = serverUrl(database())) => {
    const made = new pg.Pool({ connectionString, max: 1 });
    made.on("error", () => {});
    // A connection the server or the network cuts while checked out reports it here too.
    made.on("connect", (client) => client.on("error", () => {}));
    pools.push(made);
    return made;
  };
  const rows = async () => Number((await pool().query("SELECT count(*) AS n FROM changes")).rows[0]?.n);

  // A proxy that cuts the next `refusing` connections as soon as they open (as HAProxy does
  // while no server is up for its endpoint), and relays the others to the test server.
  let proxy: Server | undefined;
  let refusing = 0;
  let opened = 0;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
  };
  const proxyUrl = () => {
    const url = new URL(serverUrl(database()));
    url.host = `127.0.0.1:${PROXY_PORT}`;
    return url.toString();
  };
  beforeAll(async () => {
    proxy = createServer((client) => {
      opened += 1;
      track(client);
      if (refusing > 0) {
        refusing -= 1;
        client.destroy();
        return;
      }
      const target = new URL(serverUrl(database()));
      const server = connect(Number(target.port || 5432), target.hostname);
      track(server);
      client.pipe(server).pipe(client);
      client.on("close", () => server.destroy());
      server.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy?.listen(PROXY_PORT, "127.0.0.1", resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => (proxy === undefined ? resolve(undefined) : proxy.close(resolve)));
  });

  beforeAll(async () => {
    await pool().query("CREATE TABLE IF NOT EXISTS changes (n int)");
  });
  afterEach(async () => {
    await pool().query("TRUNCATE changes");
    await Promise.all(pools.splice(0).map((each) => each.end()));
    refusing = 0;
  });

  it("sends a statement again when its connection is cut while it opens, until one opens", async () => {
    const { run, resent } = poolForKysely(pool(proxyUrl()), 0, undefined, undefined, 5000);
    refusing = 3;
    opened = 0;
    await run("INSERT INTO changes VALUES (1)", []);
    expect(opened).toBe(4);
    expect(resent()).toEqual({ "no-connection": 3, "read-only": 0, uncommitted: 0 });
    expect(await rows()).toBe(1);

    // Without retryWithinMillis, the first cut is the caller's.
    const { run: once } = poolForKysely(pool(proxyUrl()), 0);
    refusing = 1;
    expect(await failureOf(once("INSERT INTO changes VALUES (2)", []))).toMatchObject({
      message: expect.stringMatching(/Connection terminated/),
    });
    expect(await rows()).toBe(1);
  });

  it("gives up once retryWithinMillis has passed since the first failure", async () => {
    const { run } = poolForKysely(pool(proxyUrl()), 0, undefined, undefined, 400);
    refusing = 1_000;
    const started = performance.now();
    expect(await failureOf(run("SELECT 1", []))).toMatchObject({
      message: expect.stringMatching(/Connection terminated/),
    });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(300);
    expect(elapsed).toBeLessThan(2000);
  });

  it("sends a write that a server taking no writes refused (25006) again on a new connection, and it is made once", async () => {
    const readOnlyFirst = pool();
    let connections = 0;
    // The first connection reaches "a standby": pg runs this before the statement, in order.
    readOnlyFirst.on("connect", (client) => {
      connections += 1;
      if (connections === 1) void client.query("SET default_transaction_read_only = on");
    });
    const { run, resent } = poolForKysely(readOnlyFirst, 0, undefined, undefined, 5000);
    await run("INSERT INTO changes VALUES (1)", []);
    expect(connections).toBe(2);
    expect(resent()).toEqual({ "no-connection": 0, "read-only": 1, uncommitted: 0 });
    expect(await rows()).toBe(1);
  });

  // Waits until one other session runs a statement that starts with `start`; with `terminate`,
  // ends that session then (pg_terminate_backend: SIGTERM, as a fast shutdown sends every backend).
  const whenRunning = async (start: string, terminate = false) => {
    const admin = pool();
    const answer = terminate ? "pg_terminate_backend(pid)" : "1";
    await expect
      .poll(
        async () =>
          (
            await admin.query(
              `SELECT ${answer} FROM pg_stat_activity WHERE starts_with(query, $1) AND pid <> pg_backend_pid()`,
              [start],
            )
          ).rowCount,
        { timeout: 900, interval: 20 },
      )
      .toBe(1);
  };
  const terminateWhenRunning = (start: string) => whenRunning(start, true);

  it("sends again a write the server ended the session of (FATAL 57P01) before its CommandComplete, in either protocol, and it is made once", async () => {
    const { run, resent } = poolForKysely(pool(), 0, undefined, undefined, 5000);
    const simple = run("INSERT INTO changes SELECT 1 FROM pg_sleep(1)", []);
    await terminateWhenRunning("INSERT INTO changes SELECT 1");
    await simple;
    expect(resent()).toEqual({ "no-connection": 0, "read-only": 0, uncommitted: 1 });
    expect(await rows()).toBe(1);

    // With parameters pg uses the extended protocol, whose commit comes at the Sync.
    const extended = run("INSERT INTO changes SELECT $1::int FROM pg_sleep(1)", [2]);
    await terminateWhenRunning("INSERT INTO changes SELECT $1");
    await extended;
    expect(resent()).toEqual({ "no-connection": 0, "read-only": 0, uncommitted: 2 });
    expect(await rows()).toBe(2);

    // Without retryWithinMillis, the failure is the caller's, and it says that nothing changed.
    const { run: once } = poolForKysely(pool(), 0);
    const failed = failureOf(once("INSERT INTO changes SELECT 3 FROM pg_sleep(1)", []));
    await terminateWhenRunning("INSERT INTO changes SELECT 3");
    const failure = await failed;
    expect(failure).toMatchObject({ code: "57P01", severity: "FATAL" });
    expect(isProvedUncommitted(failure)).toBe(true);
    expect(await rows()).toBe(2);
  });

  it.each([
    [
      "a text whose CommandComplete came before the FATAL: an earlier statement of it may have committed",
      "BEGIN; INSERT INTO changes VALUES (1); COMMIT; SELECT pg_sleep(1)",
    ],
    [
      "a DO block outside a transaction: it may have committed midway, before any CommandComplete",
      "DO $$ BEGIN INSERT INTO changes VALUES (1); COMMIT; PERFORM pg_sleep(1); END $$",
    ],
  ])("never sends again %s", async (_what, text) => {
    const { run, resent } = poolForKysely(pool(), 0, undefined, undefined, 5000);
    const write = failureOf(run(text, []));
    // Once its row is committed, while it sleeps.
    await expect.poll(rows, { timeout: 900, interval: 20 }).toBe(1);
    await terminateWhenRunning(text.slice(0, 30));
    const failure = await write;
    expect(failure).toMatchObject({ code: "57P01" });
    expect(isProvedUncommitted(failure)).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    // It committed its row; sent again, it would have inserted a second one.
    expect(await rows()).toBe(1);
    expect(resent()).toEqual({ "no-connection": 0, "read-only": 0, uncommitted: 0 });
  });

  it("never sends again a write whose connection was lost after it was sent, without a word from the server: its commit may have happened", async () => {
    const { run, resent } = poolForKysely(pool(proxyUrl()), 0, undefined, undefined, 5000);
    const write = failureOf(run("INSERT INTO changes SELECT 1 FROM pg_sleep(1)", []));
    await whenRunning("INSERT INTO changes SELECT 1");
    // The network cuts the connection: the server goes on, and commits.
    for (const socket of sockets) socket.destroy();
    expect(await write).toMatchObject({ message: expect.stringMatching(/Connection terminated/) });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // It committed once; sent again, it would have inserted a second row.
    expect(await rows()).toBe(1);
    expect(resent()).toEqual({ "no-connection": 0, "read-only": 0, uncommitted: 0 });
  });

  it("ends a Kysely transaction the server ended before its COMMIT completed with that error, proved uncommitted, and nothing of it stays", async () => {
    const { forKysely } = poolForKysely(pool(), 0);
    // Its pool is ended after the test with the others.
    const db = new Kysely<{ changes: { n: number } }>({ dialect: new PostgresDialect({ pool: forKysely }) });
    const transaction = failureOf(
      db.transaction().execute(async (trx) => {
        await sql`INSERT INTO changes VALUES (1)`.execute(trx);
        await sql`SELECT pg_sleep(1) AS in_transaction`.execute(trx);
      }),
    );
    await terminateWhenRunning("SELECT pg_sleep(1) AS in_transaction");
    const failure = await transaction;
    // The error of the statement, not that of Kysely's ROLLBACK on the dead connection.
    expect(failure).toMatchObject({ code: "57P01" });
    expect(isProvedUncommitted(failure)).toBe(true);
    expect(await rows()).toBe(0);
  });
});
