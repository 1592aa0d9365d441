import { jetstream, jetstreamManager, StorageType, type StreamConfig } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type JetStreamRelay, STREAM_NAME, startJetStreamRelay } from "@posts/adapters-nats";
import { natsServerForTests, startNatsServer, type TestNatsServer } from "@posts/adapters-nats/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it, vi } from "vitest";
import { MemoryEventLog, staleView } from "./support/memory-event-log.js";
import { MemoryLeaseArbiter, splitBrainLease } from "./support/memory-lease.js";
import { eventually, expectExactly, streamWith } from "./support/stream-checks.js";

const PORT = 21301;

describeNeeding(natsServerForTests(), "the JetStream relay", () => {
  let server: TestNatsServer;
  let admin: NatsConnection;
  const relays: JetStreamRelay[] = [];
  const start = (options: Omit<Parameters<typeof startJetStreamRelay>[0], "servers">) => {
    const relay = startJetStreamRelay({ servers: server.url, ...options });
    relays.push(relay);
    return relay;
  };

  /** Creates the stream as the relay would, with `limits` of the test's own, before a relay starts. */
  const addStream = async (limits: Partial<StreamConfig>) =>
    (await jetstreamManager(admin)).streams.add({
      name: STREAM_NAME,
      subjects: ["posts.events.*"],
      storage: StorageType.File,
      ...limits,
    });

  beforeAll(async () => {
    server = await startNatsServer(PORT);
    admin = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await admin?.close();
    await server?.close();
  });
  beforeEach(async () => {
    const manager = await jetstreamManager(admin);
    await manager.streams.delete(STREAM_NAME).catch(() => undefined);
  });
  afterEach(async () => {
    await Promise.all(relays.splice(0).map((relay) => relay.stop()));
  });

  it("publishes each event once, in order, with its id, subject and body, to a file-backed stream it creates", async () => {
    const log = new MemoryEventLog();
    log.append(300);
    const relay = start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("a") });

    expectExactly(await streamWith(server.url, 300), 1, 300);
    const info = await (await jetstreamManager(admin)).streams.info(STREAM_NAME);
    expect(info.config.storage).toBe(StorageType.File);
    expect(info.config.subjects).toEqual(["posts.events.*"]);

    // New events follow as they are appended, woken rather than polled.
    const appendedAt = Date.now();
    log.append(50);
    expectExactly(await streamWith(server.url, 350), 1, 350);
    expect(Date.now() - appendedAt).toBeLessThan(3000);
    expect(relay.status()).toEqual({ role: "publisher", acknowledged: 350, lastEvent: 350 });
  });

  it("a restarted relay resumes after the stream's last event and publishes nothing twice", async () => {
    const log = new MemoryEventLog();
    const arbiter = new MemoryLeaseArbiter();
    log.append(100);
    const first = start({ events: log, lease: arbiter.leaseFor("first") });
    await streamWith(server.url, 100);
    await first.stop();
    expect(first.status().role).toBe("stopped");
    expect(arbiter.holder()).toBeUndefined();

    log.append(100);
    const second = start({ events: log, lease: arbiter.leaseFor("second") });
    expectExactly(await streamWith(server.url, 200), 1, 200);
    // It read where to resume from the stream: it published only the hundred new ones.
    await eventually("the second relay has acknowledged 100", () => second.status().acknowledged === 100);
  });

  it("does not repeat an event that reached the stream although its publisher never heard back", async () => {
    const log = new MemoryEventLog();
    log.append(20);
    const first = start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("a") });
    await streamWith(server.url, 20);
    await first.stop();
    // What a relay killed between sending event 21 and reading its acknowledgement leaves behind.
    log.append(10);
    const [event21] = await log.readAfter(20, 1);
    await jetstream(admin).publish("posts.events.created", event21?.body, {
      msgID: "21",
      expect: { lastSequence: 20 },
    });

    start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("b") });
    expectExactly(await streamWith(server.url, 30), 1, 30);
  });

  it("keeps the stream exact when two relays both believe they publish, even past the duplicate window", async () => {
    // A one-second duplicate window: de-duplication alone would let the second relay's copies in.
    await addStream({ duplicate_window: 1_000_000_000 });
    const log = new MemoryEventLog();
    log.append(10);
    const seed = start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("seed") });
    await streamWith(server.url, 10);
    await seed.stop();

    // The second one reads what the first published more than a window ago, and publishes it again.
    const one = start({ events: log, lease: splitBrainLease, batchSize: 7 });
    const refusals: unknown[] = [];
    const logger = {
      info: () => undefined,
      warn: (details: { err?: unknown }) => refusals.push(details.err),
      error: (details: { err?: unknown }) => refusals.push(details.err),
    };
    start({ events: staleView(log, 1500), lease: splitBrainLease, batchSize: 13, logger });
    for (let round = 0; round < 20; round++) {
      log.append(25);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expectExactly(await streamWith(server.url, 510, 30_000), 1, 510);
    // The stale one really published, and the stream refused it for the sequence it named.
    expect(one.status().acknowledged).toBeGreaterThan(0);
    expect(refusals.some((err) => String(err).includes("wrong last sequence"))).toBe(true);
  });

  it("stops a batch at a message the stream refuses: nothing after it is stored, and its reason is logged", async () => {
    await addStream({ max_msg_size: 1024 });
    const log = new MemoryEventLog();
    log.append(10);
    log.append(1, 2048); // event 11: too large for this stream
    log.append(9);
    const failures: unknown[] = [];
    const logger = {
      info: () => undefined,
      warn: (details: { err?: unknown }) => failures.push(details.err),
      error: (details: { err?: unknown }) => failures.push(details.err),
    };
    // One batch of twenty, in which only the first and the last message ask to be acknowledged.
    const relay = start({
      events: log,
      lease: new MemoryLeaseArbiter().leaseFor("a"),
      logger,
      backoff: { maxMs: 100 },
    });

    await eventually("the relay has retried from the stream's end", () => failures.length >= 2);
    expectExactly(await streamWith(server.url, 10), 1, 10);
    expect((await (await jetstreamManager(admin)).streams.info(STREAM_NAME)).state.messages).toBe(10);
    // What it knows to be in the stream, read from the stream's end after the failed batch.
    expect(relay.status().lastEvent).toBe(10);
    // The first failure is the batch's last message, refused for the sequence it names; the
    // retries begin with event 11, refused for its own reason.
    expect(String(failures[0])).toContain("wrong last sequence");
    expect(failures.slice(1).some((err) => /maximum/i.test(String(err)))).toBe(true);
  });

  it("publishes an event larger than the server's max_payload as its reference, and the events after it as ever", async () => {
    const log = new MemoryEventLog();
    log.append(3);
    // The server's max_payload is 1 MB by default (nats-server's own).
    log.append(1, 2 * 1024 * 1024);
    log.append(3);
    // Within the limit, counting the headers' room: published whole.
    log.append(1, 1024 * 1024 - 2048);
    start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("a") });

    const messages = await streamWith(server.url, 8);
    expectExactly(messages, 1, 8);
    expect(JSON.parse(messages[3]?.body ?? "")).toEqual({
      specversion: "1.0",
      id: "4",
      type: "post.updated",
      subject: "4",
      dataref: "/events/4",
    });
    expect(messages[7]?.body.length).toBe(1024 * 1024 - 2048);
    expect(messages.filter((message) => message.body.includes("dataref"))).toHaveLength(1);
  });

  it("starts a new stream at the oldest event the log still keeps, then resumes by id, not by sequence", async () => {
    const log = new MemoryEventLog();
    log.append(100);
    log.prune(41);
    const first = start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("a") });
    expectExactly(await streamWith(server.url, 60), 41, 100, 1);
    await first.stop();

    log.append(10);
    start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("b") });
    expectExactly(await streamWith(server.url, 70), 41, 110, 1);
  });

  it("creates the stream again when it is deleted under a running relay, from the oldest kept event", async () => {
    const log = new MemoryEventLog();
    log.append(50);
    start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("a"), backoff: { maxMs: 200 } });
    await streamWith(server.url, 50);

    await (await jetstreamManager(admin)).streams.delete(STREAM_NAME);
    log.prune(31);
    log.append(10);
    expectExactly(await streamWith(server.url, 30), 31, 60, 1);
  });

  it("reads the log once per batch: after a short batch it waits to be told of more instead of reading nothing", async () => {
    const log = new MemoryEventLog();
    log.append(5);
    start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("a") });
    expectExactly(await streamWith(server.url, 5), 1, 5);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(log.reads).toBe(1);
    log.append(3);
    expectExactly(await streamWith(server.url, 8), 1, 8);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(log.reads).toBe(2);
  });

  it("waits for events without combining its lease's signal at each wait (Node 20 keeps a WeakRef per AbortSignal.any)", async () => {
    const log = new MemoryEventLog();
    log.append(5);
    const combined = vi.spyOn(AbortSignal, "any");
    try {
      const relay = start({ events: log, lease: new MemoryLeaseArbiter().leaseFor("a"), idleRecheckMs: 5 });
      await streamWith(server.url, 5);
      const readsBefore = log.reads;
      // About forty idle waits, each ended by the recheck, and a few woken by new events.
      await new Promise((resolve) => setTimeout(resolve, 200));
      log.append(3);
      await streamWith(server.url, 8);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(log.reads - readsBefore).toBeGreaterThan(10);
      // Once, when it took the lease: never per wait.
      expect(combined.mock.calls.length).toBeLessThanOrEqual(1);
      expect(relay.status().acknowledged).toBe(8);
    } finally {
      combined.mockRestore();
    }
  });
});
