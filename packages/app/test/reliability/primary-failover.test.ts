import { setTimeout as sleep } from "node:timers/promises";
import { LocalCluster, type LocalServer, postgresBinariesForTests } from "@posts/adapters-postgres/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { jsonRequest, type SignedUpUser, signUp, type TimedResponse, timedFetch } from "./api-client.js";
import { type InProcessService, startInProcessService } from "./in-process-service.js";
import { TcpProxy } from "./tcp-proxy.js";

// Two nodes: node1 the primary with node2 its synchronous standby. The service's DATABASE_URL is
// a TCP proxy that moves to the new primary, as HAProxy's write endpoint does under Patroni.
const NODE1_PORT = 24520;
const NODE2_PORT = 24521;
const DATABASE = "posts";
const CONNECT_TIMEOUT_MS = 1000;
const STATEMENT_TIMEOUT_MS = 1000;
// The bound of the promise: writes come back within 30 s of the loss, with no restart.
const WRITES_BACK_WITHIN_MS = 30_000;

describeNeeding(postgresBinariesForTests(), "the service when its primary fails over to its standby", () => {
  let cluster: LocalCluster;
  let node1: LocalServer;
  let node2: LocalServer;
  let proxy: TcpProxy;
  let service: InProcessService;
  let writer: SignedUpUser;

  /** Runs one statement on `server` (database posts unless told) on a connection of its own. */
  const on = <Row>(server: LocalServer, text: string, values: unknown[] = [], database = DATABASE) =>
    cluster.query<Row>(server.name, text, values, database);
  const setSynchronousStandby = async (name: string) => {
    await on(node1, `ALTER SYSTEM SET synchronous_standby_names = '${name}'`);
    await on(node1, "SELECT pg_reload_conf()");
  };
  const create = (title: string, idempotencyKey?: string) => {
    const request = jsonRequest("POST", { title, content: "c" }, writer.token);
    if (idempotencyKey !== undefined)
      (request.headers as Record<string, string>)["idempotency-key"] = idempotencyKey;
    return timedFetch(`${service.url}/api/v1/posts`, request);
  };
  const metric = async (name: string) => {
    const text = (await timedFetch(`${service.url}/metrics`)).body;
    const line = text.split("\n").find((each) => each.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(" ")[1]);
  };
  const expectUnavailable = (response: TimedResponse) => {
    expect(response.status, response.body).toBe(503);
    expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
  };

  beforeAll(async () => {
    cluster = new LocalCluster();
    node1 = await cluster.startPrimary("node1", NODE1_PORT);
    await on(node1, `CREATE DATABASE ${DATABASE}`, [], "postgres");
    node2 = await cluster.startStandby("node2", NODE2_PORT, node1);
    // Strict synchronous replication from here on: every commit waits for node2.
    await setSynchronousStandby("node2");
    await vi.waitFor(
      async () => {
        const rows = await on<{ state: string }>(
          node1,
          "SELECT sync_state AS state FROM pg_stat_replication",
        );
        expect(rows).toEqual([{ state: "sync" }]);
      },
      { timeout: 10_000, interval: 100 },
    );
    proxy = await TcpProxy.start({ host: "127.0.0.1", port: node1.port });
    service = await startInProcessService({
      DATABASE_URL: proxy.proxied(node1.url(DATABASE)),
      DB_POOL_SIZE: "4",
      DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
    });
    writer = await signUp(service.url);
  }, 90_000);

  afterAll(async () => {
    await service?.close();
    await proxy?.close();
    await cluster?.stopAll();
  });

  it("answers 503 with Retry-After, never 201, to a creation whose wait for the synchronous standby is cancelled; its retry creates nothing more", async () => {
    await setSynchronousStandby("ghost");
    const created = create("never acknowledged", "cancelled-wait");
    const waiting = () =>
      on<{ pid: number }>(
        node1,
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND wait_event = 'SyncRep'",
        [DATABASE],
      );
    await expect.poll(waiting, { timeout: 10_000, interval: 50 }).toHaveLength(1);
    for (const { pid } of await waiting()) await on(node1, "SELECT pg_cancel_backend($1)", [pid]);
    expectUnavailable(await created);
    expect(await metric("db_unavailable_writes_refused_total")).toBe(1);
    await setSynchronousStandby("node2");
    // PostgreSQL kept that commit: the client's retry with the same key is answered with the
    // post it made, and creates no other.
    const retried = await create("never acknowledged", "cancelled-wait");
    expect(retried.status).toBe(201);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    expect(await on(node1, "SELECT id FROM posts WHERE title = 'never acknowledged'")).toHaveLength(1);
    expect((await create("acknowledged")).status).toBe(201);
  });

  it("takes writes again through the moved write endpoint after the standby is promoted, with no restart", async () => {
    const before = await create("before the failover");
    expect(before.status).toBe(201);
    const location = before.headers.get("location") as string;
    expect(await metric("db_primary_changes_total")).toBe(0);

    // The primary dies (every process killed); the endpoint moves to node2 before Patroni has
    // promoted it, so for a while the writes reach a standby.
    await cluster.stop("node1", "kill");
    proxy.moveTo({ host: "127.0.0.1", port: node2.port });
    expectUnavailable(await create("on a standby"));
    expect((await timedFetch(location)).status).toBe(200);

    await cluster.promote("node2");
    const lostAt = performance.now();
    // A loop, not vi.waitFor: every answer before the first 201 is judged too (503, never 500).
    const seen: number[] = [];
    for (;;) {
      const response = await create("after the failover");
      seen.push(response.status);
      if (response.status === 201 || performance.now() - lostAt > WRITES_BACK_WITHIN_MS) break;
      expectUnavailable(response);
      await sleep(200);
    }
    expect(seen.at(-1)).toBe(201);
    expect((await timedFetch(location)).status).toBe(200);
    expect(await metric("db_primary_changes_total")).toBe(1);
    expect(await metric("db_unavailable_writes_refused_total")).toBeGreaterThanOrEqual(2);

    // The change events continue on the new primary: 1, 2, 3, … with no gap and no repeat, one
    // per creation committed. The one answered 503 is among them: PostgreSQL had committed it on
    // node1 (and node2 had it, as an asynchronous standby then), and a 503 leaves the outcome
    // open; its client retries with its Idempotency-Key.
    await expect
      .poll(
        async () => {
          const page = await timedFetch(`${service.url}/api/v1/posts/events?limit=1000`);
          const { events } = JSON.parse(page.body) as { events: { id: string; data: { title?: string } }[] };
          return events.map((event) => [Number(event.id), event.data.title]);
        },
        { timeout: 10_000 },
      )
      .toEqual([
        [1, "never acknowledged"],
        [2, "acknowledged"],
        [3, "before the failover"],
        [4, "after the failover"],
      ]);
  }, 60_000);
});
