import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { ProcessRegistry } from "../processes.js";
import { startTopology } from "../topology.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The directory of the running topology (see `attachTopology`). */
    topologyDir: string;
  }
}

/**
 * Starts the topology once for every test file and stops every process it recorded, by pid,
 * when the run ends, however it ends (an exit guard covers a run that is interrupted).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), "posts-topology-"));
  const registry = new ProcessRegistry(dir);
  const guard = () => registry.killAllNow();
  process.on("exit", guard);
  const interrupted = () => {
    guard();
    process.exit(130);
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);

  const started = performance.now();
  const topology = await startTopology({ dir, say: (line) => console.log(`topology: ${line}`) });
  console.log(`topology: up in ${Math.round(performance.now() - started)} ms (${dir})`);
  project.provide("topologyDir", dir);

  return async () => {
    await topology.down();
    process.off("exit", guard);
    // TOPOLOGY_KEEP=1 keeps the logs and data directories to look at after a failure.
    if (process.env.TOPOLOGY_KEEP === "1") console.log(`topology: kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  };
}
