import { FailoverTopology, startFailoverTopology } from "../failover.js";
import { globalSetupFor } from "../test/global-setup-for.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The directory of the running failover topology (see `FailoverTopology`). */
    failoverDir: string;
  }
}

/**
 * The failover topology, started once for every test file and stopped by pid when the run ends.
 * The tests kill and restart its processes; `down` finds the ones they started in the same record.
 */
export default globalSetupFor({
  name: "failover",
  // FAILOVER_KEEP=1 keeps the logs and data directories to look at after a failure.
  keepVariable: "FAILOVER_KEEP",
  // Its exit guard kills every recorded process and removes the nodes' network.
  registry: (dir) => new FailoverTopology(dir),
  start: (dir, say) => startFailoverTopology({ dir, say }),
  provide: (project, dir) => project.provide("failoverDir", dir),
});
