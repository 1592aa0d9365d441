import { createPostgresDatabase, isRecoveryConflict, type RunStatement } from "@posts/adapters-postgres";
import { describe, expect, it } from "vitest";
import {
  PRIMARY_POSITION_SQL,
  PrimaryPosition,
} from "../../src/connection/standby-reads/primary-position.js";
import { Standby, type StandbyTimings } from "../../src/connection/standby-reads/standby.js";
import { parseWalPosition } from "../../src/connection/standby-reads/wal-position.js";

// The standby reads on real standbys are tested in scripts/topology (pnpm test:topology); these
// are the parts that need no server.

/** A statement runner whose answers the test gives, one call at a time. */
function controlledRunner() {
  const calls: { sql: string; answer: (rows: unknown[]) => void; fail: (error: unknown) => void }[] = [];
  const run: RunStatement = (sql) =>
    new Promise((resolve, reject) => {
      calls.push({ sql, answer: resolve, fail: reject });
    });
  return { run, calls };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("WAL positions", () => {
  it("read PostgreSQL's pg_lsn text as one number that orders as the log does", () => {
    expect(parseWalPosition("0/0")).toBe(0n);
    expect(parseWalPosition("16/B374D848")).toBe(0x16b374d848n);
    expect(parseWalPosition("1/0")! > parseWalPosition("0/FFFFFFFF")!).toBe(true);
    expect(parseWalPosition(null)).toBeUndefined();
    expect(parseWalPosition("16B374D848")).toBeUndefined();
  });
});

describe("the primary's position", () => {
  it("is one statement, sent after the turn, for every read of that turn; the reads that arrive during it share the next", async () => {
    const { run, calls } = controlledRunner();
    const position = new PrimaryPosition(run, { gatherMs: 0, maxGatherMs: 0 });
    const first = position.afterNow();
    const second = position.afterNow();
    // Not sent yet: reads of the same turn of the event loop join it.
    expect(calls).toHaveLength(0);
    await tick();
    expect(calls.map((call) => call.sql)).toEqual([PRIMARY_POSITION_SQL]);
    // Sent before these reads arrived: it cannot serve them.
    const third = position.afterNow();
    const fourth = position.afterNow();
    calls[0]?.answer([{ position: "0/100" }]);
    expect([await first, await second]).toEqual([0x100n, 0x100n]);
    await tick();
    expect(calls).toHaveLength(2);
    // A read arriving before the second statement is answered waits for a third one.
    const fifth = position.afterNow();
    calls[1]?.answer([{ position: "0/200" }]);
    expect([await third, await fourth]).toEqual([0x200n, 0x200n]);
    await tick();
    expect(calls).toHaveLength(3);
    calls[2]?.answer([{ position: "0/300" }]);
    expect(await fifth).toBe(0x300n);
    expect(position.asked).toBe(3);
    expect(position.latest).toBe(0x300n);
  });

  it("sends the next statement no sooner than gatherMs after the last answer, so that it gathers the reads of that time", async () => {
    const { run, calls } = controlledRunner();
    const position = new PrimaryPosition(run, { gatherMs: 40 });
    const first = position.afterNow();
    await tick();
    calls[0]?.answer([{ position: "0/100" }]);
    await first;
    const answeredAt = performance.now();
    const during = [position.afterNow(), position.afterNow()];
    await tick();
    expect(calls).toHaveLength(1);
    during.push(position.afterNow());
    // A loop, not vi.waitFor: the time to the second statement is measured, so every turn of the
    // event loop is looked at rather than every interval.
    while (calls.length < 2) await tick();
    expect(performance.now() - answeredAt).toBeGreaterThanOrEqual(35);
    calls[1]?.answer([{ position: "0/200" }]);
    expect(await Promise.all(during)).toEqual([0x200n, 0x200n, 0x200n]);
    expect(position.asked).toBe(2);
  });

  it("waits twice as long as its statements take to be answered, up to maxGatherMs, so that a busy primary answers fewer", async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    /** How long after a slow first answer (60 ms) the second statement is sent. */
    const waitAfterSlowAnswer = async (maxGatherMs: number) => {
      const { run, calls } = controlledRunner();
      const position = new PrimaryPosition(run, { gatherMs: 0, maxGatherMs });
      const first = position.afterNow();
      await tick();
      await sleep(60);
      calls[0]?.answer([{ position: "0/100" }]);
      await first;
      const answeredAt = performance.now();
      const second = position.afterNow();
      // Looked at every turn of the event loop, as above: the wait is what is measured.
      while (calls.length < 2) await tick();
      const waited = performance.now() - answeredAt;
      calls[1]?.answer([{ position: "0/200" }]);
      expect(await second).toBe(0x200n);
      return waited;
    };
    // Twice the 60 ms the first statement took.
    expect(await waitAfterSlowAnswer(200)).toBeGreaterThanOrEqual(115);
    expect(await waitAfterSlowAnswer(5)).toBeLessThan(40);
  });

  it("fails the reads waiting for it when the primary does not answer, and asks again for the next read", async () => {
    const { run, calls } = controlledRunner();
    const position = new PrimaryPosition(run, { gatherMs: 0, maxGatherMs: 0 });
    const failed = position.afterNow();
    await tick();
    calls[0]?.fail(new Error("connect ECONNREFUSED"));
    await expect(failed).rejects.toThrow("ECONNREFUSED");
    const next = position.afterNow();
    await tick();
    calls[1]?.answer([{ position: "0/300" }]);
    expect(await next).toBe(0x300n);
  });
});

