// A worker entry that opens like pglite-worker.js and then dies on its first request, as a
// thread that crashed mid-statement would.
import { parentPort } from "node:worker_threads";

parentPort?.on("message", () => {
  throw new Error("the thread crashed");
});
parentPort?.postMessage({ kind: "ready" });
