// @ts-check
/**
 * The worker thread that owns the embedded database: PGlite runs every statement synchronously
 * in WebAssembly, so on the thread that answers requests one large statement would stall them
 * all. {@link PgliteInWorker} starts this file and sends it one message per statement.
 *
 * JavaScript rather than TypeScript: Node runs a worker's entry file as it is, from `src/` in
 * the tests and from `dist/` in production, so this file and what it imports of ours
 * (`type-parsers.js`) need no build step. `checkJs` type-checks it.
 *
 * Messages in: `query` (id, sql, params), `listen` (id, channel), `unlisten` (id), `close` (id).
 * Messages out: `ready` or `failed` once at start, then `result` or `error` per id, and
 * `notification` (subscription id, payload) whenever a listened channel is notified.
 */
import { parentPort, workerData } from "node:worker_threads";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { TYPE_PARSERS } from "./type-parsers.js";

/** @typedef {import("./pglite-worker-messages.js").WorkerRequest} WorkerRequest */
/** @typedef {import("./pglite-worker-messages.js").WorkerReply} WorkerReply */
/** @typedef {import("./pglite-worker-messages.js").WorkerStart} WorkerStart */

const port = parentPort;
if (port === null) throw new Error("pglite-worker.js runs as a worker thread only");

/** @type {WorkerStart} */
const start = workerData;

/** @param {WorkerReply} reply */
function send(reply) {
  port?.postMessage(reply);
}

/**
 * What crosses back of an error: its message and every field PostgreSQL gave it (`code` is the
 * SQLSTATE the adapter decides by), as plain values; an `Error`'s own fields do not survive
 * structured cloning.
 * @param {unknown} error
 * @returns {import("./pglite-worker-messages.js").ErrorFields}
 */
function errorFields(error) {
  if (!(error instanceof Error)) return { message: String(error) };
  /** @type {Record<string, string | number | boolean>} */
  const fields = {};
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean")
      fields[key] = value;
  }
  return { ...fields, message: error.message, name: error.name };
}

/** @type {PGlite} */
let pglite;
try {
  pglite = await PGlite.create({
    ...(start.dataDir === undefined ? {} : { dataDir: start.dataDir }),
    ...(start.loadDataDir === undefined ? {} : { loadDataDir: new Blob([start.loadDataDir]) }),
    parsers: { ...TYPE_PARSERS },
    // The schema's search indexes need it (migration 0004); PGlite loads only what it is given.
    extensions: { pg_trgm },
  });
} catch (error) {
  send({ kind: "failed", error: errorFields(error) });
  port.close();
  throw error;
}

/** @type {Map<number, () => Promise<void>>} */
const subscriptions = new Map();

port.on("message", async (/** @type {WorkerRequest} */ request) => {
  try {
    switch (request.kind) {
      case "query": {
        const { rows, affectedRows, fields } = await pglite.query(request.sql, request.params);
        send({ kind: "result", id: request.id, rows, affectedRows, fields });
        return;
      }
      case "listen": {
        const id = request.id;
        const unlisten = await pglite.listen(request.channel, (payload) =>
          send({ kind: "notification", subscription: id, payload }),
        );
        subscriptions.set(id, unlisten);
        send({ kind: "result", id, rows: [], affectedRows: 0, fields: [] });
        return;
      }
      case "unlisten": {
        const unlisten = subscriptions.get(request.subscription);
        subscriptions.delete(request.subscription);
        if (unlisten !== undefined && !pglite.closed) await unlisten();
        send({ kind: "result", id: request.id, rows: [], affectedRows: 0, fields: [] });
        return;
      }
      case "close": {
        // Writes what PGlite still holds to dataDir before the thread ends.
        if (!pglite.closed) await pglite.close();
        send({ kind: "result", id: request.id, rows: [], affectedRows: 0, fields: [] });
        port.close();
        return;
      }
    }
  } catch (error) {
    send({ kind: "error", id: request.id, error: errorFields(error) });
  }
});

send({ kind: "ready" });
