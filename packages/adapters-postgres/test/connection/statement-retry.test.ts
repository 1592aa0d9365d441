import { connect, createServer, type Server, type Socket } from "node:net";
import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { poolForKysely } from "../../src/connection/pool-for-kysely.js";
import { postgres, serverUrl, useTestDatabase } from "../use-test-database.js";

/** The proxy in front of the test server, on a port of this file's own. */
const PROXY_PORT = 24611;

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => error as { code?: string; message: string },
  );

describeNeeding(postgres, "a statement that surely changed nothing, sent again (retryWithinMillis)", () => {
  const database = useTestDatabase("postgres");
  const pools: pg.Pool[] = [];
  const pool = (connectionString = serverUrl(database())) => {
    const made = new pg.Pool({ connectionString, max: 1 });
    made.on("error", () => {});
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
    const { run } = poolForKysely(pool(proxyUrl()), 0, undefined, undefined, 5000);
    refusing = 3;
    opened = 0;
    await run("INSERT INTO changes VALUES (1)", []);
    expect(opened).toBe(4);
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
    const { run } = poolForKysely(readOnlyFirst, 0, undefined, undefined, 5000);
    await run("INSERT INTO changes VALUES (1)", []);
    expect(connections).toBe(2);
    expect(await rows()).toBe(1);
  });

  it("never sends again a write whose connection was lost after it was sent: its commit may have happened", async () => {
    const { run } = poolForKysely(pool(), 0, undefined, undefined, 5000);
    const write = failureOf(run("INSERT INTO changes SELECT 1 FROM pg_sleep(1)", []));
    const admin = pool();
    await expect
      .poll(
        async () =>
          (
            await admin.query(
              "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE query LIKE 'INSERT INTO changes SELECT%' AND pid <> pg_backend_pid()",
            )
          ).rowCount,
        { timeout: 900, interval: 50 },
      )
      .toBe(1);
    expect(await write).toMatchObject({ code: "57P01" });
    // Sent again, it would have slept a second more and inserted its row.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await rows()).toBe(0);
  });
});
