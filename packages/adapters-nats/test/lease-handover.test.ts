import { type JetStreamRelay, startJetStreamRelay } from "@posts/adapters-nats";
import { natsServerForTests, startNatsServer, type TestNatsServer } from "@posts/adapters-nats/testing";
import { describeNeeding } from "@posts/domain/testing/vitest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MemoryEventLog } from "./support/memory-event-log.js";
import { MemoryLeaseArbiter } from "./support/memory-lease.js";
import { eventually, expectExactly, streamWith } from "./support/stream-checks.js";

const PORT = 21303;

describeNeeding(natsServerForTests(), "two relays competing for the lease", () => {
  let server: TestNatsServer;
  const relays: JetStreamRelay[] = [];
  beforeAll(async () => {
    server = await startNatsServer(PORT);
  });
  afterAll(async () => {
    await Promise.all(relays.map((relay) => relay.stop()));
    await server?.close();
  });

  it("only the holder publishes, and the other takes over when the holder's connection dies", async () => {
    const log = new MemoryEventLog();
    const arbiter = new MemoryLeaseArbiter();
    const names = ["a", "b"] as const;
    const [a, b] = names.map((name) =>
      startJetStreamRelay({
        servers: server.url,
        events: log,
        lease: arbiter.leaseFor(name),
        leaseRetryMs: 200,
      }),
    ) as [JetStreamRelay, JetStreamRelay];
    relays.push(a, b);
    const relayOf = (name: string | undefined) => (name === "a" ? a : b);
    const standbyOf = (name: string | undefined) => (name === "a" ? b : a);

    await eventually("one relay holds the lease", () => arbiter.holder() !== undefined);
    const firstHolder = arbiter.holder();
    log.append(100);
    await streamWith(server.url, 100);
    expect(relayOf(firstHolder).status()).toMatchObject({ role: "publisher", acknowledged: 100 });
    expect(standbyOf(firstHolder).status()).toMatchObject({ role: "standby", acknowledged: 0 });

    // The holder's connection to the arbiter dies while events keep coming.
    const cutAt = Date.now();
    expect(arbiter.cutHolder()).toBe(firstHolder);
    log.append(100);
    await eventually(
      "the other relay holds the lease",
      () => ![undefined, firstHolder].includes(arbiter.holder()),
    );
    expectExactly(await streamWith(server.url, 200), 1, 200);
    expect(Date.now() - cutAt).toBeLessThan(5000);
    expect(relayOf(firstHolder).status().role).toBe("standby");
    expect(standbyOf(firstHolder).status()).toMatchObject({ role: "publisher", acknowledged: 100 });

    // And back again: each handover resumes exactly where the stream ends.
    arbiter.cutHolder();
    log.append(100);
    expectExactly(await streamWith(server.url, 300), 1, 300);
    // Each event was acknowledged once, to one relay or the other: no handover repeated one.
    expect(a.status().acknowledged + b.status().acknowledged).toBe(300);
  });
});
