import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Bodies and answers of at least this many bytes are parsed and written on the JSON thread;
 * smaller ones on the event loop, where they take less than the trip to the thread and back.
 */
export const JSON_THREAD_MIN_BYTES = 1024 * 1024;

/** The code of the error a request gets when the JSON thread failed holding its body (503). */
export const BODY_LOST = "POSTS_BODY_LOST";

/** A body handed to the JSON thread, which failed before answering: the request cannot be read (503). */
export class BodyLost extends Error {
  readonly code = BODY_LOST;
  readonly statusCode = 503;

  constructor() {
    super("the JSON thread failed while it held the request's body");
  }
}

/**
 * What the thread answers a parse with: the value, or `ok: false` when the body is no JSON; `lost`
 * when the thread failed after the body was handed over (transferred, so no longer readable here).
 */
export type ParsedBody =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly lost?: true };

type Reply = { readonly id: number; readonly ok: boolean; readonly value?: unknown };

interface Pending {
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
}

// Fastify's own parser (secure-json-parse, the version Fastify resolves), so that the thread
// refuses exactly what the event loop's parser refuses.
const SECURE_JSON_PARSE = createRequire(createRequire(import.meta.url).resolve("fastify")).resolve(
  "secure-json-parse",
);

// CommonJS, evaluated: nothing to build or ship beside the package's compiled files.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const secureJson = require(workerData.secureJsonParse);
// As the event loop's parser: invalid UTF-8 throws, a leading BOM is dropped, __proto__ and
// constructor.prototype keys throw.
const utf8 = new TextDecoder("utf-8", { fatal: true });
const options = { protoAction: "error", constructorAction: "error" };
const encoder = new TextEncoder();
parentPort.on("message", ({ id, kind, payload }) => {
  if (kind === "parse") {
    let value;
    try {
      value = secureJson.parse(utf8.decode(payload), options);
    } catch {
      parentPort.postMessage({ id, ok: false });
      return;
    }
    parentPort.postMessage({ id, ok: true, value });
    return;
  }
  const bytes = encoder.encode(JSON.stringify(payload));
  parentPort.postMessage({ id, ok: true, value: bytes }, [bytes.buffer]);
});
`;

/**
 * A thread of its own for the JSON of posts of megabytes: `JSON.parse` of a 16 MiB body, with
 * its UTF-8 decoding, and `JSON.stringify` of such a post with its UTF-8 encoding, each hold
 * the event loop for a few hundred milliseconds on a busy machine, during which `/health` and
 * every other request wait (docs/operations.md#on-a-postgresql-server). What crosses is copied
 * as bytes (the body going over, the parsed value coming back, a post's object going over),
 * which is far cheaper than what the thread does with them; an answer's bytes come back
 * without a copy (their buffer is transferred).
 *
 * One thread, started on first use and not keeping the process alive while idle, rather than
 * a pool library such as piscina: bodies of megabytes are rare, one at a time is enough for
 * them, and two message kinds need no task machinery. Should the thread fail, the callers do
 * the work on the event loop instead (`undefined`), as they do for small JSON.
 */
export class JsonThread {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed = false;

  /**
   * Parses `body` (UTF-8 JSON); `undefined`, with `body` untouched, if the thread cannot take it.
   * A body that is the whole of its memory (as Fastify's reader makes a large one) is transferred
   * to the thread and is empty here afterwards: should the thread then fail, the answer is
   * `{ ok: false, lost: true }`. Any other body is copied and stays whole.
   *
   * Why transferred: copying 16 MiB into the message holds the event loop 10-20 ms, several
   * times that on a busy machine, while a transfer takes a fraction of a millisecond; the
   * thread failing mid-parse is rare enough that its request may be answered as a fault.
   */
  async parse(body: Buffer): Promise<ParsedBody | undefined> {
    const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
    const transfer = whole && body.buffer instanceof ArrayBuffer ? [body.buffer] : [];
    const reply = await this.#request("parse", body, transfer);
    if (reply === undefined) {
      return transfer.length > 0 && body.byteLength === 0 ? { ok: false, lost: true } : undefined;
    }
    return reply.ok ? { ok: true, value: reply.value } : { ok: false };
  }

  /** `JSON.stringify(value)` in UTF-8; `undefined` if the thread cannot. */
  async stringify(value: unknown): Promise<Buffer | undefined> {
    const reply = await this.#request("stringify", value, []);
    if (reply === undefined || !reply.ok) return undefined;
    const bytes = (reply as { value: Uint8Array }).value;
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Ends the thread; later calls answer `undefined`. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }

  async #request(kind: string, payload: unknown, transfer: ArrayBuffer[]): Promise<Reply | undefined> {
    const worker = this.#thread();
    if (worker === undefined) return undefined;
    const id = this.#nextId++;
    try {
      return await new Promise<Reply>((resolve, reject) => {
        worker.postMessage({ id, kind, payload }, transfer);
        if (this.#pending.size === 0) worker.ref();
        this.#pending.set(id, { resolve, reject });
      });
    } catch {
      return undefined;
    }
  }

  #thread(): Worker | undefined {
    if (this.#closed) return undefined;
    if (this.#worker !== undefined) return this.#worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { secureJsonParse: SECURE_JSON_PARSE },
      execArgv: [],
    });
    worker.unref();
    worker.on("message", (reply: Reply) => {
      const pending = this.#pending.get(reply.id);
      if (pending === undefined) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      pending.resolve(reply);
    });
    const fail = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`the JSON thread exited (${code})`)));
    this.#worker = worker;
    return worker;
  }
}
