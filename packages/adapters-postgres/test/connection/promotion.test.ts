import { createPostgresDatabase, type DatabaseHandle, isDatabaseUnavailable } from "@posts/adapters-postgres";
import { LocalCluster, type LocalServer, postgresBinariesForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";

const PRIMARY_PORT = 24510;
const STANDBY_PORT = 24511;

describeNeeding(
  postgresBinariesForTests(),
  "pools across a change of roles (a primary and its standby)",
  () => {
    let cluster: LocalCluster;
    let primary: LocalServer;
    let standby: LocalServer;
    const opened: DatabaseHandle[] = [];
    const open = (options: Parameters<typeof createPostgresDatabase>[0]) => {
      const handle = createPostgresDatabase(options);
      opened.push(handle);
      return handle;
    };
    const backendPid = async (handle: DatabaseHandle) =>
      (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(handle.db)).rows[0]?.pid;

    beforeAll(async () => {
      cluster = new LocalCluster();
      primary = await cluster.startPrimary("primary", PRIMARY_PORT);
      const admin = open({ connectionString: primary.url() });
      await sql`CREATE TABLE changes (id int8 PRIMARY KEY)`.execute(admin.db);
      await sql`INSERT INTO changes VALUES (1)`.execute(admin.db);
      standby = await cluster.startStandby("standby", STANDBY_PORT, primary);
    }, 60_000);

    afterEach(async () => {
      for (const handle of opened.splice(0)) await handle.close();
    });

    afterAll(async () => {
      for (const handle of opened.splice(0)) await handle.close();
      await cluster?.stopAll();
    });

    it("fails a write that reaches a standby as unavailable, and makes the next connection afresh", async () => {
      // One connection: the statement after the failed write must come from another.
      const onStandby = open({ connectionString: standby.url(), poolSize: 1 });
      const before = await backendPid(onStandby);
      const write = sql`INSERT INTO changes VALUES (2)`.execute(onStandby.db);
      await expect(write).rejects.toMatchObject({ code: "25006" });
      await expect(write.catch((error: unknown) => isDatabaseUnavailable(error))).resolves.toBe(true);
      const after = await backendPid(onStandby);
      expect(after).toBeTypeOf("number");
      expect(after).not.toBe(before);
    });

    it("takes a standby promoted to primary out of the rotation of standbys, instead of waiting for its replay", async () => {
      const reads = open({
        connectionString: primary.url(),
        readConnectionStrings: [standby.url()],
        readMaxWaitMillis: 3000,
      });
      const read = () => reads.readStatements?.("SELECT count(*)::int AS n FROM changes", []);
      await expect.poll(read, { timeout: 10_000 }).toEqual([{ n: 1 }]);
      expect(reads.standbyStats?.().standbys[0]).toMatchObject({ up: true, reads: 1 });

      await cluster.promote("standby");
      // The former primary still runs and takes this write: the promoted standby never replays it.
      await sql`INSERT INTO changes VALUES (3)`.execute(reads.db);
      const startedAt = performance.now();
      expect(await read()).toEqual([{ n: 2 }]);
      expect(performance.now() - startedAt).toBeLessThan(3000);
      expect(reads.standbyStats?.().standbys[0]?.up).toBe(false);
    });
  },
);
