import { createPostgresDatabase, type DatabaseHandle, type RunStatement } from "@posts/adapters-postgres";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { attachTopology, clientOf, type ServerName, sql, type Topology } from "../topology.js";

/**
 * The standby reads of the PostgreSQL adapter on real servers: a primary and two streaming
 * standbys, reached directly. Every write below is acknowledged (its COMMIT answered) before
 * the read that checks it starts, so a read that answers older data breaks the promise.
 */
const topology: Topology = attachTopology(inject("topologyDir"));
const STANDBYS = ["standby1", "standby2"] as const;

let primary: pg.Client;
const handles: DatabaseHandle[] = [];

/** A database handle of the adapter reading from `standbys` (both by default). */
function open(standbys: readonly ServerName[] = STANDBYS, maxWaitMs = 50): DatabaseHandle {
  const handle = createPostgresDatabase({
    connectionString: topology.directUrl("primary"),
    readConnectionStrings: standbys.map((standby) => topology.directUrl(standby)),
    readMaxWaitMillis: maxWaitMs,
    poolSize: 8,
    applicationName: "standby-reads-test",
  });
  handles.push(handle);
  return handle;
}

function readsOf(handle: DatabaseHandle): RunStatement {
  if (handle.readStatements === undefined) throw new Error("no standby reads on this handle");
  return handle.readStatements;
}

function statsOf(handle: DatabaseHandle) {
  const stats = handle.standbyStats?.();
  if (stats === undefined) throw new Error("no standby stats on this handle");
  return stats;
}

/** Writes `value` for `id` on the primary; resolves once the commit was acknowledged. */
async function write(id: number, value: number): Promise<void> {
  await primary.query(
    "INSERT INTO reader_probe (id, value) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value",
    [id, value],
  );
}

const READ = "SELECT value FROM reader_probe WHERE id = $1";

async function read(run: RunStatement, id: number): Promise<number | undefined> {
  const rows = (await run(READ, [id])) as { value: number }[];
  return rows[0]?.value;
}

async function onStandby(standby: ServerName, text: string): Promise<void> {
  await sql(topology.directUrl(standby), text);
}

/**
 * Pauses replay on `standbys` and waits until it has stopped: a pause takes effect at the next
 * WAL record, so one is written and the standbys are asked until they say "paused".
 */
async function pauseReplay(...standbys: ServerName[]): Promise<void> {
  for (const standby of standbys) await onStandby(standby, "SELECT pg_wal_replay_pause()");
  await write(0, 0);
  for (const standby of standbys) {
    await expect
      .poll(
        async () =>
          (
            await sql<{ state: string }>(
              topology.directUrl(standby),
              "SELECT pg_get_wal_replay_pause_state() AS state",
            )
          )[0]?.state,
        { message: `${standby} did not pause its replay`, timeout: 10_000, interval: 20 },
      )
      .toBe("paused");
  }
}

beforeAll(async () => {
  primary = await clientOf(topology.directUrl("primary"));
  await primary.query("CREATE TABLE IF NOT EXISTS reader_probe (id int PRIMARY KEY, value int NOT NULL)");
  await topology.waitForReplay();
});

afterEach(async () => {
  for (const handle of handles.splice(0)) await handle.close();
});

afterAll(async () => {
  await primary?.end();
});

