import { setTimeout as sleep } from "node:timers/promises";
import { readStream } from "@posts/adapters-nats/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { FailoverTopology, PATRONI_TIMING } from "../failover.js";
import { ExampleConsumer } from "./example-consumer.js";
import { checkConsumer, type FeedEvent, readFeed } from "./history.js";
import { type Nemesis, rejoinedUnder, underFault } from "./under-fault.js";

/**
 * Faults under load, Jepsen-style: a steady load of keyed creates, patches, deletes and reads
 * through HAProxy and the three instances, one fault, and the checker over the history, the
 * final database, the change feed and the JetStream stream (see `underFault`). One file, in
 * this order: the faults the topology shrugs off first, the primary's last, as the SIGSTOP of a
 * leader is the one that may leave Patroni's cluster in a state of its own (see the README).
 */
const topology = new FailoverTopology(inject("failoverDir"));

const REJOINED = "the old leader runs as a replica of a new leader, on its timeline";

/**
 * Whether an event made after the fault reaches the stream through the two servers left within
 * 30 s: the feed's newest event 5 s into the fault, looked for in the stream.
 */
async function publishesThroughTheOthers(down: number): Promise<boolean> {
  await sleep(5_000);
  const feed = await readFeed(topology.url);
  const newest = feed.at(-1)?.id;
  // readStream takes one server: one of the two left, the first that answers.
  const others = [0, 1, 2].filter((index) => index !== down).map((index) => topology.natsUrl(index));
  // The stream's leader lost, its two replicas elect another (and the meta leader, when it was
  // there too), and each publish that meets no leader waits out its 5 s timeout before the relay
  // starts over from the stream's end: the first publish through the others may come 20 s or
  // more after the kill on loaded cores.
  const deadline = performance.now() + 30_000;
  // A loop, not expect.poll: the answer is asserted after the checker has reported.
  while (performance.now() < deadline) {
    const stream = await readStream(others[0] as string).catch(() =>
      readStream(others[1] as string).catch(() => []),
    );
    if (stream.some((message) => message.id === newest)) return true;
    await sleep(500);
  }
  return false;
}

describe("losing an etcd member under load", () => {
  it("SIGKILL of etcd's leader: nothing acknowledged lost, writes go on, the member rejoins", async () => {
    let member = -1;
    await underFault(topology, {
      name: "SIGKILL of the etcd leader",
      fault: async () => {
        member = await topology.etcdLeader();
        topology.processes.signal(`etcd${member + 1}`, "SIGKILL");
        return `killed etcd${member + 1}`;
      },
      recover: async () => {
        topology.startEtcd(member);
      },
      recovered: async () =>
        (await topology.etcdWhole()) && (await topology.waitForHealthyCluster(2000)) !== undefined,
      recoveredMeans:
        "every etcd member healthy, a Patroni leader with two running replicas, one synchronous",
    });
  });
});

/** examples/jetstream-consumer, following the stream through the NATS faults below. */
const consumer = new ExampleConsumer(topology);

/**
 * Whether the example consumer applied every event of the feed, once each, in order, within
 * 60 s (it acknowledges one event at a time, and may wait out a redelivery); prints its figures.
 */
async function expectConsumerToFollow(feed: readonly FeedEvent[]): Promise<void> {
  await expect
    .poll(() => checkConsumer(feed, consumer.applied()), { timeout: 60_000, interval: 1_000 })
    .toEqual([]);
  console.log(
    `  examples/jetstream-consumer: ${consumer.applied().length} events applied, ${consumer.redeliveries()} delivered again and only acknowledged`,
  );
}

/**
 * A fault on the NATS server that leads the stream: `signal` to it, then `recover`; and whether
 * an event made meanwhile reached the stream through the other two (asserted after the checker).
 * The example consumer is killed and started again 2 s into the fault, so that it resumes from
 * its durable consumer while a server is lost.
 */
function onStreamLeader(
  signal: "SIGKILL" | "SIGSTOP",
  recover: (server: number) => Promise<void>,
): { nemesis: Nemesis; published: () => boolean } {
  let server = -1;
  let published = false;
  return {
    published: () => published,
    nemesis: {
      name: `${signal} of the stream leader's NATS server`,
      fault: async () => {
        server = await topology.streamLeader();
        topology.processes.signal(`nats${server + 1}`, signal);
        await sleep(2_000);
        await consumer.crashAndRestart();
        published = await publishesThroughTheOthers(server);
        return `${signal} to nats${server + 1}; an event made after it reached the stream through the others: ${published}`;
      },
      recover: () => recover(server),
      recovered: () => topology.streamWhole(),
      recoveredMeans: "the stream POSTS has a leader and two current replicas",
    },
  };
}

describe("losing a NATS server under load", () => {
  beforeAll(() => {
    consumer.start();
  });
  afterAll(() => consumer.stop());

  it("SIGKILL of the stream leader's server: the stream holds the feed, once each, in order, and so does a durable consumer", async () => {
    const fault = onStreamLeader("SIGKILL", async (server) => {
      topology.startNats(server);
    });
    const { feed } = await underFault(topology, fault.nemesis);
    expect(fault.published(), "an event made while the server was down reached the stream").toBe(true);
    await expectConsumerToFollow(feed);
  });

  it("SIGSTOP of the stream leader's server for 20 s or more, then SIGCONT: the stream holds the feed, once each, in order, and so does a durable consumer", async () => {
    const fault = onStreamLeader("SIGSTOP", async (server) => {
      await sleep(10_000);
      topology.processes.signal(`nats${server + 1}`, "SIGCONT");
    });
    const { feed } = await underFault(topology, fault.nemesis);
    expect(fault.published(), "an event made while the server was frozen reached the stream").toBe(true);
    await expectConsumerToFollow(feed);
  });
});

describe("losing the primary under load", () => {
  it("SIGKILL of the leader's Patroni and PostgreSQL: nothing acknowledged lost, writes back within 30 s, the old leader rejoins", async () => {
    await underFault(topology, {
      name: "SIGKILL of the leader",
      fault: async (leader) => {
        topology.killNode(leader);
        return `killed ${leader}`;
      },
      recover: async (leader) => {
        topology.startPatroni(leader);
      },
      recovered: async (leader) => rejoinedUnder(await topology.members(), leader),
      recoveredMeans: REJOINED,
    });
  });

  it("SIGSTOP of the leader's Patroni and PostgreSQL past the lease, then SIGCONT: nothing acknowledged lost, writes back within 30 s, the old leader rejoins", async () => {
    await underFault(topology, {
      name: "SIGSTOP of the leader past the lease",
      fault: async (leader) => {
        topology.pauseNode(leader, "SIGSTOP");
        return `froze ${leader}`;
      },
      recover: async (leader) => {
        // Frozen a whole lease longer than the others needed to elect a leader of their own.
        await sleep(PATRONI_TIMING.ttl * 1000);
        topology.pauseNode(leader, "SIGCONT");
      },
      recovered: async (leader) => rejoinedUnder(await topology.members(), leader),
      recoveredMeans: REJOINED,
    });
  });
});
