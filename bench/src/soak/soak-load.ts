/**
 * The soak's client: a process of its own (so that its CPU and memory never count as the
 * service's), running a closed-loop mix of reads and writes against the service for a fixed
 * time and writing one JSON line per request to a file. Started by soak.ts with its settings in
 * the SOAK_LOAD environment variable (a JSON {@link LoadSettings}).
 */

import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** One client of the mix: a user, its token, and the posts it may patch. */
export interface LoadWorker {
  readonly token: string;
  readonly postIds: readonly number[];
}

/** What soak.ts hands to this process. */
export interface LoadSettings {
  readonly baseUrl: string;
  readonly durationMs: number;
  readonly workers: readonly LoadWorker[];
  /** Where the request records go, one JSON line each. */
  readonly outFile: string;
  /** Give up on one request after this long; the record then has status -1. */
  readonly requestTimeoutMs: number;
  /** Each client waits this long after each answer: 0 drives the service as hard as it answers. */
  readonly thinkMs: number;
}

/**
 * Which kind of request a record is: "search" is a page with `q`; "retry" is a POST sent again
 * with the Idempotency-Key and body of the "create" just before it, as a client does when it
 * cannot tell whether its first attempt arrived.
 */
export type Operation = "list" | "search" | "read" | "create" | "retry" | "patch";

/** One request as the client saw it. */
export interface RequestRecord {
  readonly op: Operation;
  /** Epoch milliseconds when the request was sent and when its answer (or failure) came. */
  readonly sentAt: number;
  readonly doneAt: number;
  /** HTTP status; 0 for a network error (no answer at all), -1 for a client timeout. */
  readonly status: number;
  /** The post the request was about; for a 201, the id its Location names. */
  readonly postId?: number;
  /** For a PATCH answered 200: the post's updatedAt in the answer (UTC, no zone). */
  readonly updatedAt?: string;
  /** For a create with an Idempotency-Key and its retry: the key. */
  readonly key?: string;
}

// The mix: mostly reads, as a blog is used, with a steady stream of writes of both kinds. One
// create in four carries an Idempotency-Key and is sent twice.
const MIX: readonly (readonly [Operation, number])[] = [
  ["list", 0.35],
  ["search", 0.1],
  ["read", 0.2],
  ["create", 0.2],
  ["patch", 0.15],
];
/** Words the titles are made of and searches look for: few, so that searches find posts. */
const WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "iris", "juniper"];
/** Share of searches for a term no post holds: pages of their own, never read twice. */
const UNIQUE_SEARCH_SHARE = 0.2;

function pick(): Operation {
  let draw = Math.random();
  for (const [op, weight] of MIX) {
    draw -= weight;
    if (draw < 0) return op;
  }
  return "list";
}

function randomOf<T>(values: readonly T[]): T | undefined {
  return values[Math.floor(Math.random() * values.length)];
}

async function runWorker(
  settings: LoadSettings,
  worker: LoadWorker,
  index: number,
  record: (entry: RequestRecord) => void,
  deadline: number,
): Promise<void> {
  const own = [...worker.postIds];
  const known = [...worker.postIds];
  let sequence = 0;
  while (Date.now() < deadline) {
    const op = pick();
    const postId = op === "patch" ? randomOf(own) : op === "read" ? randomOf(known) : undefined;
    let path = "/api/v1/posts?size=20";
    let init: RequestInit = {};
    const json = (method: string, body: unknown): RequestInit => ({
      method,
      headers: { "content-type": "application/json", "x-auth-token": worker.token },
      body: JSON.stringify(body),
    });
    if (op === "read") path = `/api/v1/posts/${postId}`;
    if (op === "search") {
      const term = Math.random() < UNIQUE_SEARCH_SHARE ? `none${index}x${sequence}` : randomOf(WORDS);
      path = `/api/v1/posts?size=20&q=${term}`;
    }
    const keyed = op === "create" && sequence % 4 === 0;
    const key = keyed ? `soak-${index}-${sequence}-${Date.now()}` : undefined;
    if (op === "create") {
      path = "/api/v1/posts";
      init = json("POST", {
        title: `soak ${randomOf(WORDS)} ${index}-${sequence}`,
        content: `written by worker ${index}`,
      });
      if (key !== undefined)
        init.headers = { ...(init.headers as Record<string, string>), "idempotency-key": key };
    }
    if (op === "patch") {
      path = `/api/v1/posts/${postId}`;
      init = json(
        "PATCH",
        sequence % 2 === 0 ? { title: `patched ${index}-${sequence}` } : { content: `c${sequence}` },
      );
    }
    sequence++;

    const sentAt = Date.now();
    let status: number;
    let id = postId;
    let updatedAt: string | undefined;
    try {
      const response = await fetch(`${settings.baseUrl}${path}`, {
        ...init,
        signal: AbortSignal.timeout(settings.requestTimeoutMs),
      });
      status = response.status;
      const body = await response.text();
      if (op === "create" && status === 201) {
        id = Number(/\/(\d+)$/.exec(response.headers.get("location") ?? "")?.[1]);
        own.push(id);
        known.push(id);
      }
      if (op === "patch" && status === 200) updatedAt = (JSON.parse(body) as { updatedAt: string }).updatedAt;
    } catch (error) {
      status = (error as Error).name === "TimeoutError" ? -1 : 0;
    }
    record({
      op,
      sentAt,
      doneAt: Date.now(),
      status,
      ...(id === undefined ? {} : { postId: id }),
      ...(updatedAt === undefined ? {} : { updatedAt }),
      ...(key === undefined ? {} : { key }),
    });
    if (key !== undefined) record(await retry(settings, path, init, key, id));
    if (settings.thinkMs > 0) await sleep(settings.thinkMs);
  }
}

/** The same keyed POST again: it must answer the post the first one made (201, Idempotent-Replayed). */
async function retry(
  settings: LoadSettings,
  path: string,
  init: RequestInit,
  key: string,
  firstId: number | undefined,
): Promise<RequestRecord> {
  const sentAt = Date.now();
  let status: number;
  let id = firstId;
  try {
    const response = await fetch(`${settings.baseUrl}${path}`, {
      ...init,
      signal: AbortSignal.timeout(settings.requestTimeoutMs),
    });
    status = response.status;
    await response.arrayBuffer();
    if (status === 201) id = Number(/\/(\d+)$/.exec(response.headers.get("location") ?? "")?.[1]);
  } catch (error) {
    status = (error as Error).name === "TimeoutError" ? -1 : 0;
  }
  return {
    op: "retry",
    sentAt,
    doneAt: Date.now(),
    status,
    key,
    ...(id === undefined ? {} : { postId: id }),
  };
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.SOAK_LOAD ?? "") as LoadSettings;
  const out = createWriteStream(settings.outFile);
  let requests = 0;
  const record = (entry: RequestRecord) => {
    requests++;
    out.write(`${JSON.stringify(entry)}\n`);
  };
  const startedAt = Date.now();
  const deadline = startedAt + settings.durationMs;
  await Promise.all(
    settings.workers.map((worker, index) => runWorker(settings, worker, index, record, deadline)),
  );
  out.end();
  await once(out, "finish");
  process.stdout.write(`${JSON.stringify({ startedAt, endedAt: Date.now(), requests })}\n`);
}

await main();
