import { openTestDatabase, postgresForTests, type TestDatabase } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { statementsEnded } from "../src/load/harness.js";

// Needs a PostgreSQL server, as `pnpm bench` does.
describeNeeding(
  await postgresForTests(),
  "after a slice, the bench waits for the server's statements",
  () => {
    const name = `bench-drain-test-${process.pid}`;
    let database: TestDatabase;
    let admin: pg.Client;
    let server: pg.Client;
    beforeAll(async () => {
      database = await openTestDatabase("postgres", { migrate: false });
      admin = new pg.Client({ connectionString: database.connectionString });
      server = new pg.Client({ connectionString: database.connectionString, application_name: name });
      await admin.connect();
      await server.connect();
    });
    afterAll(async () => {
      await server?.end();
      await admin?.end();
      await database?.close();
    });

    it("returns once a statement sent before the slice ended has ended, and says it waited", async () => {
      const said: string[] = [];
      const started = performance.now();
      const sleeping = server.query("select pg_sleep(1.5)");
      await new Promise((resolve) => setTimeout(resolve, 100));
      await statementsEnded(admin, name, (message) => said.push(message));
      expect(performance.now() - started).toBeGreaterThan(1400);
      await sleeping;
      expect(said).toEqual([expect.stringMatching(/ran on for 1\.\d s after its slice/)]);
      // Nothing running: returns at once, and says nothing.
      await statementsEnded(admin, name, (message) => said.push(message));
      expect(said).toHaveLength(1);
    });

    it("cancels what is still running past the drain time", async () => {
      const said: string[] = [];
      const sleeping = server.query("select pg_sleep(30)").then(
        () => "ended",
        (error: { code?: string }) => error.code,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      await statementsEnded(admin, name, (message) => said.push(message), 300);
      expect(await sleeping).toBe("57014");
      expect(said).toEqual([expect.stringMatching(/still running 0\.3 s after its slice were cancelled/)]);
    });
  },
);
