import { PostgresAttemptCounter } from "@posts/adapters-postgres";
import { type KyselyPlugin, sql } from "kysely";
import { expect, it } from "vitest";
import { describeOnEachEngine, serverOnly, useTestDatabase } from "../use-test-database.js";

const NOW = new Date("2026-11-22T10:15:30.123Z");
const MINUTE = 60_000;

/** Counts the statements Kysely runs through the instance it is added to. */
function statementCounter(): { plugin: KyselyPlugin; count: () => number } {
  let statements = 0;
  return {
    plugin: {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        statements++;
        return args.result;
      },
    },
    count: () => statements,
  };
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

// The behaviour is the contract suite's (contract.test.ts); these are the adapter's own promises.
describeOnEachEngine("PostgresAttemptCounter on %s", (engine) => {
  const database = useTestDatabase(engine);
  const onServer = serverOnly(engine);

  it("reads the two keys of a login in one statement, and increments in one", async () => {
    const statements = statementCounter();
    const counter = new PostgresAttemptCounter(database().db.withPlugin(statements.plugin));
    await counter.increment("login:email:one", MINUTE, NOW);
    expect(statements.count()).toBe(1);
    const counts = await counter.read(["login:email:one", "login:address:127.0.0.1"], NOW);
    expect(statements.count()).toBe(2);
    expect([...counts.keys()]).toEqual(["login:email:one"]);
  });

  it("sweeps ended windows through the index on reset_at, not by reading the whole table", async () => {
    const plan = await database()
      .db.transaction()
      .execute(async (trx) => {
        // The table is tiny, so the planner would rightly scan it: ask whether the index can serve.
        await sql`SET LOCAL enable_seqscan = off`.execute(trx);
        return sql<{ "QUERY PLAN": string }>`
          EXPLAIN DELETE FROM attempt_counts WHERE reset_at <= ${NOW.toISOString()}::timestamptz`.execute(
          trx,
        );
      });
    expect(plan.rows.map((row) => row["QUERY PLAN"]).join("\n")).toContain("attempt_counts_reset_at_idx");
  });

  onServer.it(
    "costs a login one round trip on a PostgreSQL server: the read of two keys among many, against SELECT 1",
    async () => {
      const { db, attempts } = database();
      // Many live windows, as under an attack from many addresses: the read must not scan them.
      await sql`
        INSERT INTO attempt_counts (key, count, reset_at)
        SELECT 'login:address:10.' || n, 1, now() + interval '1 hour' FROM generate_series(1, 20000) AS n
        ON CONFLICT (key) DO NOTHING`.execute(db);
      // As autovacuum would, so that the planner knows the table is no longer tiny.
      await sql`ANALYZE attempt_counts`.execute(db);
      const keys = ["login:address:10.1234", "login:email:cost"];
      const timed = async (work: () => Promise<unknown>) => {
        const started = performance.now();
        await work();
        return performance.now() - started;
      };
      const read = () => attempts.read(keys, new Date());
      const roundTrip = () => db.selectNoFrom((eb) => eb.lit(1).as("one")).execute();
      // Warm up: connections opened, statement plans cached.
      for (let i = 0; i < 50; i++) await Promise.all([read(), roundTrip()]);
      // Interleaved, so that a busy machine slows both alike.
      const reads: number[] = [];
      const roundTrips: number[] = [];
      for (let i = 0; i < 300; i++) {
        reads.push(await timed(read));
        roundTrips.push(await timed(roundTrip));
      }
      // About a tenth of a millisecond each on an idle machine; the medians ignore pauses.
      expect(median(reads)).toBeLessThan(1.5 * median(roundTrips) + 0.1);
      expect(median(reads)).toBeLessThan(5);
    },
  );
});
