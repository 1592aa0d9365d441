import { Worker } from "node:worker_threads";
import type { PGlite, Results } from "@electric-sql/pglite";
import type { ErrorFields, WorkerReply, WorkerRequest, WorkerStart } from "./pglite-worker-messages.js";

/** Where an embedded database in a worker thread keeps its data, and who hears of its failure. */
export interface PgliteInWorkerOptions {
  readonly dataDir?: string;
  readonly loadDataDir?: Blob;
  /**
   * Told once when the worker thread fails or ends without being closed; every statement then
   * fails as "database unavailable" (SQLSTATE 08006).
   */
  readonly onFailure?: (error: Error) => void;
  /** The worker's entry file; `pglite-worker.js` unless a test gives one that fails on purpose. */
  readonly entry?: URL;
}

interface Pending {
  readonly resolve: (reply: Extract<WorkerReply, { kind: "result" }>) => void;
  readonly reject: (error: Error) => void;
}

// connection_failure: isDatabaseUnavailable answers 503 for class 08.
const CONNECTION_FAILURE = "08006";

/**
 * PGlite in a worker thread (`pglite-worker.js`), with the slice of PGlite's interface that
 * `kysely-pglite-dialect` and the notifications use: `query`, `listen`, `close`. PGlite runs
 * each statement synchronously in WebAssembly; here it runs on its own thread, so a statement
 * over a post of megabytes (its trigram index entries, its TOAST) never holds the event loop
 * that answers requests. The caller keeps statements in order (the dialect hands its one
 * connection to one caller at a time), as with PGlite in the same thread.
 *
 * Values cross by structured cloning: parameters and rows are copied once each way, which for
 * a string of megabytes is a copy of its bytes, cheaper on this thread than encoding it to
 * transfer a buffer. A failed or ended thread fails every pending and later statement as
 * "database unavailable", never leaves one waiting.
 */
export class PgliteInWorker implements Pick<PGlite, "query" | "close"> {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Map<number, (payload: string) => void>();
  readonly #onFailure: ((error: Error) => void) | undefined;
  #nextId = 1;
  #failure: Error | undefined;
  #closing: Promise<void> | undefined;

  private constructor(worker: Worker, onFailure: ((error: Error) => void) | undefined) {
    this.#worker = worker;
    this.#onFailure = onFailure;
  }

  /** Starts the worker thread and answers once PGlite is open in it; rejects if it cannot open. */
  static async start(options: PgliteInWorkerOptions = {}): Promise<PgliteInWorker> {
    const loadDataDir =
      options.loadDataDir === undefined ? undefined : await options.loadDataDir.arrayBuffer();
    const start: WorkerStart = { dataDir: options.dataDir, loadDataDir };
    const worker = new Worker(options.entry ?? new URL("./pglite-worker.js", import.meta.url), {
      workerData: start,
      transferList: loadDataDir === undefined ? [] : [loadDataDir],
      // The entry is plain JavaScript: no loader of the parent's (tsx, a test runner's) is needed.
      execArgv: [],
    });
    // One listener per event for the thread's whole life: until PGlite is open they settle
    // `opened`, afterwards they serve the database (removing listeners from a Worker would
    // also remove Node's own).
    let database: PgliteInWorker | undefined;
    let settle: { resolve: () => void; reject: (error: Error) => void } | undefined;
    const opened = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    worker.on("message", (reply: WorkerReply) => {
      if (database !== undefined) database.#receive(reply);
      else if (reply.kind === "ready") settle?.resolve();
      else if (reply.kind === "failed") settle?.reject(databaseError(reply.error));
    });
    worker.on("error", (error) => {
      if (database !== undefined) database.#fail(error);
      else settle?.reject(error);
    });
    worker.on("exit", (code) => {
      const error = new Error(`the embedded database's thread exited (${code})`);
      if (database !== undefined) database.#fail(error);
      else settle?.reject(error);
    });
    try {
      await opened;
    } catch (error) {
      await worker.terminate();
      throw error;
    }
    database = new PgliteInWorker(worker, options.onFailure);
    // Like PGlite in this thread, an idle database does not keep the process alive.
    worker.unref();
    return database;
  }