describe("reads on standbys", () => {
  it("never answer older data than a write acknowledged before the read, and standbys answer them", async () => {
    const handle = open();
    const run = readsOf(handle);
    for (let value = 1; value <= 300; value += 1) {
      await write(1, value);
      expect(await read(run, 1)).toBe(value);
    }
    const stats = statsOf(handle);
    const onStandbys = stats.standbys.reduce((sum, standby) => sum + standby.reads, 0);
    // Streaming replay on one machine usually takes a few ms: most reads are a standby's (the
    // margin is for a machine busy with other work).
    expect(onStandbys).toBeGreaterThan(150);
    expect(stats.standbys.every((standby) => standby.up)).toBe(true);
  });

  it("learn the primary's position once for a batch of reads that arrive together", async () => {
    const handle = open();
    const run = readsOf(handle);
    await write(2, 1);
    const before = statsOf(handle).positionQueries;
    const values = await Promise.all(Array.from({ length: 64 }, () => read(run, 2)));
    expect(values).toEqual(Array.from({ length: 64 }, () => 1));
    // The first read sends one; every read arriving while it is in flight shares the next one.
    expect(statsOf(handle).positionQueries - before).toBeLessThanOrEqual(2);
  });

  it("ask the primary's position on the listening session, and go on without an error while it is lost", async () => {
    const handle = open();
    const run = readsOf(handle);
    /** The handle's listening session on the primary, with the statement it ran last. */
    const session = async () =>
      (
        await primary.query<{ pid: number; query: string }>(
          "SELECT pid, query FROM pg_stat_activity WHERE application_name = 'standby-reads-test (listen)'",
        )
      ).rows;
    const asksPosition = (rows: { query: string }[]) =>
      rows.length === 1 && rows[0]?.query.includes("pg_current_wal_flush_lsn()") === true;
    let value = 0;
    const readBack = async () => {
      value += 1;
      await write(8, value);
      expect(await read(run, 8)).toBe(value);
    };
    // The first read finds no session open (its position comes from the pool) and opens it.
    // Not a poll: each turn is a write read back, whose check must fail the test, not be retried.
    const deadline = Date.now() + 5000;
    while (!asksPosition(await session())) {
      if (Date.now() > deadline) throw new Error("the listening session asked no position within 5 s");
      await readBack();
    }
    const [lost] = await session();
    await primary.query("SELECT pg_terminate_backend($1)", [lost?.pid]);
    // Reads go on while the session is lost (their position from the pool), each one checked;
    // then the session reopens, its first attempt 100 ms after the loss, which a hundred reads
    // may take less than: reads go on until the new session asks the position, within 5 s.
    for (let i = 0; i < 100; i += 1) await readBack();
    const reopenDeadline = Date.now() + 5000;
    while (!asksPosition(await session())) {
      if (Date.now() > reopenDeadline) throw new Error("the listening session did not reopen within 5 s");
      await readBack();
    }
    const reopened = await session();
    expect(reopened[0]?.pid).not.toBe(lost?.pid);
  });

  it("with replay paused on both standbys, answer from the primary after the wait, never older", async () => {
    const handle = open(STANDBYS, 50);
    const run = readsOf(handle);
    await write(3, 1);
    expect(await read(run, 3)).toBe(1);
    await pauseReplay(...STANDBYS);
    try {
      for (let value = 2; value <= 6; value += 1) {
        await write(3, value);
        const started = performance.now();
        expect(await read(run, 3)).toBe(value);
        expect(performance.now() - started).toBeGreaterThanOrEqual(45);
      }
      expect(statsOf(handle).fallbacks.not_caught_up).toBe(5);
    } finally {
      for (const standby of STANDBYS) await onStandby(standby, "SELECT pg_wal_replay_resume()");
    }
    await topology.waitForReplay();
    await write(3, 7);
    expect(await read(run, 3)).toBe(7);
  });

  it("with replay paused on one standby, answer from the other one", async () => {
    const handle = open();
    const run = readsOf(handle);
    await pauseReplay("standby1");
    try {
      for (let value = 1; value <= 40; value += 1) {
        await write(4, value);
        expect(await read(run, 4)).toBe(value);
      }
      const [paused, other] = statsOf(handle).standbys;
      expect(other?.reads).toBeGreaterThanOrEqual(20);
      // The paused one answers only what it had replayed before each write: nothing here.
      expect(paused?.reads).toBe(0);
    } finally {
      await onStandby("standby1", "SELECT pg_wal_replay_resume()");
    }
  });

  it("with replay delayed by 200 ms on one standby, never answer older data", async () => {
    await onStandby("standby2", "ALTER SYSTEM SET recovery_min_apply_delay = '200ms'");
    await onStandby("standby2", "SELECT pg_reload_conf()");
    try {
      const handle = open();
      const run = readsOf(handle);
      for (let value = 1; value <= 100; value += 1) {
        await write(5, value);
        expect(await read(run, 5)).toBe(value);
      }
      const [prompt, delayed] = statsOf(handle).standbys;
      expect(prompt?.reads).toBeGreaterThanOrEqual(50);
      // Only reads made before the delay took effect (the reload is asynchronous) can be its.
      expect(delayed?.reads ?? 0).toBeLessThan(10);
    } finally {
      await onStandby("standby2", "ALTER SYSTEM RESET recovery_min_apply_delay");
      await onStandby("standby2", "SELECT pg_reload_conf()");
    }
  });

  it("answer a read cancelled by a recovery conflict from the primary", async () => {
    await onStandby("standby1", "ALTER SYSTEM SET max_standby_streaming_delay = 0");
    await onStandby("standby1", "SELECT pg_reload_conf()");
    try {
      const handle = open(["standby1"]);
      const run = readsOf(handle);
      await write(6, 1);
      await topology.waitForReplay();
      // A read long enough to still hold its lock when replay needs an exclusive one.
      const slow = run("SELECT value, pg_sleep(1.5) IS NULL AS slept FROM reader_probe WHERE id = $1", [6]);
      await new Promise((resolve) => setTimeout(resolve, 400));
      await primary.query("BEGIN");
      await primary.query("LOCK TABLE reader_probe IN ACCESS EXCLUSIVE MODE");
      await primary.query("COMMIT");
      const rows = (await slow) as { value: number }[];
      expect(rows[0]?.value).toBe(1);
      const stats = statsOf(handle);
      expect(stats.fallbacks.recovery_conflict).toBe(1);
      // A conflict is about one query: the standby stays in the rotation.
      expect(stats.standbys[0]?.up).toBe(true);
    } finally {
      await onStandby("standby1", "ALTER SYSTEM RESET max_standby_streaming_delay");
      await onStandby("standby1", "SELECT pg_reload_conf()");
    }
  });
});

