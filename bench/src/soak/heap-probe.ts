/**
 * The soak's view into the V8 heap of a process it started with `--inspect=127.0.0.1:0`: full
 * collections forced through the inspector protocol (`HeapProfiler.collectGarbage`), the heap
 * left after them (`Runtime.getHeapUsage`), and heap snapshots streamed to a file. The product
 * has no endpoint for any of this: the inspector is a flag of the soak's own command line,
 * listening on loopback only, on a port the kernel picks.
 */
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import type { Readable } from "node:stream";
import CDP from "chrome-remote-interface";

/** The line Node writes to stderr once its inspector listens. */
const LISTENING = /Debugger listening on (ws:\/\/\S+)/;

/**
 * The inspector's WebSocket URL, read from the stderr of a process started with `--inspect`;
 * every chunk is also handed to `echo` (the process's log). Rejects when the process's stderr
 * ends or `timeoutMs` passes first.
 */
export function inspectorUrl(
  stderr: Readable,
  echo: (chunk: Buffer) => void,
  timeoutMs = 30_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = "";
    let found = false;
    const timer = setTimeout(() => reject(new Error("the inspector did not start in time")), timeoutMs);
    stderr.on("data", (chunk: Buffer) => {
      echo(chunk);
      if (found) return;
      seen += chunk.toString("utf8");
      const match = LISTENING.exec(seen);
      if (match?.[1] === undefined) return;
      found = true;
      clearTimeout(timer);
      resolve(match[1]);
    });
    stderr.once("end", () => {
      clearTimeout(timer);
      if (!found) reject(new Error("the process ended before its inspector listened"));
    });
  });
}

/** An inspector session on one process. */
export class HeapProbe {
  readonly #client: CDP.Client;
  /** Where the chunks of the snapshot being taken go. */
  #sink: ((chunk: string) => void) | undefined;

  private constructor(client: CDP.Client) {
    this.#client = client;
    client.on("HeapProfiler.addHeapSnapshotChunk", ({ chunk }) => this.#sink?.(chunk));
  }

  /** Connects to the inspector at `url` (as {@link inspectorUrl} answers it). */
  static async connect(url: string): Promise<HeapProbe> {
    const client = await CDP({ target: url, local: true });
    await client.HeapProfiler.enable();
    return new HeapProbe(client);
  }

  /**
   * Bytes of the V8 heap in use after full collections: what the process holds once garbage is
   * gone, and so what a leak raises. Two collections, as the first may leave objects whose
   * finalizers or weak callbacks only release them to the second.
   */
  async collectedHeapBytes(): Promise<number> {
    await this.#client.HeapProfiler.collectGarbage();
    await this.#client.HeapProfiler.collectGarbage();
    const usage = await this.#client.Runtime.getHeapUsage();
    return usage.usedSize;
  }

  /**
   * Writes a heap snapshot (the `.heapsnapshot` JSON that Chrome's DevTools reads) to `file`.
   * Taking one collects garbage first and stops the process for as long as it takes: seconds for
   * a heap of tens of MiB.
   */
  async writeSnapshot(file: string): Promise<void> {
    const out = createWriteStream(file);
    this.#sink = (chunk) => out.write(chunk);
    try {
      await this.#client.HeapProfiler.takeHeapSnapshot({ reportProgress: false });
    } finally {
      this.#sink = undefined;
      out.end();
      await once(out, "finish");
    }
  }

  /** Closes the session; the process runs on. */
  async close(): Promise<void> {
    await this.#client.close();
  }
}
