import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { FailoverTopology } from "../failover.js";
import { stopPid } from "../processes.js";
import { ROOT } from "../topology.js";

const NAME = "jetstream-consumer";
const EXAMPLE = join(ROOT, "examples", NAME);

/**
 * `examples/jetstream-consumer` run on the failover topology's NATS cluster as a user runs it:
 * a process of its own (recorded by pid with the topology's, so `down` stops it too), in a
 * directory of its own, where its state file and log stay across restarts. It runs from its
 * TypeScript source through tsx, with the workspace's copies of its NATS packages linked into
 * that directory's node_modules (the packed-package check builds and installs it with npm).
 */
export class ExampleConsumer {
  readonly dir: string;
  readonly #topology: FailoverTopology;

  constructor(topology: FailoverTopology) {
    this.#topology = topology;
    this.dir = join(topology.dir, NAME);
  }

  /** Its state file: one JSON line per event applied. */
  get stateFile(): string {
    return join(this.dir, "applied-events.jsonl");
  }

  /** Starts it (after copying it into its directory, the first time); answers its pid. */
  start(): number {
    if (!existsSync(this.dir)) {
      mkdirSync(join(this.dir, "node_modules"), { recursive: true });
      // Its package.json too: "type": "module" is what lets main.ts await at its top level.
      for (const file of ["main.ts", "package.json"]) copyFileSync(join(EXAMPLE, file), join(this.dir, file));
      // The scope's directory of the topology's own dependencies, the same versions the example names.
      symlinkSync(
        join(ROOT, "scripts/topology/node_modules/@nats-io"),
        join(this.dir, "node_modules/@nats-io"),
      );
    }
    return this.#topology.processes.start({
      name: NAME,
      command: process.execPath,
      args: ["--import", pathToFileURL(join(ROOT, "node_modules/tsx/dist/loader.mjs")).href, "main.ts"],
      cwd: this.dir,
      env: { NATS_URL: this.#topology.natsUrls, CONSUMER: "nemesis-example", STATE_FILE: this.stateFile },
    });
  }

  /** Kills it (SIGKILL, as a crash, by its pid), waits until it is gone, and starts it again. */
  async crashAndRestart(): Promise<void> {
    const pid = this.#topology.processes.pidOf(NAME);
    if (pid !== undefined) await stopPid(pid, "SIGKILL", 5_000);
    this.start();
  }

  /** Stops it by its pid (SIGTERM: it closes its subscription and drains). */
  stop(): Promise<void> {
    return this.#topology.processes.stop(NAME, { timeoutMs: 10_000 });
  }

  /** The ids of the events it applied, in the order it applied them. */
  applied(): string[] {
    if (!existsSync(this.stateFile)) return [];
    return readFileSync(this.stateFile, "utf8")
      .split("\n")
      .filter((line) => line.endsWith("}"))
      .map((line) => (JSON.parse(line) as { id: string }).id);
  }

  /** How many events came to it again and were only acknowledged, from its log. */
  redeliveries(): number {
    const log = join(this.#topology.dir, `${NAME}.log`);
    return existsSync(log) ? (readFileSync(log, "utf8").match(/ again \(/g) ?? []).length : 0;
  }
}
