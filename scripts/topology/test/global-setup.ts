import { ProcessRegistry } from "../processes.js";
import { startTopology } from "../topology.js";
import { globalSetupFor } from "./global-setup-for.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The directory of the running topology (see `attachTopology`). */
    topologyDir: string;
  }
}

/** The topology, started once for every test file and stopped by pid when the run ends. */
export default globalSetupFor({
  name: "topology",
  // TOPOLOGY_KEEP=1 keeps the logs and data directories to look at after a failure.
  keepVariable: "TOPOLOGY_KEEP",
  registry: (dir) => new ProcessRegistry(dir),
  start: (dir, say) => startTopology({ dir, say }),
  provide: (project, dir) => project.provide("topologyDir", dir),
});
