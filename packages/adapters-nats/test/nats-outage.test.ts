import { type JetStreamRelay, startJetStreamRelay } from "@posts/adapters-nats";
import { natsServerForTests, startNatsServer, type TestNatsServer } from "@posts/adapters-nats/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, afterEach, expect, it } from "vitest";
import { MemoryEventLog } from "./support/memory-event-log.js";
import { MemoryLeaseArbiter } from "./support/memory-lease.js";
import { eventually, expectExactly, streamWith } from "./support/stream-checks.js";

const PORT = 21302;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Appends a few events every 10 ms until stopped, as a busy service does. */
function steadyWrites(log: MemoryEventLog) {
  let running = true;
  const done = (async () => {
    while (running) {
      log.append(3);
      await sleep(10);
    }
  })();
  return async () => {
    running = false;
    await done;
    return log.last();
  };
}

describeNeeding(natsServerForTests(), "the JetStream relay while NATS fails", () => {
  const servers: TestNatsServer[] = [];
  const relays: JetStreamRelay[] = [];
  afterEach(async () => {
    await Promise.all(relays.splice(0).map((relay) => relay.stop()));
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it("loses nothing and repeats nothing when NATS is killed and restarted mid-stream", async () => {
    const server = await startNatsServer(PORT);
    servers.push(server);
    const log = new MemoryEventLog();
    const relay = startJetStreamRelay({
      servers: server.url,
      events: log,
      lease: new MemoryLeaseArbiter().leaseFor("a"),
      publishTimeoutMs: 1000,
    });
    relays.push(relay);
    const stopWriting = steadyWrites(log);

    await streamWith(server.url, 300);
    await server.kill("SIGKILL");
    const writtenWhileDown = log.last();
    await sleep(2000);
    expect(log.last()).toBeGreaterThan(writtenWhileDown); // the service went on writing
    await server.restart();
    const restartedAt = Date.now();
    await sleep(1500);
    const last = await stopWriting();

    const messages = await streamWith(server.url, last, 30_000);
    expectExactly(messages, 1, last);
    // Caught up within a few seconds of NATS answering again, with the writes still coming.
    expect(Date.now() - restartedAt).toBeLessThan(10_000);
    await eventually("the relay reports the last event", () => relay.status().lastEvent === last);
  });

  it("stops at once even while its publishes wait for a NATS that stopped answering", async () => {
    const server = await startNatsServer(PORT);
    servers.push(server);
    const log = new MemoryEventLog();
    log.append(10);
    const relay = startJetStreamRelay({
      servers: server.url,
      events: log,
      lease: new MemoryLeaseArbiter().leaseFor("a"),
    });
    await streamWith(server.url, 10);
    // Stopped, not killed: the connection stays open and nothing answers the publishes.
    server.pause();
    log.append(10);
    await sleep(300);
    const stoppingAt = Date.now();
    await relay.stop();
    expect(Date.now() - stoppingAt).toBeLessThan(1000);
    expect(relay.status().role).toBe("stopped");
    server.resume();
  });

  it("publishes everything once NATS comes up when it was down as the relay started", async () => {
    const server = await startNatsServer(PORT);
    servers.push(server);
    await server.kill("SIGKILL");
    const log = new MemoryEventLog();
    log.append(40);
    const relay = startJetStreamRelay({
      servers: server.url,
      events: log,
      lease: new MemoryLeaseArbiter().leaseFor("a"),
      publishTimeoutMs: 1000,
    });
    relays.push(relay);
    await sleep(1500);
    expect(relay.status()).toMatchObject({ role: "publisher", acknowledged: 0 });

    await server.restart();
    log.append(10);
    expectExactly(await streamWith(server.url, 50), 1, 50);
  });
});
