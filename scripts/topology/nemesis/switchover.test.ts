import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { FailoverTopology, type NodeName } from "../failover.js";
import { rejoinedUnder, underFault } from "./under-fault.js";

/**
 * The planned switchover an operator runs (`patronictl switchover` to the synchronous standby),
 * under the same steady load and checker as the faults, and held to more than they are: not one
 * request may fail, where a fault may cost 503s with Retry-After.
 */
const topology = new FailoverTopology(inject("failoverDir"));

// The command waits for Patroni's answer, while the load runs in this same process: not execFileSync.
const run = promisify(execFile);

describe("a planned switchover under load", () => {
  it("patronictl switchover to the synchronous standby: no request fails, nothing acknowledged lost, the old leader a replica on the new timeline", async () => {
    let candidate: NodeName | undefined;
    let timelineBefore = 0;
    const { history } = await underFault(topology, {
      name: "patronictl switchover",
      fault: async (leader) => {
        const members = await topology.members();
        candidate = members.find((member) => member.role === "sync_standby")?.name as NodeName | undefined;
        if (candidate === undefined) throw new Error(`no synchronous standby: ${JSON.stringify(members)}`);
        timelineBefore = members.find((member) => member.name === leader)?.timeline ?? 0;
        const started = performance.now();
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

    const failed = history.filter((op) => op.status === 0 || op.status >= 500);
    console.log(
      `  failed requests during the switchover: ${failed.length}${failed
        .slice(0, 10)
        .map((op) => `\n    ${op.kind} ${op.status} ${op.error ?? ""}`.slice(0, 300))
        .join("")}`,
    );
    expect(failed.map((op) => `${op.kind} ${op.status}: ${op.error}`)).toEqual([]);
    const members = await topology.members();
    const leader = members.find((member) => member.role === "leader");
    expect(leader?.name, "the candidate leads").toBe(candidate);
    expect(leader?.timeline ?? 0, "a new timeline").toBeGreaterThan(timelineBefore);
  });
});