describe("a standby stopped under load", () => {
  it("sends its reads to the other standby or the primary, fails none, and rejoins when it starts again", async () => {
    const handle = createPostgresDatabase({
      connectionString: topology.directUrl("primary"),
      readConnectionStrings: STANDBYS.map((standby) => topology.directUrl(standby)),
      readMaxWaitMillis: 50,
      poolSize: 8,
    });
    handles.push(handle);
    const run = readsOf(handle);
    const failures: unknown[] = [];
    const older: string[] = [];
    let reads = 0;
    let running = true;
    // Eight clients, each writing its own row and reading it back, until told to stop.
    const clients = Array.from({ length: 8 }, async (_, client) => {
      const id = 100 + client;
      const own = await clientOf(topology.directUrl("primary"));
      try {
        for (let value = 1; running; value += 1) {
          await own.query(
            "INSERT INTO reader_probe (id, value) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value",
            [id, value],
          );
          try {
            const seen = await read(run, id);
            reads += 1;
            if (seen !== value) older.push(`row ${id}: wrote ${value}, read ${seen}`);
          } catch (error) {
            failures.push(error);
          }
        }
      } finally {
        await own.end();
      }
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await topology.stopServer("standby1");
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(statsOf(handle).standbys[0]?.up).toBe(false);
      const whileDown = statsOf(handle).standbys[1]?.reads ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(statsOf(handle).standbys[1]?.reads ?? 0).toBeGreaterThan(whileDown);
      await topology.startServer("standby1");
      await expect.poll(() => statsOf(handle).standbys[0]?.up, { timeout: 10_000, interval: 100 }).toBe(true);
      const rejoined = statsOf(handle).standbys[0]?.reads ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(statsOf(handle).standbys[0]?.reads ?? 0).toBeGreaterThan(rejoined);
    } finally {
      running = false;
      await Promise.all(clients);
      if (topology.processes.pidOf("standby1") === undefined) await topology.startServer("standby1");
    }
    expect(failures).toEqual([]);
    expect(older).toEqual([]);
    expect(reads).toBeGreaterThan(100);
  });
});

describe("the primary stopped", () => {
  it("fails writes, answers reads from a standby, and recovers by itself when it returns", async () => {
    const handle = open();
    const run = readsOf(handle);
    await write(7, 1);
    await topology.waitForReplay();
    await primary.end();
    await topology.stopServer("primary");
    try {
      expect(await read(run, 7)).toBe(1);
      expect(statsOf(handle).readsWithoutPrimary).toBeGreaterThanOrEqual(1);
      await expect(sql(topology.directUrl("primary"), "SELECT 1")).rejects.toThrow();
    } finally {
      await topology.startServer("primary");
      primary = await clientOf(topology.directUrl("primary"));
    }
    await write(7, 2);
    expect(await read(run, 7)).toBe(2);
  });
});
