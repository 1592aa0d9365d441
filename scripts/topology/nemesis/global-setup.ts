import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { FailoverTopology, startFailoverTopology } from "../failover.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The directory of the running failover topology (see `FailoverTopology`). */
    failoverDir: string;
  }
}

/**
 * Starts the failover topology once for every test file and stops every process it recorded,
 * by pid, when the run ends, however it ends (an exit guard covers a run that is interrupted).
 * The tests kill and restart its processes; `down` finds the ones they started in the same record.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), "posts-failover-"));
  const registry = new FailoverTopology(dir).processes;
  const guard = () => registry.killAllNow();
  process.on("exit", guard);
  const interrupted = () => {
    guard();
    process.exit(130);
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);

  const started = performance.now();
  const topology = await startFailoverTopology({ dir, say: (line) => console.log(`failover: ${line}`) });
  console.log(`failover: up in ${Math.round(performance.now() - started)} ms (${dir})`);
  project.provide("failoverDir", dir);

  return async () => {
    await topology.down();
    process.off("exit", guard);
    // FAILOVER_KEEP=1 keeps the logs and data directories to look at after a failure.
    if (process.env.FAILOVER_KEEP === "1") console.log(`failover: kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  };
}
