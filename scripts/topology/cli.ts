import { existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { measure, primaryShare, table } from "./measure.js";
import { attachTopology, PORTS, startTopology } from "./topology.js";

/**
 * `pnpm topology up|down|status|restart N|measure`: the topology on this machine, in
 * TOPOLOGY_DIR (default `<tmp>/posts-topology`). `up` starts it and returns, leaving it running
 * (in place of one that `down` stopped there);
 * `down` stops every process it recorded, by pid; `restart N` restarts instance N without failing
 * a request; `measure` prints what standby reads and PgBouncer cost (MEASURE_SECONDS,
 * MEASURE_ROUNDS, MEASURE_CONNECTIONS, MEASURE_IDLE_SECONDS).
 */
async function main(command: string | undefined, argument: string | undefined): Promise<number> {
  const dir = process.env.TOPOLOGY_DIR ?? join(tmpdir(), "posts-topology");
  const say = (line: string) => process.stdout.write(`topology: ${line}\n`);
  switch (command) {
    case "up": {
      // A topology stopped by `down` left its clusters and logs: started anew in their place.
      // A directory with processes recorded, or that no topology made, is left to the refusal
      // of startTopology.
      const recorded = attachTopology(dir).processes;
      if (existsSync(join(dir, "processes.json")) && Object.keys(recorded.entries()).length === 0) {
        rmSync(dir, { recursive: true, force: true });
      }
      const topology = await startTopology({ dir, say });
      say(`up in ${dir}`);
      say(`HAProxy           ${topology.url}`);
      for (const [index] of PORTS.instances.entries())
        say(`instance ${index + 1}        ${topology.instanceUrl(index)}`);
      say(`PgBouncer         ${topology.bouncerUrl("primary")} (and _standby1, _standby2)`);
      say(`primary           ${topology.directUrl("primary")}`);
      say(`standbys          ${topology.directUrl("standby1")} ${topology.directUrl("standby2")}`);
      say(`JWT_SECRET        in ${join(dir, "jwt-secret")}`);
      say("stop it with: pnpm topology down");
      return 0;
    }
    case "down": {
      await attachTopology(dir).down();
      say(`stopped every process recorded in ${dir}`);
      return 0;
    }
    case "status": {
      const entries = attachTopology(dir).processes.entries();
      for (const [name, { pid }] of Object.entries(entries)) say(`${name.padEnd(10)} pid ${pid}`);
      if (Object.keys(entries).length === 0) say("nothing running");
      return 0;
    }
    case "measure": {
      const seconds = Number(process.env.MEASURE_SECONDS ?? 8);
      const rounds = Number(process.env.MEASURE_ROUNDS ?? 3);
      const connections = Number(process.env.MEASURE_CONNECTIONS ?? 32);
      const idleSeconds = Number(process.env.MEASURE_IDLE_SECONDS ?? 5);
      const results = await measure(attachTopology(dir), { seconds, rounds, connections, idleSeconds, say });
      process.stdout.write(`\n${table(results)}\n\n${primaryShare(results)}\n`);
      return 0;
    }
    case "restart": {
      const index = Number(argument) - 1;
      if (!(index >= 0 && index < PORTS.instances.length)) break;
      await attachTopology(dir).restartInstance(index);
      say(`instance ${index + 1} restarted`);
      return 0;
    }
  }
  console.error(
    "usage: pnpm topology up | down | status | restart 1|2|3   (TOPOLOGY_DIR, default <tmp>/posts-topology)",
  );
  return 2;
}

main(process.argv[2], process.argv[3]).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`topology: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