  /** Whether `close()` was called or the thread failed. */
  get closed(): boolean {
    return this.#closing !== undefined || this.#failure !== undefined;
  }

  /** Runs one statement with PGlite's extended protocol; rows parsed with the adapter's type parsers. */
  async query<T>(sql: string, params: unknown[] = []): Promise<Results<T>> {
    // Copying a parameter of megabytes to the thread takes tens of milliseconds or more: posted
    // in a turn of the event loop of its own, not after the request's parsing and validation in
    // the same turn, so that other requests are answered in between. The statement's order
    // holds: the dialect hands its one connection to the next statement once this one answers.
    if (params.some(isLarge)) await new Promise((resolve) => setImmediate(resolve));
    const { rows, affectedRows, fields } = await this.#request({ kind: "query", id: 0, sql, params });
    return { rows: rows as T[], ...(affectedRows === undefined ? {} : { affectedRows }), fields };
  }

  /** PGlite's `listen` in the worker: `listener` hears each payload notified on `channel` once it commits. */
  async listen(channel: string, listener: (payload: string) => void): Promise<() => Promise<void>> {
    // The listen request's own id names the subscription in the worker's notifications.
    const id = this.#nextId;
    this.#listeners.set(id, listener);
    try {
      await this.#request({ kind: "listen", id: 0, channel });
    } catch (error) {
      this.#listeners.delete(id);
      throw error;
    }
    return async () => {
      this.#listeners.delete(id);
      if (!this.closed) await this.#request({ kind: "unlisten", id: 0, subscription: id });
    };
  }

  /**
   * Closes PGlite in the worker, which writes what it holds to `dataDir`, then ends the thread.
   * Idempotent; after a failure of the thread, answers at once.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#failure === undefined) {
        try {
          await this.#request({ kind: "close", id: 0 }, true);
        } finally {
          await this.#worker.terminate();
        }
      }
    })();
    return this.#closing;
  }

  #request(request: WorkerRequest, closing = false): Promise<Extract<WorkerReply, { kind: "result" }>> {
    if (this.#failure !== undefined) return Promise.reject(unavailable(this.#failure));
    if (this.#closing !== undefined && !closing)
      return Promise.reject(unavailable(new Error("it is closed")));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      // Posted first: a value that cannot be cloned throws here and leaves nothing pending.
      this.#worker.postMessage({ ...request, id });
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(id, { resolve, reject });
    });
  }

  #receive(reply: WorkerReply): void {
    if (reply.kind === "notification") {
      this.#listeners.get(reply.subscription)?.(reply.payload);
      return;
    }
    if (reply.kind !== "result" && reply.kind !== "error") return;
    const pending = this.#pending.get(reply.id);
    if (pending === undefined) return;
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (reply.kind === "result") pending.resolve(reply);
    else pending.reject(databaseError(reply.error));
  }

  #fail(cause: Error): void {
    // The thread ending after close() is how closing ends.
    if (this.#failure !== undefined || (this.#closing !== undefined && this.#pending.size === 0)) return;
    this.#failure = cause;
    for (const pending of this.#pending.values()) pending.reject(unavailable(cause));
    this.#pending.clear();
    this.#onFailure?.(cause);
  }
}

/** A parameter of at least this many characters is posted in a turn of its own (see `query`). */
const LARGE_PARAMETER_CHARACTERS = 1024 * 1024;

/** A string of that many characters, or an array of strings that long together (batched creations). */
function isLarge(parameter: unknown): boolean {
  if (typeof parameter === "string") return parameter.length >= LARGE_PARAMETER_CHARACTERS;
  if (!Array.isArray(parameter)) return false;
  let characters = 0;
  for (const item of parameter) if (typeof item === "string") characters += item.length;
  return characters >= LARGE_PARAMETER_CHARACTERS;
}

/** The error PGlite threw in the worker, rebuilt here with its fields (`code`, `detail`…). */
function databaseError({ message, ...fields }: ErrorFields): Error {
  return Object.assign(new Error(message), fields);
}

function unavailable(cause: Error): Error {
  return Object.assign(new Error(`the embedded database is unavailable: ${cause.message}`, { cause }), {
    code: CONNECTION_FAILURE,
  });
}
