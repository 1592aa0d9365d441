import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, inject, it } from "vitest";
import { FailoverTopology, type NodeName, PATRONI_TIMING } from "../failover.js";
import { sql } from "../topology.js";
import { rejoinedUnder, underFault } from "./under-fault.js";

/**
 * A network partition under load: the node Patroni names leader cut off, both ways, from etcd,
 * the other nodes, HAProxy and the instances (its network namespace's link taken down), for
 * longer than the leader lease, then healed; the same load and checker as the other faults (see
 * `underFault`). Cut off from etcd, the leader cannot renew its key and must stop being a
 * primary on its own, so that no write can be acknowledged on the isolated side; the others
 * elect a leader once the key expires.
 */
const topology = new FailoverTopology(inject("failoverDir"));

/**
 * Whether node `node` runs a primary, asked through its Unix socket, which the partition leaves
 * open: false when its PostgreSQL is in recovery or does not answer (stopped).
 */
async function runsPrimary(node: NodeName): Promise<boolean> {
  try {
    const [row] = await sql<{ recovery: boolean }>(
      topology.nodeSocketUrl(node, "postgres"),
      "SELECT pg_is_in_recovery() AS recovery",
    );
    return row?.recovery === false;
  } catch {
    return false;
  }
}

describe("a network partition of the primary under load", () => {
  it("the leader cut off from etcd, the other nodes, HAProxy and the instances past the lease, then healed: it stops being a primary on its own, nothing acknowledged lost, writes back within 30 s, it rejoins", async () => {
    let cut: NodeName | undefined;
    let cutAt = 0;
    // When the isolated leader stopped being a primary, in ms after the cut (undefined: never).
    let stoppedAfterMs: number | undefined;
    let watching: Promise<void> = Promise.resolve();
    try {
      await underFault(topology, {
        name: "partition of the leader past the lease",
        fault: async (leader) => {
          cut = leader;
          topology.partition(leader);
          cutAt = performance.now();
          // Watched from the moment of the cut, as the demotion comes before writes are back.
          watching = (async () => {
            while (performance.now() < cutAt + 2 * PATRONI_TIMING.ttl * 1000) {
              if (!(await runsPrimary(leader))) {
                stoppedAfterMs = performance.now() - cutAt;
                return;
              }
              await sleep(250);
            }
          })();
          return `cut ${leader} off`;
        },
        recover: async (leader) => {
          await watching;
          // Cut off a whole loop longer than the lease, so that the others elected a leader
          // and the old one stopped trying to be one before it can reach them again.
          const healAt = cutAt + (PATRONI_TIMING.ttl + PATRONI_TIMING.loopWait) * 1000;
          await sleep(Math.max(0, healAt - performance.now()));
          console.log(
            `partition: ${leader} stopped being a primary ${stoppedAfterMs === undefined ? "never" : `${(stoppedAfterMs / 1000).toFixed(1)} s`} after the cut; healed after ${((performance.now() - cutAt) / 1000).toFixed(1)} s`,
          );
          topology.heal(leader);
        },
        recovered: async (leader) => rejoinedUnder(await topology.members(), leader),
        recoveredMeans: "the old leader runs as a replica of a new leader, on its timeline",
      });
    } finally {
      // Whatever failed, the link is up again for the tests after this one.
      if (cut !== undefined) topology.heal(cut);
    }
    // Patroni demotes a leader that cannot renew its key before the key expires (ttl).
    expect(stoppedAfterMs, "the isolated leader stopped being a primary within the lease").toBeLessThan(
      PATRONI_TIMING.ttl * 1000,
    );
  });
});
