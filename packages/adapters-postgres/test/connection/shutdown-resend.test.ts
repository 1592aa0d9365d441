import { LocalCluster, type LocalServer, postgresBinariesForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { poolForKysely } from "../../src/connection/pool-for-kysely.js";

/** The server of this file's own, which the test stops and starts again. */
const PORT = 24612;

describeNeeding(postgresBinariesForTests(), "a write the server's fast shutdown cut short", () => {
  let cluster: LocalCluster;
  let server: LocalServer;

  beforeAll(async () => {
    cluster = new LocalCluster();
    server = await cluster.startPrimary("primary", PORT);
    await cluster.query("primary", "CREATE TABLE changes (n int)");
  }, 60_000);

  afterAll(async () => {
    await cluster?.stopAll();
  });

  it("is sent again once the server is back (pg_ctl stop -m fast, then start), and made once", async () => {
    const pool = new pg.Pool({ connectionString: server.url(), max: 2 });
    pool.on("error", () => {});
    // The shutdown cuts the checked-out connection, which reports it here too.
    pool.on("connect", (client) => client.on("error", () => {}));
    const { run, resent } = poolForKysely(pool, 0, undefined, undefined, 20_000);
    try {
      // With a parameter, through the extended protocol, as the service's statements go.
      const write = run("INSERT INTO changes SELECT $1::int FROM pg_sleep(2)", [1]);
      await vi.waitFor(
        async () =>
          expect(
            await cluster.query(
              "primary",
              "SELECT pid FROM pg_stat_activity WHERE starts_with(query, 'INSERT INTO changes')",
            ),
          ).toHaveLength(1),
        { timeout: 2_000, interval: 20 },
      );
      // What `pg_ctl stop -m fast` does: SIGINT to the postmaster, which ends every session
      // (SIGTERM: FATAL 57P01) and waits for them.
      await cluster.stop("primary", "fast");
      await cluster.restart("primary");
      await write;
      // Sent again once as cut short; then as often as the server, stopping and starting, refused it.
      expect(resent().uncommitted).toBe(1);
      expect(await cluster.query("primary", "SELECT n FROM changes")).toEqual([{ n: 1 }]);
    } finally {
      await pool.end();
    }
  }, 30_000);
});
