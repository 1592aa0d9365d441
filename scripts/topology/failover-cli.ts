import { existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FailoverTopology, NODES, nodeAddress, startFailoverTopology } from "./failover.js";
import { measureWrites, writeTable } from "./failover-measure.js";
import { isAlive } from "./processes.js";

/**
 * `pnpm failover up|down|status`: the failover topology on this machine, in FAILOVER_DIR
 * (default `<tmp>/posts-failover`). `up` starts it and returns, leaving it running (in place of
 * one that `down` stopped there); `down` stops every process it recorded, by pid; `status` says
 * which recorded processes are alive and what Patroni says of each node; `measure` prints what
 * the synchronous standby costs writes against asynchronous replication on the running topology
 * (MEASURE_SECONDS, MEASURE_ROUNDS, MEASURE_CONNECTIONS; defaults 10, 3, 16).
 */
async function main(command: string | undefined): Promise<number> {
  const dir = process.env.FAILOVER_DIR ?? join(tmpdir(), "posts-failover");
  const say = (line: string) => process.stdout.write(`failover: ${line}\n`);
  switch (command) {
    case "up": {
      // A topology stopped by `down` left its data and logs: started anew in their place. A
      // directory with processes recorded, or that no topology made, is left to the refusal of
      // startFailoverTopology.
      const recorded = new FailoverTopology(dir).processes;
      if (existsSync(join(dir, "processes.json")) && Object.keys(recorded.entries()).length === 0) {
        rmSync(dir, { recursive: true, force: true });
      }
      const topology = await startFailoverTopology({ dir, say });
      say(`up in ${dir}`);
      say(`service (HAProxy)   ${topology.url}`);
      say(`write endpoint      ${topology.writeUrl()}`);
      say(`read endpoint       ${topology.readUrl()}`);
      for (const node of NODES) say(`${node} Patroni         ${topology.patroniUrl(node)}`);
      say(`NATS cluster        ${topology.natsUrls}`);
      say(`JWT_SECRET          in ${join(dir, "jwt-secret")}`);
      say("stop it with: pnpm failover down");
      return 0;
    }
    case "down": {
      await new FailoverTopology(dir).down();
      say(`stopped every process recorded in ${dir}`);
      return 0;
    }
    case "measure": {
      const number = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
      const results = await measureWrites(new FailoverTopology(dir), {
        seconds: number("MEASURE_SECONDS", 10),
        rounds: number("MEASURE_ROUNDS", 3),
        connections: number("MEASURE_CONNECTIONS", 16),
        say,
      });
      process.stdout.write(`${writeTable(results)}\n`);
      return 0;
    }
    case "status": {
      const topology = new FailoverTopology(dir);
      const entries = topology.processes.entries();
      for (const [name, { pid }] of Object.entries(entries))
        say(`${name.padEnd(16)} pid ${pid}${isAlive(pid) ? "" : " (gone)"}`);
      if (Object.keys(entries).length === 0) {
        say("nothing running");
        return 0;
      }
      for (const node of NODES) {
        const up = topology.linkUp(node);
        say(
          `${node} ${nodeAddress(node)} link ${up === undefined ? "absent" : up ? "up" : "down (partitioned)"}`,
        );
      }
      for (const member of await topology.members().catch(() => []))
        say(`${member.name} ${member.role} ${member.state} timeline ${member.timeline ?? "?"}`);
      return 0;
    }
  }
  console.error(
    "usage: pnpm failover up | down | status | measure   (FAILOVER_DIR, default <tmp>/posts-failover)",
  );
  return 2;
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`failover: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
