import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { readStream } from "@posts/adapters-nats/testing";
import { expect } from "vitest";
import type { FailoverTopology, Member, NodeName } from "../failover.js";
import { sql } from "../topology.js";
import {
  checkHistory,
  type FeedEvent,
  type Operation,
  readFeed,
  type StoredPost,
  startLoad,
  type Verdict,
} from "./history.js";

/** The load of every nemesis test: workers, each with one request in flight at a time. */
export const LOAD = { workers: 6, pauseMs: 20, timeoutMs: 35_000 } as const;

/** Writes must be acknowledged again within this long after the fault. */
export const WRITES_BACK_WITHIN_MS = 30_000;

const INSTANCES = ["instance1", "instance2", "instance3"] as const;

/** One fault of a nemesis test, given the node Patroni names leader when it starts. */
export interface Nemesis {
  readonly name: string;
  /** Applies the fault; answers what it hit, for the figures. */
  fault(leader: NodeName): Promise<string>;
  /** Brings the faulty part back, once writes are back (or never came back). */
  recover(leader: NodeName): Promise<void>;
  /** Whether the topology is whole again; asked until it is, for up to 120 s. */
  recovered(leader: NodeName): Promise<boolean>;
  /** What `recovered` asks, for the assertion's message. */
  readonly recoveredMeans: string;
}

/** What a run under a fault measured, for the assertions a test adds to `underFault`'s own. */
export interface UnderFault {
  readonly history: readonly Operation[];
  readonly verdict: Verdict;
  readonly feed: readonly FeedEvent[];
}

/**
 * Runs the load on a healthy cluster, applies the fault after a warm-up, keeps the load going
 * until writes are back and 5 s more, recovers, waits until the topology is whole again, stops
 * the load and checks everything: the history, the final database and the feed (see
 * `checkHistory`), that no instance restarted, that the topology is whole, and that the
 * JetStream stream holds the feed's events, each once, in order. Prints the figures first, so
 * that a failure comes with all of them.
 */
export async function underFault(topology: FailoverTopology, nemesis: Nemesis): Promise<UnderFault> {
  const leader = await topology.waitForHealthyCluster();
  const instancePids = INSTANCES.map((instance) => topology.processes.pidOf(instance));
  const load = await startLoad({ url: topology.url, ...LOAD });
  await sleep(5_000);

  const faultAt = performance.now();
  const faultWallClock = Date.now();
  const hit = await nemesis.fault(leader);
  // A loop, not expect.poll: writes that never come back are one of the checker's findings, to
  // be reported with every other one, not a failure that hides them.
  while (performance.now() < faultAt + 90_000 && !writeAcknowledgedSince(load.history, faultAt))
    await sleep(250);
  const writesSeenAt = performance.now();
  await sleep(5_000);

  await nemesis.recover(leader);
  const recoverAt = performance.now();
  // A loop, as above: a topology that never becomes whole is reported with the other findings.
  let whole = false;
  while (!whole && performance.now() < recoverAt + 120_000) {
    whole = await nemesis.recovered(leader).catch(() => false);
    if (!whole) await sleep(500);
  }
  const wholeAt = performance.now();
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
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  console.log(
    [
      `${nemesis.name}: ${hit}`,
      `  requests: ${history.length}, ${JSON.stringify(verdict.counts)}`,
      `  writes back ${verdict.writesBackMs === undefined ? "never" : seconds(verdict.writesBackMs)} after the fault; the slowest answer ${seconds(verdict.slowestMs)}`,
      `  recovery started ${seconds(recoverAt - faultAt)} after the fault (writes seen back at ${seconds(writesSeenAt - faultAt)}); ${whole ? `whole again ${seconds(wholeAt - recoverAt)} later` : `not whole within 120 s (${nemesis.recoveredMeans})`}`,
      `  Patroni now: ${members.map((member) => `${member.name} ${member.role} ${member.state} timeline ${member.timeline}`).join(", ")}`,
      `  posts stored ${stored.length}, events in the feed ${feed.length}`,
      `  violations: ${verdict.violations.length}`,
      ...verdict.violations.slice(0, 30).map((violation) => `    ${violation}`),
      ...(verdict.violations.length > 0 ? instanceErrors(topology, faultWallClock) : []),
    ].join("\n"),
  );

  expect(verdict.violations).toEqual([]);
  expect(whole, `${nemesis.recoveredMeans}: ${JSON.stringify(members)}`).toBe(true);
  expect(
    INSTANCES.map((instance) => topology.processes.pidOf(instance)),
    "no instance restarted",
  ).toEqual(instancePids);
  // The stream holds the feed's events, each once, in order: the relay catches up within seconds.
  const feedIds = feed.map((event) => event.id);
  await expect
    .poll(async () => (await readStream(topology.natsUrl(0))).map((message) => message.id), {
      timeout: 30_000,
      interval: 1_000,
    })
    .toEqual(feedIds);
  return { history, verdict, feed };
}

/** Whether `old` runs as a replica (or synchronous standby) of another node, on the leader's timeline. */
export function rejoinedUnder(members: readonly Member[], old: NodeName): boolean {
  const leader = members.find((member) => member.role === "leader" && member.state === "running");
  const former = members.find((member) => member.name === old);
  return (
    leader !== undefined &&
    leader.name !== old &&
    former !== undefined &&
    (former.role === "replica" || former.role === "sync_standby") &&
    (former.state === "running" || former.state === "streaming") &&
    former.timeline === leader.timeline
  );
}

function writeAcknowledgedSince(history: readonly Operation[], since: number): boolean {
  return history.some(
    (op) => op.kind !== "read" && op.invokedAt >= since && op.status >= 200 && op.status < 300,
  );
}

/**
 * The instances' errors (log level 50 and above) since `since` (ms since the epoch, as the log
 * has it), counted by message and error code, as the
 * evidence of what the checker found: which statement failed how.
 */
function instanceErrors(topology: FailoverTopology, since: number): string[] {
  const counts = new Map<string, number>();
  for (const instance of INSTANCES) {
    for (const line of readFileSync(join(topology.dir, `${instance}.log`), "utf8").split("\n")) {
      if (!line.startsWith("{")) continue;
      const entry = JSON.parse(line) as {
        level?: number;
        time?: number;
        msg?: string;
        err?: { message?: string; code?: string };
      };
      if ((entry.level ?? 0) < 50 || (entry.time ?? 0) < since) continue;
      const what = `${entry.msg ?? ""}: ${entry.err?.message ?? ""}${entry.err?.code === undefined ? "" : ` (${entry.err.code})`}`;
      counts.set(what, (counts.get(what) ?? 0) + 1);
    }
  }
  return [
    "  the instances' errors since the fault, by message:",
    ...[...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([what, count]) => `    ${count}× ${what.slice(0, 300)}`),
  ];
}
