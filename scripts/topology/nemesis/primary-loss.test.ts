import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { readStream } from "@posts/adapters-nats/testing";
import { describe, expect, inject, it } from "vitest";
import { FailoverTopology, type NodeName, PATRONI_TIMING } from "../failover.js";
import { sql } from "../topology.js";
import { checkHistory, type Operation, readFeed, type StoredPost, startLoad } from "./history.js";

/**
 * The promise of `docs/scaling.md#beyond-one-database-server` carried through the loss of the
 * primary, Jepsen-style: a steady load of keyed creates, patches, deletes and reads through
 * HAProxy and the three instances, a fault on the node Patroni names leader, and a checker over
 * the history, the final database, the change feed and the JetStream stream.
 */
const topology = new FailoverTopology(inject("failoverDir"));

/** Writes must be acknowledged again within this long after the fault. */
const WRITES_BACK_WITHIN_MS = 30_000;

const INSTANCES = ["instance1", "instance2", "instance3"] as const;

/**
 * Runs the load, applies `fault` to the leader at once after a warm-up, keeps the load going
 * until writes are back and a while after, lets `recover` bring the faulty node back, waits
 * until it runs as a replica again, and checks everything. Answers the old leader.
 */
async function underFault(
  name: string,
  fault: (leader: NodeName) => Promise<void>,
  recover: (leader: NodeName) => Promise<void>,
): Promise<void> {
  const leader = await topology.waitForHealthyCluster();
  const timeline = (await topology.members()).find((member) => member.name === leader)?.timeline ?? 0;
  const instancePids = INSTANCES.map((instance) => topology.processes.pidOf(instance));
  const load = await startLoad({ url: topology.url, workers: 6, pauseMs: 20, timeoutMs: 35_000 });
  await sleep(5_000);

  const faultAt = performance.now();
  await fault(leader);
  // A loop, not expect.poll: writes that never come back are one of the checker's findings, to
  // be reported with every other one, not a failure that hides them.
  const deadline = faultAt + 90_000;
  while (performance.now() < deadline && !writeAcknowledgedSince(load.history, faultAt)) await sleep(250);
  await sleep(5_000);

  await recover(leader);
  const rejoinStarted = performance.now();
  await expect
    .poll(
      async () => {
        const members = await topology.members().catch(() => []);
        const newLeader = members.find((member) => member.role === "leader" && member.state === "running");
        const old = members.find((member) => member.name === leader);
        return (
          newLeader !== undefined &&
          newLeader.name !== leader &&
          old !== undefined &&
          (old.role === "replica" || old.role === "sync_standby") &&
          (old.state === "running" || old.state === "streaming") &&
          old.timeline === newLeader.timeline
        );
      },
      { timeout: 120_000, interval: 500, message: `${leader} did not rejoin as a replica of a new leader` },
    )
    .toBe(true);
  const rejoinMs = performance.now() - rejoinStarted;
  await sleep(3_000);
  const history = await load.stop();

  const stored = await sql<StoredPost>(
    topology.writeUrl(),
    "SELECT id::text AS id, substr(content, 5) AS key, title FROM posts WHERE content LIKE 'key:%'",
  );
  // Each event is in the feed within 1 s of its change's answer.
  await sleep(1_500);
  const feed = await readFeed(topology.url);
  const verdict = checkHistory({ history, stored, feed, faultAt, writesBackWithinMs: WRITES_BACK_WITHIN_MS });
  const members = await topology.members();
  console.log(
    [
      `${name}: leader ${leader} (timeline ${timeline}) → ${members.find((member) => member.role === "leader")?.name}`,
      `  requests: ${history.length}, ${JSON.stringify(verdict.counts)}`,
      `  writes back ${verdict.writesBackMs === undefined ? "never" : `${Math.round(verdict.writesBackMs)} ms`} after the fault; the slowest answer ${Math.round(verdict.slowestMs)} ms`,
      `  ${leader} rejoined as a replica ${Math.round(rejoinMs)} ms after its restart`,
      `  posts stored ${stored.length}, events in the feed ${feed.length}`,
      `  violations: ${verdict.violations.length}`,
      ...verdict.violations.slice(0, 30).map((violation) => `    ${violation}`),
      ...(verdict.violations.length > 0 ? instanceErrors() : []),
    ].join("\n"),
  );

  expect(
    INSTANCES.map((instance) => topology.processes.pidOf(instance)),
    "no instance restarted",
  ).toEqual(instancePids);
  expect(verdict.violations).toEqual([]);

  // The stream holds the feed's events, each once, in order: the relay catches up within seconds.
  const feedIds = feed.map((event) => event.id);
  await expect
    .poll(async () => (await readStream(topology.natsUrls)).map((message) => message.id), {
      timeout: 30_000,
      interval: 1_000,
    })
    .toEqual(feedIds);
}

function writeAcknowledgedSince(history: readonly Operation[], since: number): boolean {
  return history.some(
    (op) => op.kind !== "read" && op.invokedAt >= since && op.status >= 200 && op.status < 300,
  );
}

/** The instances' log lines at warn or worse, as evidence of what the checker found. */
function instanceErrors(): string[] {
  const lines: string[] = ["  instances' log lines (first 10 of each):"];
  for (const instance of INSTANCES) {
    const log = readFileSync(join(topology.dir, `${instance}.log`), "utf8")
      .trim()
      .split("\n")
      .filter(Boolean);
    lines.push(...log.slice(0, 10).map((line) => `    ${instance}: ${line.slice(0, 400)}`));
  }
  return lines;
}

describe("losing the primary under load", () => {
  it("SIGKILL of the leader's Patroni and postmaster: nothing acknowledged lost, writes back within 30 s, the old leader rejoins", async () => {
    await underFault(
      "SIGKILL of the leader",
      async (leader) => topology.killNode(leader),
      async (leader) => {
        topology.startPatroni(leader);
      },
    );
  });

  it("SIGSTOP of the leader past its lease, then SIGCONT: nothing acknowledged lost, writes back within 30 s, the old leader rejoins", async () => {
    await underFault(
      "SIGSTOP of the leader past the lease",
      async (leader) => topology.pauseNode(leader, "SIGSTOP"),
      async (leader) => {
        // Frozen past the lease: the others have elected a leader of their own by now.
        await sleep(PATRONI_TIMING.ttl * 1000);
        topology.pauseNode(leader, "SIGCONT");
      },
    );
  });
});
