import { embeddedPublisherLease, PostgresPublisherLease } from "@posts/adapters-postgres";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { postgres, useTestDatabase } from "../use-test-database.js";

/** Polls `condition` until it holds; fails naming `what` after `timeoutMs`. */
const until = (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) =>
  expect
    .poll(condition, { interval: 20, timeout: timeoutMs, message: `timed out waiting until ${what}` })
    .toBe(true);

describeNeeding(postgres, "PostgresPublisherLease", () => {
  const database = useTestDatabase("postgres");
  const leases: PostgresPublisherLease[] = [];
  const lease = (applicationName: string) => {
    const url = database().connectionString;
    if (url === undefined) throw new Error("these tests need a PostgreSQL server (DATABASE_URL)");
    const created = new PostgresPublisherLease({ connectionString: url, applicationName, heartbeatMs: 200 });
    leases.push(created);
    return created;
  };
  const backendOf = async (applicationName: string) => {
    const { rows } = await sql<{ pid: number }>`
      SELECT pid FROM pg_stat_activity WHERE application_name = ${applicationName} AND datname = current_database()
    `.execute(database().db);
    return rows.map((row) => row.pid);
  };
  afterEach(async () => {
    await Promise.all(leases.splice(0).map((created) => created.close()));
  });

  it("is held by one session at a time, and free again once released", async () => {
    const first = lease("lease-a");
    const second = lease("lease-b");
    const held = await first.acquire();
    expect(held).toBeDefined();
    expect(await second.acquire()).toBeUndefined();
    expect(await second.acquire()).toBeUndefined(); // waiting reuses its one connection
    expect(await backendOf("lease-b")).toHaveLength(1);

    await held?.release();
    expect(held?.lost.aborted).toBe(true);
    const taken = await second.acquire();
    expect(taken).toBeDefined();
    expect(await first.acquire()).toBeUndefined();
    await taken?.release();
  });

  it("is lost by its holder and taken by another when the holder's connection is killed", async () => {
    const first = lease("lease-c");
    const second = lease("lease-d");
    const held = await first.acquire();
    expect(held).toBeDefined();
    expect(await second.acquire()).toBeUndefined();

    const [pid] = await backendOf("lease-c");
    await sql`SELECT pg_terminate_backend(${pid})`.execute(database().db);
    await until(() => held?.lost.aborted === true, "the holder learns it lost the lease");
    const taken = await second.acquire();
    expect(taken).toBeDefined();
    expect(taken?.lost.aborted).toBe(false);
    await taken?.release();
  });
});

describe("embeddedPublisherLease", () => {
  it("is always held, by the one process an embedded database has", async () => {
    const held = await embeddedPublisherLease.acquire();
    expect(held?.lost.aborted).toBe(false);
    await held?.release();
    expect(await embeddedPublisherLease.acquire()).toBeDefined();
  });
});
