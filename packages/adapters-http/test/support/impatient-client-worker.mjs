// The worker's entry: Node 20 applies no `--import` loader to a worker, so it loads tsx itself.
import { tsImport } from "tsx/esm/api";

await tsImport("./impatient-client-worker.ts", import.meta.url);
