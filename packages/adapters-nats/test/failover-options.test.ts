import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectToNats, defaultStreamReplicas, STREAM_NAME, startJetStreamRelay } from "@posts/adapters-nats";
import { natsServerForTests, startNatsServer, type TestNatsServer } from "@posts/adapters-nats/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryEventLog } from "./support/memory-event-log.js";
import { MemoryLeaseArbiter } from "./support/memory-lease.js";
import { streamWith } from "./support/stream-checks.js";

const PORT = 24530;
const PING_INTERVAL_MS = 500;

describe("the replicas of the stream POSTS", () => {
  it("are 3 when NATS_URL names a cluster of three servers or more, else 1", () => {
    expect(defaultStreamReplicas("nats://127.0.0.1:4222")).toBe(1);
    expect(defaultStreamReplicas("nats://a:4222, nats://b:4222")).toBe(1);
    expect(defaultStreamReplicas("nats://a:4222,nats://b:4222,nats://c:4222")).toBe(3);
    expect(defaultStreamReplicas(["nats://a:4222", "nats://b:4222", "nats://c:4222", "nats://d:4222"])).toBe(
      3,
    );
  });
});

describeNeeding(natsServerForTests(), "the relay's connection when a NATS server fails", () => {
  let server: TestNatsServer;
  const connections: NatsConnection[] = [];

  beforeAll(async () => {
    server = await startNatsServer(PORT);
  });
  afterAll(async () => {
    server?.resume();
    for (const connection of connections) await connection.close().catch(() => undefined);
    await server?.close();
  });

  it("creates the stream with the replicas asked for (one on a single server)", async () => {
    const log = new MemoryEventLog();
    log.append(3);
    const relay = startJetStreamRelay({
      servers: server.url,
      events: log,
      lease: new MemoryLeaseArbiter().leaseFor("a"),
      streamReplicas: 1,
    });
    try {
      await streamWith(server.url, 3);
      const admin = await connectToNats(server.url, { timeoutMs: 2000 });
      connections.push(admin);
      const info = await (await jetstreamManager(admin)).streams.info(STREAM_NAME);
      expect(info.config.num_replicas).toBe(1);
    } finally {
      await relay.stop();
    }
  });

  it("leaves a paused server within a few ping intervals, and comes back when it answers again", async () => {
    const connection = await connectToNats(server.url, { timeoutMs: 2000, pingIntervalMs: PING_INTERVAL_MS });
    connections.push(connection);
    const seen: string[] = [];
    void (async () => {
      for await (const status of connection.status()) seen.push(status.type);
    })();
    server.pause();
    const pausedAt = performance.now();
    await expect.poll(() => seen, { timeout: 10 * PING_INTERVAL_MS, interval: 50 }).toContain("disconnect");
    // Two pings unanswered, then the disconnect: nats.js's default would take four minutes.
    expect(performance.now() - pausedAt).toBeLessThan(6 * PING_INTERVAL_MS);
    server.resume();
    await expect.poll(() => seen, { timeout: 10_000, interval: 50 }).toContain("reconnect");
  });
});
