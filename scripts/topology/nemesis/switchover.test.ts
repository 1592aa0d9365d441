import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { FAILOVER_PORTS, FailoverTopology, type NodeName } from "../failover.js";
import { metricSum } from "../measure.js";
import { rejoinedUnder, underFault } from "./under-fault.js";

/**
 * The planned switchover an operator runs (`patronictl switchover` to the synchronous standby),
 * under the same steady load and checker as the faults, and held to more than they are: where a
 * fault may cost any number of 503s with Retry-After, here no request may fail. The instances
 * send again what surely changed nothing (`DB_RETRY_WITHIN_MS`): a statement that found no
 * connection, that a server taking no writes refused, or that the old primary's fast shutdown
 * ended before it could commit (FATAL 57P01 before any CommandComplete of it). A write whose
 * commit the old primary had made and was waiting for the synchronous standby to confirm when
 * the shutdown came (the server warns and says nothing more), or whose CommandComplete came
 * before the end of its session, is resolved on the new primary: its transaction and its own
 * event rows found there, it is answered with the rows it had returned; never committed there,
 * it is sent again (`db_writes_resolved_total`).
 */
const topology = new FailoverTopology(inject("failoverDir"));

// The command waits for Patroni's answer, while the load runs in this same process: not execFileSync.
const run = promisify(execFile);

/**
 * When `node`'s PostgreSQL first received a fast shutdown request at or after `since` (both in ms
 * since the epoch), from the log Patroni's PostgreSQL writes (`2026-11-29 04:45:50.807 UTC [pid]
 * LOG:  received fast shutdown request`).
 */
function shutdownRequestedAt(node: NodeName, since: number): number {
  const log = readFileSync(join(topology.dir, `patroni-${node}.log`), "utf8");
  const at = [
    ...log.matchAll(/^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+) UTC .*received fast shutdown request$/gm),
  ]
    .map((match) => Date.parse(`${match[1]}T${match[2]}Z`))
    .find((time) => time >= since);
  if (at === undefined)
    throw new Error(`${node}'s log tells no shutdown request since ${new Date(since).toISOString()}`);
  return at;
}

describe("a planned switchover under load", () => {
  it("patronictl switchover to the synchronous standby: no request fails, nothing acknowledged lost, the old leader a replica on the new timeline", async () => {
    let candidate: NodeName | undefined;
    let oldLeader: NodeName = "pg1";
    let switchedAt = 0;
    let timelineBefore = 0;
    const { history } = await underFault(topology, {
      name: "patronictl switchover",
      fault: async (leader) => {
        const members = await topology.members();
        candidate = members.find((member) => member.role === "sync_standby")?.name as NodeName | undefined;
        if (candidate === undefined) throw new Error(`no synchronous standby: ${JSON.stringify(members)}`);
        timelineBefore = members.find((member) => member.name === leader)?.timeline ?? 0;
        oldLeader = leader;
        const started = performance.now();
        switchedAt = Date.now();
        const { stdout } = await run(
          "patronictl",
          [
            "-c",
            join(topology.dir, `${leader}.yml`),
            "switchover",
            "--leader",
            leader,
            "--candidate",
            candidate,
            "--force",
          ],
          { timeout: 120_000 },
        );
        const said =
          stdout
            .trim()
            .split("\n")
            .find((line) => /switched over|switchover/i.test(line)) ?? "";
        return `${leader} → ${candidate} in ${((performance.now() - started) / 1000).toFixed(1)} s (${said.trim()})`;
      },
      recover: async () => {},
      recovered: async (leader) => rejoinedUnder(await topology.members(), leader),
      recoveredMeans: "the old leader runs as a replica of the candidate, on its timeline",
    });

    // Where any failure lies against the old primary's shutdown, what the instances sent again,
    // and what they resolved on the new primary.
    const stoppedAt = shutdownRequestedAt(oldLeader, switchedAt);
    const failed = history.filter((op) => op.status === 0 || op.status >= 500);
    const epochOf = (at: number) => performance.timeOrigin + at;
    const instances = FAILOVER_PORTS.instances.map((_, index) => topology.instanceUrl(index));
    const resent = await metricSum(instances, "db_statements_resent_total");
    const cutShort = await metricSum(instances, 'db_statements_resent_total{reason="uncommitted"}');
    const resolved = await Promise.all(
      (["committed", "uncommitted", "unresolved"] as const).map(
        async (outcome) =>
          `${outcome} ${await metricSum(instances, `db_writes_resolved_total{outcome="${outcome}"}`)}`,
      ),
    );
    console.log(
      [
        `  failed requests: ${failed.length} of ${history.length} (${oldLeader} told to shut down at ${new Date(stoppedAt).toISOString()}); statements sent again: ${resent}, of which cut short by the shutdown: ${cutShort}; writes resolved on the new primary: ${resolved.join(", ")}`,
        ...failed.map(
          (op) =>
            `    ${op.kind} ${op.status} sent ${Math.round(epochOf(op.invokedAt) - stoppedAt)} ms after the shutdown request, answered after ${Math.round(op.completedAt - op.invokedAt)} ms: ${op.error}`,
        ),
      ].join("\n"),
    );
    expect(
      failed.map((op) => `${op.kind} ${op.status}: ${op.error}`),
      "no request failed",
    ).toEqual([]);
    const members = await topology.members();
    const leader = members.find((member) => member.role === "leader");
    expect(leader?.name, "the candidate leads").toBe(candidate);
    expect(leader?.timeline ?? 0, "a new timeline").toBeGreaterThan(timelineBefore);
  });
});
