import { Worker } from "node:worker_threads";

/** One HTTP answer read off a raw socket: status, lower-cased headers and body. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Bytes the whole answer took on the wire. */
  readonly size: number;
}

/** A request whose body is sent the way impatient clients send it (no `Expect: 100-continue`). */
export interface ImpatientRequest {
  readonly method: string;
  readonly path: string;
  /** Extra request headers; Host and the body's framing are added. */
  readonly headers: Readonly<Record<string, string>>;
  /** Size of the JSON body (at least 30 bytes). */
  readonly bodyBytes: number;
  /** `Transfer-Encoding: chunked` instead of `Content-Length`. */
  readonly chunked: boolean;
  /**
   * `whole`: head and body handed to the socket in one write. `chunks`: 256 KiB per write, each
   * once the previous one has left, and none once any byte of the answer has arrived.
   */
  readonly writes: "whole" | "chunks";
  /** Sends the head but its last CRLF, and the rest this many milliseconds later. */
  readonly holdHeadMs?: number;
}

/** What the test thread asks the worker. */
export interface ClientMessage {
  readonly id: number;
  readonly port: number;
  readonly request: ImpatientRequest;
}

/** What the worker answers: the answer, or why there was none. */
export type WorkerMessage =
  | { readonly id: number; readonly answer: RawAnswer }
  | { readonly id: number; readonly error: string };

/** A client on a thread (and event loop) of its own. */
export interface ImpatientClient {
  /**
   * Sends `request` on a new connection and answers the first complete HTTP answer (head and
   * `Content-Length` bytes of body), then destroys the connection. Rejects, with what had been
   * received, when the connection fails or closes before the answer is complete: a reset is a
   * failure, whatever the server meant to say.
   */
  send(port: number, request: ImpatientRequest): Promise<RawAnswer>;
  close(): Promise<void>;
}

/** Starts the client's worker thread (TypeScript through tsx, as the app's process tests run). */
export function startImpatientClient(): ImpatientClient {
  const worker = new Worker(new URL("./impatient-client-worker.mjs", import.meta.url));
  const waiting = new Map<number, { resolve(answer: RawAnswer): void; reject(error: Error): void }>();
  let nextId = 0;
  worker.on("message", (message: WorkerMessage) => {
    const waiter = waiting.get(message.id);
    waiting.delete(message.id);
    if ("answer" in message) waiter?.resolve(message.answer);
    else waiter?.reject(new Error(message.error));
  });
  worker.on("error", (error) => {
    for (const waiter of waiting.values()) waiter.reject(error);
    waiting.clear();
  });
  return {
    send(port, request) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        worker.postMessage({ id, port, request } satisfies ClientMessage);
      });
    },
    async close() {
      await worker.terminate();
    },
  };
}

/** A JSON object of exactly `bytes` bytes (at least 30). */
export function jsonBody(bytes: number): Buffer {
  const prefix = '{"title":"t","content":"';
  const suffix = '"}';
  return Buffer.from(prefix + "x".repeat(bytes - prefix.length - suffix.length) + suffix);
}

/** The answer at the start of `data` once all of it has arrived (its Content-Length is required). */
export function completeAnswer(data: Buffer): RawAnswer | undefined {
  const end = data.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine = "", ...lines] = data.subarray(0, end).toString("latin1").split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"]);
  if (!Number.isInteger(length)) throw new Error(`answer without Content-Length: ${statusLine}`);
  if (data.length < end + 4 + length) return undefined;
  return {
    status: Number(statusLine.split(" ")[1]),
    headers,
    body: data.subarray(end + 4, end + 4 + length).toString(),
    size: end + 4 + length,
  };
}
