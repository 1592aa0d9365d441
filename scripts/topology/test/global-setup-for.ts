import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

/** What {@link globalSetupFor} starts, and how it names it. */
export interface TopologySetup {
  /** `topology` or `failover`: the temporary directory's prefix and the log lines'. */
  readonly name: string;
  /** The environment variable that, set to `1`, keeps the directory after the run. */
  readonly keepVariable: string;
  /** The record of processes started in `dir`, killed at once should the run be interrupted. */
  registry(dir: string): { killAllNow(): void };
  /** Starts the topology in `dir`. */
  start(dir: string, say: (line: string) => void): Promise<{ down(): Promise<void> }>;
  /** Hands `dir` to the test files (`project.provide`, under the topology's own key). */
  provide(project: TestProject, dir: string): void;
}

/**
 * A vitest global setup that starts a topology once for every test file and stops every process
 * it recorded, by pid, when the run ends, however it ends (an exit guard covers a run that is
 * interrupted). The tests may kill and restart its processes; `down` finds the ones they started
 * in the same record. One for the asynchronous topology and the failover one alike.
 */
export function globalSetupFor(setup: TopologySetup): (project: TestProject) => Promise<() => Promise<void>> {
  return async (project) => {
    const dir = mkdtempSync(join(tmpdir(), `posts-${setup.name}-`));
    const registry = setup.registry(dir);
    const guard = () => registry.killAllNow();
    process.on("exit", guard);
    const interrupted = () => {
      guard();
      process.exit(130);
    };
    process.once("SIGINT", interrupted);
    process.once("SIGTERM", interrupted);

    const started = performance.now();
    const topology = await setup.start(dir, (line) => console.log(`${setup.name}: ${line}`));
    console.log(`${setup.name}: up in ${Math.round(performance.now() - started)} ms (${dir})`);
    setup.provide(project, dir);

    return async () => {
      await topology.down();
      process.off("exit", guard);
      // Kept, the logs and data directories can be looked at after a failure.
      if (process.env[setup.keepVariable] === "1") console.log(`${setup.name}: kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    };
  };
}