describe("a standby", () => {
  const timings = (now: { value: number }): StandbyTimings => ({
    now: () => now.value,
    pollIntervalMs: 1,
    probeIntervalMs: 5,
    knowledgeTtlMs: 100,
  });
  const unavailable = (error: unknown) => error instanceof Error && error.message.includes("ECONNREFUSED");

  it("is trusted without a check only while what it reported is recent", async () => {
    const now = { value: 0 };
    const { run, calls } = controlledRunner();
    const standby = new Standby("s", run, timings(now), unavailable);
    const reached = standby.reach(0x50n, 1000, new AbortController().signal);
    calls[0]?.answer([{ position: "0/80" }]);
    expect(await reached).toBe(true);
    expect(standby.knows(0x80n)).toBe(true);
    expect(standby.knows(0x81n)).toBe(false);
    now.value = 101;
    expect(standby.knows(0x50n)).toBe(false);
  });

  it("answers false when it has not replayed far enough by the deadline", async () => {
    const now = { value: 0 };
    let checks = 0;
    const run: RunStatement = async () => {
      checks += 1;
      return [{ position: "0/10" }];
    };
    const standby = new Standby("s", run, { ...timings(now), now: () => performance.now() }, unavailable);
    const started = performance.now();
    expect(await standby.reach(0x20n, performance.now() + 30, new AbortController().signal)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
    expect(checks).toBeGreaterThan(1);
    standby.close();
  });

  it("leaves the rotation when it cannot be reached or is no standby, and a probe brings it back", async () => {
    const now = { value: 0 };
    let answer: () => unknown[] = () => {
      throw new Error("connect ECONNREFUSED 127.0.0.1:5433");
    };
    const standby = new Standby("s", async () => answer(), timings(now), unavailable);
    expect(await standby.reach(0x10n, 1000, new AbortController().signal)).toBe(false);
    expect(standby.up).toBe(false);
    expect(standby.reason).toContain("ECONNREFUSED");
    answer = () => [{ position: null }];
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(standby.up).toBe(false);
    expect(standby.reason).toContain("not a standby");
    answer = () => [{ position: "0/20" }];
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(standby.up).toBe(true);
    expect(standby.knows(0x20n)).toBe(true);
    standby.close();
  });

  it("stays in the rotation after a failure of one statement that is no outage", () => {
    const standby = new Standby("s", async () => [], timings({ value: 0 }), unavailable);
    expect(standby.failed(Object.assign(new Error("syntax error"), { code: "42601" }))).toBe(false);
    expect(standby.up).toBe(true);
  });
});

describe("recovery conflicts", () => {
  it("are a standby cancelling a query for replay's sake, not any serialization failure", () => {
    const conflict = Object.assign(new Error("canceling statement due to conflict with recovery"), {
      code: "40001",
    });
    const serialization = Object.assign(new Error("could not serialize access due to concurrent update"), {
      code: "40001",
    });
    expect(isRecoveryConflict(conflict)).toBe(true);
    expect(isRecoveryConflict(serialization)).toBe(false);
  });
});

describe("without standbys", () => {
  it("a database handle has no standby reads, and every statement goes to DATABASE_URL", async () => {
    const handle = createPostgresDatabase({ connectionString: "postgres://nobody@127.0.0.1:1/none" });
    expect(handle.readStatements).toBeUndefined();
    expect(handle.standbyStats).toBeUndefined();
    await handle.close();
  });
});
